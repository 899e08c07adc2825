"""Celery tasks of the tenants app: housekeeping on the beat schedule."""

from __future__ import annotations

from celery import shared_task

from tenants.services.scoped_keys import scoped_keys_renew


@shared_task(name="tenants.scoped_keys_renew")  # type: ignore[untyped-decorator]
def scoped_keys_renew_task() -> dict[str, int]:
    """Rotate scoped cluster keys before they expire; finish pending invalidations."""
    result = scoped_keys_renew()
    return {"rotated": result.rotated, "failed": result.failed, "invalidated": result.invalidated}
