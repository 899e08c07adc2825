"""The Elasticsearch backend (``backend.ElasticsearchBackend``), split by job into modules."""

from memory.engine.elasticsearch.backend import ElasticsearchBackend
from memory.engine.elasticsearch.client import ScopedKeys

__all__ = ["ElasticsearchBackend", "ScopedKeys"]
