"""The engine's vocabulary: memory documents, read scopes, recall queries and leg results.

Backends store and return ``MemoryDoc``; they never see Django models. Other apps name the
public part through ``memory.types``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

MemoryType = Literal["episodic", "semantic", "procedural", "catalog", "entity"]
MEMORY_TYPES: tuple[MemoryType, ...] = ("episodic", "semantic", "procedural", "catalog", "entity")
PERSONAL_TYPES: tuple[MemoryType, ...] = ("episodic", "semantic", "procedural")
# A searchable document another app keeps for one user (the knowledge graph's entities): the
# same hybrid legs, decay on ``timestamp``, isolation and erasure as every personal memory, but
# never part of memory recall (which searches PERSONAL_TYPES only), never read as a memory.
ENTITY: MemoryType = "entity"
ERASABLE_TYPES: tuple[MemoryType, ...] = (*PERSONAL_TYPES, ENTITY)
DATE_FIELDS = (
    "created_at",
    "timestamp",
    "superseded_at",
    "last_used_at",
    "valid_from",
    "valid_to",
    "last_success_at",
)


@dataclass
class MemoryDoc:
    """One memory. ``user_id`` is None only for tenant catalog documents.

    ``timestamp`` is when the remembered thing happened (episodic: the turn's time); it defaults
    to ``created_at``. Ids are opaque strings chosen by the service layer (uuid4 hex).
    ``embedding`` is written with the document and searched by the dense leg; reads return the
    document without it (None).
    """

    id: str
    tenant_id: str
    user_id: str | None
    memory_type: MemoryType
    text: str
    created_at: datetime
    timestamp: datetime
    embedding: list[float] | None = None
    confidence: float = 1.0
    source: str = "agent"  # turn | agent | consolidation | operator
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    # The project (an agents project key) the memory was written from, if any: recall can be
    # scoped to it (``RecallFilter.project``). Opaque to memory.
    project: str | None = None
    # episodic
    session_id: str | None = None
    # True when the session was inferred (the caller sent no ``session_id``: the turn joined
    # its user's current session, or opened one; memory.services.sessions), never for one
    # the caller named.
    session_inferred: bool = False
    agent: str | None = None
    # Index-only: words the lexical leg also matches for this turn (its session neighbour's,
    # memory.services.turn_context), at a lower weight than ``text``; never shown to a caller
    # (memory.shapes leaves it out), kept across updates and migrations like any field.
    # ``context_ids``: the turns those words came from; deleting one of them clears this
    # turn's context (both engines), so erased words do not stay searchable here.
    context: str | None = None
    context_ids: list[str] = field(default_factory=list)
    # semantic
    fact_type: str | None = None
    supersedes: list[str] = field(default_factory=list)
    superseded_by: str | None = None
    superseded_at: datetime | None = None
    contradiction: str | None = None
    supporting_episode_ids: list[str] = field(default_factory=list)
    last_used_at: datetime | None = None
    use_count: int = 0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    # procedural (and catalog: name)
    name: str | None = None
    description: str | None = None
    trigger: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    success_count: int = 0
    failure_count: int = 0
    last_success_at: datetime | None = None
    version: int = 1

    def to_source(self) -> dict[str, Any]:
        """A JSON-able dict (datetimes as ISO 8601 strings, None fields dropped)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            out[f.name] = value.isoformat() if isinstance(value, datetime) else value
        return out

    @classmethod
    def from_source(cls, source: dict[str, Any]) -> MemoryDoc:
        data = {k: v for k, v in source.items() if k in _FIELD_NAMES}
        data.setdefault("user_id", None)  # catalog documents are stored without one
        for name in DATE_FIELDS:
            if isinstance(data.get(name), str):
                data[name] = datetime.fromisoformat(data[name])
        return cls(**data)

    @property
    def is_superseded(self) -> bool:
        return self.superseded_by is not None


_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(MemoryDoc))


@dataclass(frozen=True)
class UsageBump:
    """``count`` recalls of ``doc`` since the last flush, the latest at ``last_used_at``."""

    doc: MemoryDoc
    count: int
    last_used_at: datetime


GrowthBucket = Literal["week", "month"]


@dataclass(frozen=True)
class GrowthPoint:
    """How many documents of one type a tenant stored in one calendar bucket."""

    start: datetime  # UTC midnight starting the week (Monday) or month (1st)
    memory_type: MemoryType
    count: int


Isolation = Literal["dls", "filter"]


@dataclass(frozen=True)
class ReadScope:
    """Whose memories a read may see: user ``user_id`` of ``tenant_id`` plus that tenant's
    catalog; ``user_id=None`` means the tenant catalog only.

    ``isolation`` is the tenant's isolation mode: under ``dls`` a backend that can make the
    store itself enforce the scope does so (Elasticsearch reads with the user's scoped key).
    Every backend ALWAYS adds its own tenant/user filters as well, in both modes.
    """

    tenant_id: str
    user_id: str | None
    isolation: Isolation = "filter"


@dataclass(frozen=True)
class Ranking:
    """Per-leg ranking signals (tenant-tunable)."""

    decay_offset_days: float = 365.0  # the tenant model's defaults
    decay_scale_days: float = 3650.0
    decay: float = 0.5
    use_count_weight: float = 0.2
    catalog_prior: float = 0.85
    apply_decay: bool = True  # False for the "no decay" ablation


@dataclass(frozen=True)
class RecallFilter:
    memory_types: tuple[MemoryType, ...] = PERSONAL_TYPES  # personal types to search
    include_catalog: bool = True
    include_superseded: bool = False
    since: datetime | None = None  # on ``timestamp``, inclusive
    until: datetime | None = None  # on ``timestamp``, inclusive
    # Only these documents (None: any): what a caller may read of another user's documents,
    # so that nothing else is ranked with them (a score never tells what else matched).
    ids: tuple[str, ...] | None = None
    # Personal memories of this project only (``MemoryDoc.project``), and with
    # ``include_unscoped`` also those written from no project; the catalog is not affected.
    project: str | None = None
    include_unscoped: bool = False
    # Also superseded facts moved out of the hot index (``MemoryBackend.archive_superseded``):
    # only a read that asks for superseded facts itself, never recall's successor credit.
    include_archived: bool = False


@dataclass(frozen=True)
class LegQuery:
    text: str
    vector: list[float] | None
    filter: RecallFilter
    ranking: Ranking
    now: datetime
    size: int = 80
    lexical: bool = True
    dense: bool = True
    # The weight of a turn's lexical context field against its text (``MemoryDoc.context``);
    # 0: the lexical leg does not search it.
    context_boost: float = 0.0


@dataclass
class LegHit:
    """One candidate of a recall leg: what fusion needs (id, score, rank). Recall then reads
    only the documents it returns, with ``get_many``."""

    id: str
    score: float  # after the ranking signals
    rank: int  # 1-based within its leg
    superseded_by: str | None = None  # the fact that replaced it (legs that include superseded)
    # A turn's session and time (episodes with a session id only): what recall's session
    # spread reads the turn's neighbours by (``MemoryBackend.session_neighbours``).
    session_id: str | None = None
    timestamp: datetime | None = None


@dataclass(frozen=True)
class SessionTurn:
    """One of the user's turns, as a leg found it: where it sits in its session."""

    id: str
    session_id: str
    timestamp: datetime


@dataclass(frozen=True)
class Neighbours:
    """The turns around one episode in its session, nearest first (``session_neighbours``)."""

    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


@dataclass
class LegResults:
    lexical: list[LegHit] = field(default_factory=list)
    dense: list[LegHit] = field(default_factory=list)
    took_ms: float = 0.0
