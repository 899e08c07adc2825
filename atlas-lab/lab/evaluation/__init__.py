"""Recall quality evaluation: corpus, loading, metrics, overlap and the run (``eval_recall``)."""
