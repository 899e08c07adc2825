"""Model validation mapped onto the domain error family."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import models

from atlas_platform.exceptions import ValidationError


def validate(instance: models.Model, *, exclude: list[str] | None = None) -> None:
    """``full_clean`` the instance; raise a domain ``ValidationError`` listing every problem."""
    try:
        instance.full_clean(exclude=exclude)
    except DjangoValidationError as exc:
        fields = exc.message_dict
        summary = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in fields.items())
        raise ValidationError(summary, fields=fields) from exc
