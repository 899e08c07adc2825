"""Memory-specific domain errors (part of the one ``AtlasError`` family)."""

from atlas_platform.exceptions import Unavailable


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
