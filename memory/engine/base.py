"""The contract every memory backend honours. The conformance suite
(``tests/memory/engine/test_backend_contract.py``) runs it against each backend."""

from __future__ import annotations

import contextlib
import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from atlas_platform.cluster import ClusterConfig
from atlas_platform.exceptions import Unavailable
from memory.engine.types import (
    ERASABLE_TYPES,
    GrowthBucket,
    GrowthPoint,
    LegQuery,
    LegResults,
    MemoryDoc,
    MemoryType,
    Neighbours,
    Ranking,
    ReadScope,
    SessionTurn,
    UsageBump,
)


class EngineError(Unavailable):
    """The one error type callers see from a backend: the store failed or refused (503).

    Its message may quote the store (a cluster's own error text): the services log it and
    answer with a plain one (``memory.services.common.store_errors``)."""

    code = "memory_store_unavailable"


class UpdateConflict(EngineError):
    """A conditional update lost every retry to concurrent writers."""


class MemoryBackend(ABC):
    """A memory store. Writes use the platform's writer credential and are visible to the very
    next read (refresh before returning). Reads take a ``ReadScope`` and never return a document
    outside it: same tenant, and either the scope's user or no user (catalog). Reads return
    documents without their embedding (it is written and searched, never read back)."""

    name: str

    @abstractmethod
    def ensure_ready(self) -> None:
        """Create indices / tables if missing (idempotent)."""

    @abstractmethod
    def backup(self, *, into: Path, name: str, admin: ClusterConfig | None) -> dict[str, Any]:
        """Copy every document of this deployment, as of one moment, while writes go on:
        into files under ``into``, or a cluster snapshot named ``name`` (taken with the
        administrator's credential ``admin``). Returns what ``restore`` needs (JSON)."""

    @abstractmethod
    def restore(self, *, source: Path, detail: dict[str, Any], admin: ClusterConfig | None) -> None:
        """Put back what ``backup`` copied (``detail``; its files under ``source``), into a
        store that holds no document (``is_empty``): refused otherwise, nothing changed."""

    @abstractmethod
    def is_empty(self) -> bool:
        """Whether the store holds no document of this deployment at all."""

    @abstractmethod
    def write(self, docs: list[MemoryDoc]) -> None:
        """Insert (or replace by id) documents; one refresh for the batch."""

    @abstractmethod
    def create(self, docs: list[MemoryDoc]) -> set[str]:
        """Insert documents whose ids are new; an id the store holds already is left as it is
        and returned (a retried write finds its first attempt's document). Visible to the next
        read like ``write``, the documents that existed included."""

    def get(self, scope: ReadScope, memory_id: str) -> MemoryDoc | None:
        """The document with this id if it is inside ``scope`` (any type), else None."""
        found = self.get_many(scope, [memory_id])
        return found[0] if found else None

    @abstractmethod
    def get_many(self, scope: ReadScope, memory_ids: list[str]) -> list[MemoryDoc]:
        """Those of ``memory_ids`` inside ``scope``, in the order given; missing ones skipped.
        Cheap enough for recall to read the head of every fused list with it."""

    @abstractmethod
    def vectors(self, scope: ReadScope, memory_ids: list[str]) -> dict[str, list[float]]:
        """The stored unit vectors of those of ``memory_ids`` inside ``scope`` that have one,
        by id (what the dense leg compared; recall's dense feedback reads its first hits'
        instead of embedding their texts again). Archived documents may be left out."""

    @abstractmethod
    def similarities(
        self, scope: ReadScope, memory_ids: list[str], vector: list[float]
    ) -> dict[str, float]:
        """The cosine of ``vector`` (unit length) to the stored vector of each of
        ``memory_ids`` inside ``scope`` that has one, by id, computed where the vectors are
        (recall's dense feedback ranks the first pass's candidates by it). Archived documents
        may be left out."""

    @abstractmethod
    def update(
        self,
        doc: MemoryDoc,
        mutate: Callable[[MemoryDoc], dict[str, Any]],
    ) -> MemoryDoc:
        """Atomically read-modify-write one document: ``mutate`` gets the current version and
        returns the fields to change (``{}`` = no change). Retried on concurrent modification
        (optimistic concurrency; no server-side scripts). Returns the stored result as a read
        would (without the embedding). Raises ``UpdateConflict`` after the retries,
        ``EngineError`` if the document is gone."""

    def record_usage(self, bumps: list[UsageBump]) -> int:
        """Add each bump's ``count`` to its document's ``use_count`` and move ``last_used_at``
        forward to ``last_used_at`` (never back). Best effort per document: a forgotten one is
        skipped. Unlike other writes, the change may become visible on the store's own
        schedule (usage is ranking input, not something a caller reads back at once; ``sync``
        makes it visible now). Returns how many documents changed. Backends override this to
        batch; this default updates one by one."""
        changed = 0
        for bump in bumps:
            try:
                self.update(bump.doc, functools.partial(usage_changes, bump=bump))
            except EngineError:
                continue
            changed += 1
        return changed

    def writes_together(self) -> contextlib.AbstractContextManager[None]:
        """Writes inside this block may become searchable together, when it ends (one
        refresh for all of them, where the store refreshes); a write that found its document
        there already (a retry) is made searchable at once, and a get by id never waits. A
        store whose writes are visible at once has nothing to hold back."""
        return contextlib.nullcontext()

    @abstractmethod
    def sync(self) -> None:
        """Make every write so far visible to reads now (``record_usage``'s included). A store
        whose writes are visible at once has nothing to do."""

    @abstractmethod
    def delete(self, doc: MemoryDoc) -> bool:
        """Hard-delete one document (refresh before returning). False if it was not there."""

    @abstractmethod
    def recall_legs(self, scope: ReadScope, query: LegQuery) -> LegResults:
        """Run the lexical (BM25) and dense (vector similarity) legs — in one round trip where
        the store allows — each returning up to ``query.size`` hits inside ``scope`` that match
        ``query.filter``, scored with the ranking signals (``signal_multiplier``) applied, sorted
        by that score, ranks 1-based."""

    @abstractmethod
    def previous_turn(
        self, *, tenant_id: str, user_id: str, session_id: str, before: datetime
    ) -> MemoryDoc | None:
        """User ``user_id``'s newest episode of session ``session_id`` whose ``timestamp`` is
        at or before ``before`` (one bounded read, the writer's credential), or None: the turn
        a new turn's lexical context comes from (``memory.services.turn_context``)."""

    @abstractmethod
    def session_neighbours(
        self,
        scope: ReadScope,
        turns: list[SessionTurn],
        *,
        depth: int,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> dict[str, Neighbours]:
        """For each of ``turns`` (by id): the ids of up to ``depth`` of the scope user's own
        turns of that session with an earlier ``timestamp`` and up to ``depth`` with a later
        one, nearest first (turns at the same instant are neither), inside ``since`` /
        ``until`` when given. Bounded reads with the scope's credential: what recall's
        session spread (``memory.fusion.spread_to_neighbours``) reads."""

    @abstractmethod
    def newest_timestamp(self, scope: ReadScope) -> datetime | None:
        """The latest ``timestamp`` among the scope's own episodes and facts (never the
        catalog), or None when it has none: what "recently" means for a history that ended
        before the clock did."""

    @abstractmethod
    def scan(
        self,
        scope: ReadScope,
        *,
        memory_types: tuple[MemoryType, ...],
        include_superseded: bool = True,
        search_after: tuple[str, str] | None = None,
        limit: int = 500,
        only_superseded: bool = False,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[MemoryDoc]:
        """Documents of ``scope`` (including the catalog only if "catalog" is in
        ``memory_types``) ordered by (created_at, id) ascending, starting strictly after the
        ``search_after`` key (``(created_at_iso, id)``), at most ``limit``.

        ``include_superseded=False`` leaves superseded documents out; ``only_superseded`` keeps
        nothing else. ``created_from`` / ``created_to`` bound ``created_at`` (both inclusive)."""

    @abstractmethod
    def count(self, scope: ReadScope) -> dict[str, int]:
        """Documents per memory type inside ``scope`` (catalog included)."""

    @abstractmethod
    def tenant_memory_totals(self, tenant_ids: list[str]) -> dict[str, int]:
        """Memories (every type but ``entity``; catalog and superseded ones included) of each
        of ``tenant_ids``, all in one read; a tenant with none is 0."""

    @abstractmethod
    def growth(self, tenant_id: str, *, bucket: GrowthBucket) -> list[GrowthPoint]:
        """How tenant ``tenant_id``'s store grew: documents per memory type (catalog and
        superseded ones included) per calendar ``bucket`` of ``created_at`` in UTC — weeks start
        on Monday, months on the 1st. Only non-empty buckets, ordered by (start, memory_type).

        Tenant-wide (every user at once), so it runs with the platform's credential and returns
        counts only, never documents: it is for operators' dashboards, not for user reads."""

    # --- one user's documents by id (the writer credential, never a user's key) --------------
    @abstractmethod
    def find_ids(
        self,
        *,
        tenant_id: str,
        user_id: str,
        memory_type: MemoryType,
        among: list[str] | None = None,
        limit: int = 500,
    ) -> list[str]:
        """Ids of up to ``limit`` of user ``user_id``'s documents of ``memory_type`` (a personal
        type; only those among ``among`` when given), in id order. Never another user's or the
        catalog's. Reads no text: ids only."""

    @abstractmethod
    def delete_ids(
        self, *, tenant_id: str, user_id: str, memory_type: MemoryType, ids: list[str]
    ) -> list[str]:
        """Hard-delete those of ``ids`` that are the user's documents of ``memory_type``
        (refresh before returning); returns the ids deleted by this call. Idempotent: ids
        already gone, or not the user's, are skipped."""

    def expunge_deleted(self, *, tenant_id: str, user_id: str | None) -> bool:
        """Make deleted documents of the store that held this user's documents (``user_id``
        None: the tenant's) stop counting in any statistic a later read is scored with; called
        after an erasure, and leave none of them in the store's files where the store can see to
        it (the embedded store: its full-text segments and WAL). Returns whether that is done
        (False: try again later). The default does nothing and returns True."""
        return True

    @abstractmethod
    def count_ids(
        self,
        *,
        tenant_id: str,
        user_id: str,
        memory_type: MemoryType,
        among: list[str] | None = None,
    ) -> int:
        """How many of the user's documents of ``memory_type`` there are (among ``among``
        when given)."""

    # --- the archive: superseded facts out of the hot index ------------------------------------
    # Every read above that may return superseded facts (get_many, scan with superseded ones,
    # count, recall_legs with ``RecallFilter.include_archived``, find_ids / count_ids /
    # delete_ids / delete) reads or deletes the archive too: archived facts stay the user's,
    # readable and erasable exactly as before; only recall without superseded facts (and its
    # successor credit) no longer searches them.
    @abstractmethod
    def archive_superseded(
        self, *, tenant_id: str, user_id: str, before: datetime, limit: int = 500
    ) -> list[str]:
        """Move up to ``limit`` of user ``user_id``'s semantic facts superseded before
        ``before`` (``superseded_at``) out of the hot index into the user's archive (the same
        isolation: the tenant's, or under per-user statistics the user's own); returns the ids
        moved. A document is in exactly one of them at any time a read can see (copied, then
        taken out of the hot index); idempotent."""

    @abstractmethod
    def archive_expire(
        self, *, tenant_id: str, user_id: str, before: datetime, limit: int = 500
    ) -> list[str]:
        """Hard-delete up to ``limit`` of the user's archived facts superseded before
        ``before`` (retention of archived facts); returns the ids deleted."""

    @abstractmethod
    def archive_count(self, *, tenant_id: str, user_id: str, among: list[str] | None = None) -> int:
        """How many of the user's documents (among ``among`` when given) are archived."""


def require_personal(memory_type: str) -> None:
    """``find_ids`` / ``delete_ids`` / ``count_ids`` take a personal type, never the catalog."""
    if memory_type not in ERASABLE_TYPES:
        raise EngineError(f"Not a personal memory type: {memory_type!r}.")


def usage_changes(current: MemoryDoc, bump: UsageBump) -> dict[str, Any]:
    """The fields a usage bump changes on the current version of a document."""
    last = current.last_used_at
    latest = bump.last_used_at if last is None or bump.last_used_at > last else last
    return {"use_count": current.use_count + bump.count, "last_used_at": latest}


def gauss_decay(age_days: float, ranking: Ranking) -> float:
    """Elasticsearch's ``gauss`` decay: 1 within the offset, ``decay`` at offset + scale."""
    distance = max(0.0, abs(age_days) - ranking.decay_offset_days)
    if distance == 0.0:
        return 1.0
    sigma_sq = -(ranking.decay_scale_days**2) / (2.0 * math.log(ranking.decay))
    return math.exp(-(distance**2) / (2.0 * sigma_sq))


def signal_multiplier(doc: MemoryDoc, ranking: Ranking, now: datetime) -> float:
    """The per-document factor both legs multiply into their raw score:

    - episodic and entity: gauss decay on ``timestamp``; semantic: gauss decay on ``last_used_at``
      (falling back to ``created_at`` when never used) times ``1 + log10(1 + use_count) * w``;
    - procedural: 1 (exempt); catalog: ``catalog_prior`` (exempt from decay).
    """
    if doc.memory_type == "catalog":
        return ranking.catalog_prior
    if doc.memory_type == "procedural":
        return 1.0
    factor = 1.0
    if ranking.apply_decay:
        anchor = (
            doc.timestamp
            if doc.memory_type in ("episodic", "entity")
            else (doc.last_used_at or doc.created_at)
        )
        factor *= gauss_decay((now - anchor).total_seconds() / 86400.0, ranking)
    if doc.memory_type == "semantic":
        factor *= 1.0 + math.log10(1.0 + doc.use_count) * ranking.use_count_weight
    return factor
