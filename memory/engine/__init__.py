"""The memory engine: one backend-neutral contract (``base.MemoryBackend``), one package per
backend (``elasticsearch``, ``embedded``), and ``registry.get_backend``. Only memory's services
and selectors import it; other apps use those."""
