"""The user export (the right of access): every app adds the section of what it holds about a
user, so tenants composes ``GET /api/v1/users/{user_id}/export`` without knowing the apps above
it. The pair of ``tenants.signals.user_data_erasing``: what an erasure deletes, the export shows.

An app registers its sections from its ``AppConfig.ready()`` with ``register_export``: a name
(the document's key), the rows (an iterable for one user, read in bounded batches: never the
whole table at once; ``in_batches`` walks a queryset by primary key), the serializer of one row
(its JSON and its OpenAPI schema) and a help text. Sections come in registration order, which
is ``INSTALLED_APPS`` order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import models
from rest_framework import serializers

from tenants.models import User

M = TypeVar("M", bound=models.Model)
EXPORT_BATCH = 200  # rows read (and held) at a time per section


@dataclass(frozen=True)
class ExportSection:
    name: str
    rows: Callable[[User], Iterable[Any]]
    shape: type[serializers.Serializer[Any]]
    help_text: str


_SECTIONS: dict[str, ExportSection] = {}


def register_export(
    name: str,
    *,
    rows: Callable[[User], Iterable[Any]],
    shape: type[serializers.Serializer[Any]],
    help_text: str,
) -> None:
    """Add (or, for the same name, replace) a section of the user export."""
    if name in {"user", "exported_at", "counts"}:
        raise ValueError(f"{name!r} is a field of the export itself.")
    _SECTIONS[name] = ExportSection(name=name, rows=rows, shape=shape, help_text=help_text)


def export_sections() -> list[ExportSection]:
    return list(_SECTIONS.values())


def in_batches(queryset: models.QuerySet[M], size: int | None = None) -> Iterator[M]:
    """The queryset's rows in primary-key order, ``size`` at a time (keyset pages: no server
    cursor held across the response, no offset scans), related rows as the queryset loads
    them (``select_related`` / ``prefetch_related`` apply per batch); ``size``: EXPORT_BATCH."""
    size = size or EXPORT_BATCH
    last: Any = None
    while True:
        page = queryset.order_by("pk")
        if last is not None:
            page = page.filter(pk__gt=last)
        batch = list(page[:size])
        yield from batch
        if len(batch) < size:
            return
        last = batch[-1].pk
