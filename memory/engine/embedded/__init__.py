"""The embedded backend (``backend.EmbeddedBackend``): SQLite (WAL) + FTS5 + numpy vectors."""

from memory.engine.embedded.backend import EmbeddedBackend

__all__ = ["EmbeddedBackend"]
