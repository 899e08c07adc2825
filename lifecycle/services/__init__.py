"""A deployment's backup (``backup``) and its erasure-aware restore (``restore``)."""
