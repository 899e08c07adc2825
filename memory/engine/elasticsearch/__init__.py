"""The Elasticsearch backend (moved from ``memory/engine/elasticsearch.py``)."""

from memory.engine.elasticsearch.backend import ElasticsearchBackend, _load_template

__all__ = ["ElasticsearchBackend", "_load_template"]
