"""The memory engine: one backend-neutral contract (``base.MemoryBackend``), two backends
(``elasticsearch.ElasticsearchBackend``, ``embedded.EmbeddedBackend``)."""
