"""Celery tasks of the tenants app: housekeeping on the beat schedule."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from tenants.services.catalog_keys import catalog_keys_renew
from tenants.services.scoped_keys import scoped_keys_renew


@shared_task(name="tenants.scoped_keys_renew")  # type: ignore[untyped-decorator]
def scoped_keys_renew_task() -> dict[str, int]:
    """Rotate scoped cluster keys (users' and tenants' catalog keys) before they expire, make
    the catalog key a cluster-enforced tenant lacks, finish pending invalidations."""
    result = scoped_keys_renew()
    catalog = catalog_keys_renew(horizon_days=settings.ATLAS_SCOPED_KEY_RENEW_DAYS)
    return {
        "rotated": result.rotated,
        "failed": result.failed,
        "invalidated": result.invalidated,
        "catalog_made": catalog.made,
        "catalog_rotated": catalog.rotated,
        "catalog_failed": catalog.failed,
        "catalog_invalidated": catalog.invalidated,
    }
