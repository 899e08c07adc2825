"""Pieces the agents services share: server time, the audit call, checks of client ids."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.db import models
from django.utils import timezone

from agents.models import Agent
from atlas_platform.exceptions import ValidationError
from tenants.models import User
from tenants.services.audit import audit_record

_CLIENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$")


def now() -> datetime:
    """Server time: clients' clocks are never trusted for presence or ordering."""
    return timezone.now()


def client_id(value: str, *, field: str) -> str:
    """A client-chosen id (session id, machine key, operation id): 1-128 safe characters."""
    if not isinstance(value, str) or not _CLIENT_ID.match(value):
        raise ValidationError(
            f"{field} must be 1-128 letters, digits and . _ : @ - "
            "(starting with a letter or digit).",
            code="bad_id",
            field=field,
        )
    return value


def clean_tags(tags: Any) -> list[str]:
    tags = list(tags or [])
    if len(tags) > 50 or any(not isinstance(t, str) or not 0 < len(t) <= 100 for t in tags):
        raise ValidationError("tags: at most 50 strings of 1-100 characters.", code="bad_tags")
    return [str(t) for t in tags]


def audit(
    action: str, *, user: User, target: models.Model, agent: Agent | None = None, **ids: Any
) -> None:
    """One audit event of an agents change: ids and kinds only, never message or memory text."""
    metadata = {"agent": agent.slug if agent is not None else None, **ids}
    audit_record(
        action=action, tenant=user.tenant, subject_user=user, target=target, metadata=metadata
    )
