"""The dry run of a forget request: what approving it would erase, read before anything is.

Shown when the request is opened and again on the approval page, and recomputed when the
approval is posted: if the data changed since the approver looked (its ``fingerprint``, a hash
of the ids), the approval is refused and the fresh preview shown. Approving fixes the targets:
the job erases exactly the ids that were previewed (a query is resolved here, then wiped).

Kept on the request (``ForgetRequest.preview_at_open`` / ``preview_approved``) and in the
receipt: counts per memory type, the time span, the number of ids and their hash. The sample
texts are shown to the approver and never stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from erasure.models import ForgetRequest
from memory.public import PERSONAL_TYPES, MemoryDoc, memory_personal_all, memory_personal_get

SAMPLE_CHARS = 300  # a sample text is cut here: enough to recognise it


@dataclass(frozen=True)
class SampleItem:
    id: str
    memory_type: str
    text: str
    created_at: datetime


@dataclass(frozen=True)
class Preview:
    """What approving would erase now. ``ids``: every targeted memory (all of the user's for
    a whole-user request)."""

    counts: dict[str, int]
    ids: list[str]
    sample: list[SampleItem] = field(default_factory=list)
    first: datetime | None = None
    last: datetime | None = None
    taken_at: datetime = field(default_factory=timezone.now)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def fingerprint(self) -> str:
        """Changes whenever the set of targeted memories does."""
        return ids_sha256(self.ids)

    def record(self) -> dict[str, Any]:
        """What the request row and the receipt keep: no text."""
        return {
            "counts": dict(self.counts),
            "total": self.total,
            "ids_count": len(self.ids),
            "ids_sha256": self.fingerprint,
            "span": {
                "first": self.first.isoformat() if self.first else None,
                "last": self.last.isoformat() if self.last else None,
            },
            "taken_at": self.taken_at.isoformat(),
        }


def forget_request_dry_run(*, request: ForgetRequest) -> Preview:
    """The preview of a pending request. An empty one once the user record is gone."""
    user = request.user
    if user is None:
        return Preview(counts=dict.fromkeys(PERSONAL_TYPES, 0), ids=[])
    tenant_id, user_id = user.memory_tenant_id, user.memory_id
    if request.scope != ForgetRequest.Scope.IDS:
        docs = list(memory_personal_all(tenant_id=tenant_id, user_id=user_id))
        return preview_of(request, docs)
    # Listed ids: those documents (and the episodes they name), not every memory of the user.
    docs = memory_personal_get(tenant_id=tenant_id, user_id=user_id, memory_ids=request.memory_ids)
    listed = {d.id for d in docs}
    support = [e for d in docs for e in d.supporting_episode_ids if e not in listed]
    if request.include_supporting_episodes and support:
        docs += memory_personal_get(tenant_id=tenant_id, user_id=user_id, memory_ids=support)
        docs.sort(key=lambda d: (d.created_at, d.id))
    return preview_of(request, docs)


def preview_of(request: ForgetRequest, docs: list[MemoryDoc]) -> Preview:
    """The preview from the user's personal memories (every one, or for listed ids those
    and the episodes they name; in created order)."""
    chosen = _chosen(request, docs)
    if request.include_supporting_episodes and request.scope != ForgetRequest.Scope.USER:
        supporting = {e for d in chosen for e in d.supporting_episode_ids}
        picked = {d.id for d in chosen}
        chosen += [d for d in docs if d.id in supporting and d.id not in picked]
    counts: dict[str, int] = dict.fromkeys(PERSONAL_TYPES, 0)
    for doc in chosen:
        counts[doc.memory_type] = counts.get(doc.memory_type, 0) + 1
    times = [d.created_at for d in chosen]
    newest = sorted(chosen, key=lambda d: d.created_at, reverse=True)
    return Preview(
        counts=counts,
        ids=[d.id for d in chosen],
        sample=[
            SampleItem(d.id, d.memory_type, d.text[:SAMPLE_CHARS], d.created_at)
            for d in newest[: settings.ATLAS_ERASURE_PREVIEW_SAMPLE]
        ],
        first=min(times) if times else None,
        last=max(times) if times else None,
    )


def _chosen(request: ForgetRequest, docs: list[MemoryDoc]) -> list[MemoryDoc]:
    if request.scope == ForgetRequest.Scope.USER:
        return list(docs)
    if request.scope == ForgetRequest.Scope.QUERY:
        return matching(request.query, docs)
    wanted = set(request.memory_ids)
    return [d for d in docs if d.id in wanted]


def matching(query: str, docs: Iterable[MemoryDoc]) -> list[MemoryDoc]:
    """The documents a query scope erases: those whose text, name, description or trigger
    contain the query as a phrase (whitespace normalised, case-folded)."""
    needle = _normalised(query)
    return [d for d in docs if needle in _normalised(*_fields(d))]


def _fields(doc: MemoryDoc) -> tuple[str, ...]:
    return (doc.text, doc.name or "", doc.description or "", doc.trigger or "")


def _normalised(*texts: str) -> str:
    return " ".join(" ".join(t.split()) for t in texts).casefold()


def ids_sha256(ids: Iterable[str]) -> str:
    """The trace of a set of memory ids in a preview and a receipt: the same ids, in any
    order, give the same hash."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()
