"""The embedded backend (moved from ``memory/engine/embedded.py``)."""

from memory.engine.embedded.backend import EmbeddedBackend

__all__ = ["EmbeddedBackend"]
