"""This deployment's id on the search cluster (``ATLAS_DEPLOYMENT_ID``, else the database's
``Deployment`` row, made once)."""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction

from tenants.models import Deployment


def deployment_id() -> str:
    """The id this deployment stamps into its indices and scoped keys."""
    configured: str = settings.ATLAS_DEPLOYMENT_ID
    if configured:
        return configured
    row = Deployment.objects.order_by("pk").first()
    if row is None:
        try:
            with transaction.atomic():
                row = Deployment.objects.create(pk=1)
        except IntegrityError:  # another process made it first
            row = Deployment.objects.get(pk=1)
    return row.uid.hex
