"""Memory-specific domain errors (part of the one ``AtlasError`` family)."""

from atlas_platform.exceptions import AtlasError, Unavailable


class MemoryStoreUnavailable(Unavailable):
    """The memory store failed or could not be reached; nothing was half-written."""

    status_code = 503
    code = "memory_store_unavailable"
    public_message = "The memory store is unavailable; nothing was written. Retry later."


class IdempotencyKeyReused(AtlasError):
    """An ``Idempotency-Key`` came back with a different request than the one it first named."""

    status_code = 422
    code = "idempotency_key_reused"


class IdempotencyInProgress(AtlasError):
    """The first request with this ``Idempotency-Key`` has not finished yet."""

    status_code = 409
    code = "idempotency_in_progress"
