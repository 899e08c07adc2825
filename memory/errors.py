"""Memory-specific domain errors (part of the one ``AtlasError`` family)."""

from atlas_platform.exceptions import AtlasError, Unavailable


class MemoryStoreUnavailable(Unavailable):
    """The memory store failed or could not be reached. The write may or may not have reached
    the store: a retry with the same ``Idempotency-Key`` (or operation id) finds it and does not
    write it twice, and a write nobody retries is taken back (``memory.services.intents``)."""

    status_code = 503
    code = "memory_store_unavailable"
    public_message = (
        "The memory store is unavailable. Retry with the same Idempotency-Key: a write that "
        "reached the store is found and answered, never stored twice."
    )


class CatalogKeyMissing(MemoryStoreUnavailable):
    """A cluster-enforced tenant's catalog is read with its catalog key, and it has no live one
    (never made, or withdrawn): refused, never read with the platform's own credential."""

    code = "no_catalog_key"
    public_message = (
        "This tenant's catalog is read with a cluster-enforced catalog key, and the tenant has "
        "none at the moment; the hourly key renewal (tenants.scoped_keys_renew) makes one. "
        "Retry later."
    )


class IdempotencyKeyReused(AtlasError):
    """An ``Idempotency-Key`` came back with a different request than the one it first named."""

    status_code = 422
    code = "idempotency_key_reused"


class IdempotencyInProgress(AtlasError):
    """The first request with this ``Idempotency-Key`` has not finished yet."""

    status_code = 409
    code = "idempotency_in_progress"
