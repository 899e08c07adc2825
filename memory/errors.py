"""Memory-specific domain errors (part of the one ``AtlasError`` family)."""

from atlas_platform.exceptions import AtlasError


class MemoryStoreUnavailable(AtlasError):
    """The memory store failed or could not be reached; nothing was half-written."""

    status_code = 503
    code = "memory_store_unavailable"
