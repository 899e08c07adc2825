"""The evaluation corpus: persona files and the tenant catalog, their validation and loading.

The format is a shared contract (one JSON file per persona under ``corpus/``, plus
``catalog.json``); ``validate_persona`` checks a file against it and returns every problem at
once. ``load_run`` writes the personas into a FRESH tenant (one user per persona) through the
memory services, with the corpus's timestamps, plus a second "foreign" tenant whose one user
holds another persona's memories (the target of the leakage probes).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
CATALOG_FILE = "catalog.json"
PERSONA_PATTERN = re.compile(r"^[a-z_]+$")
KEY_PATTERN = re.compile(r"^([a-z]+)-(ep|se|pr)-(\d{3,})$")
KEY_TYPES = {"ep": "episodic", "se": "semantic", "pr": "procedural"}
QUESTION_KINDS = ("paraphrase", "exact_token", "temporal", "superseded")
MIN_PER_KIND = {"exact_token": 6, "temporal": 6, "superseded": 6}
# A corpus is a directory of persona files: the persona files at the top of ``corpus/`` are the
# ``personas`` corpus; ``corpus/<name>/`` holds corpus ``<name>``. Each has its question kinds
# and minimums (docs/recall-quality.md, "Corpora").
DEFAULT_CORPUS = "personas"
CORPORA = ("personas", "conversations", "agent_work")
CORPUS_KINDS = {
    "personas": QUESTION_KINDS,
    "conversations": ("single_hop", "multi_hop", "temporal", "open"),
    "agent_work": ("single_hop", "multi_hop", "temporal", "open", "superseded"),
}
CORPUS_MIN_PER_KIND = {
    "personas": MIN_PER_KIND,
    "conversations": {"single_hop": 8, "multi_hop": 3, "temporal": 5, "open": 3},
    "agent_work": {"single_hop": 10, "multi_hop": 4, "temporal": 5, "open": 3, "superseded": 5},
}
CORPUS_MIN_QUESTIONS = {"personas": 56, "conversations": 20, "agent_work": 36}
# A chat history (corpus ``conversations``) is long: this many sessions and turns at least,
# between exactly two named speakers.
MIN_SESSIONS, MIN_TURNS = 15, 300
MATCHES = ("any", "all")  # any target is a hit / every target is evidence (scored as a share)
SPLITS = ("dev", "test")
# How the turns reach Atlas (``eval_recall --paths``): ``sessions``, each with its session id
# and its date (an integrator that sends both); ``dated``, its date only (Atlas infers the
# sessions from the gaps); ``text``, the text only: no session, no date, so each turn is
# dated by its arrival (one second apart, just before the corpus's ``now``) and Atlas infers
# the sessions. Facts and playbooks keep their dates on every path.
PATHS = ("sessions", "dated", "text")
CORPUS_FACT_TYPES = (
    "preference",
    "profile",
    "device",
    "account",
    "relationship",
    "constraint",
    "other",
)
# The corpus's finer fact types onto the service's four (the corpus type is kept as a tag).
SERVICE_FACT_TYPE = {
    "preference": "preference",
    "profile": "identity",
    "account": "identity",
    "relationship": "identity",
    "constraint": "constraint",
    "device": "world",
    "other": "world",
}
MIN_QUESTIONS = 56


class CorpusError(Exception):
    """A corpus file breaks the contract; ``problems`` lists every violation found."""

    def __init__(self, path: str, problems: Sequence[str]) -> None:
        self.path = path
        self.problems = list(problems)
        listed = "\n".join(f"  - {p}" for p in self.problems[:40])
        more = f"\n  ... and {len(self.problems) - 40} more" if len(self.problems) > 40 else ""
        super().__init__(f"{path}: {len(self.problems)} problem(s)\n{listed}{more}")


@dataclass
class Memory:
    key: str
    type: str
    text: str
    timestamp: datetime
    raw: dict[str, Any]


@dataclass
class Question:
    id: str
    question: str
    targets: list[str]
    kind: str
    match: str = "any"  # "all": each target is evidence, R@k is the share found in the top k
    split: str = "dev"


@dataclass
class Persona:
    persona: str
    display_name: str
    description: str
    now: datetime
    memories: list[Memory]
    questions: list[Question]
    corpus: str = DEFAULT_CORPUS

    @property
    def by_key(self) -> dict[str, Memory]:
        return {m.key: m for m in self.memories}


@dataclass
class CatalogDocument:
    key: str
    name: str
    text: str
    description: str


# --- validation ----------------------------------------------------------------------------
def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _text(item: dict[str, Any], name: str, where: str, problems: list[str]) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{where}: '{name}' must be a non-empty string")
        return ""
    return value


def validate_persona(data: Any, *, stem: str | None = None, corpus: str | None = None) -> list[str]:
    """Every way ``data`` breaks the contract (empty list: valid). ``corpus``: the corpus its
    directory says it belongs to (the file's own ``corpus`` field must agree)."""
    if not isinstance(data, dict):
        return ["the file must hold a JSON object"]
    problems: list[str] = []
    named = data.get("corpus", DEFAULT_CORPUS)
    if named not in CORPORA:
        problems.append(f"'corpus' must be one of {', '.join(CORPORA)}")
        named = DEFAULT_CORPUS
    elif corpus is not None and named != corpus:
        problems.append(f"'corpus' is {named!r} but the file is in corpus {corpus!r}")
    persona = data.get("persona")
    if not isinstance(persona, str) or not PERSONA_PATTERN.match(persona):
        problems.append("'persona' must match [a-z_]+")
    elif stem is not None and persona != stem:
        problems.append(f"'persona' is {persona!r} but the file is {stem}.json")
    for name in ("display_name", "description"):
        _text(data, name, "persona", problems)
    now = _when(data.get("now"))
    if now is None:
        problems.append("'now' must be an ISO 8601 time with an offset")
    memories = data.get("memories")
    questions = data.get("questions")
    if not isinstance(memories, list) or not memories:
        return [*problems, "'memories' must be a non-empty list"]
    if not isinstance(questions, list) or not questions:
        return [*problems, "'questions' must be a non-empty list"]
    keys: dict[str, dict[str, Any]] = {}
    prefixes: set[str] = set()
    for n, item in enumerate(memories, start=1):
        problems.extend(_check_memory(item, n, keys, prefixes, now))
    if len(prefixes) > 1:
        problems.append(f"memory keys use several prefixes: {', '.join(sorted(prefixes))}")
    problems.extend(_check_supersession(keys))
    problems.extend(_check_questions(questions, keys, prefixes, named))
    if named == "conversations":
        problems.extend(_check_chat(memories))
    return problems


def _check_chat(memories: list[Any]) -> list[str]:
    """A chat history: only turns, each with its speaker, two speakers, long enough."""
    turns = [m for m in memories if isinstance(m, dict)]
    problems = [
        f"memory {m.get('key')}: a chat holds only episodic turns"
        for m in turns
        if m.get("type") != "episodic"
    ]
    speakers = {m.get("speaker") for m in turns}
    if None in speakers or not all(isinstance(s, str) and s.strip() for s in speakers):
        problems.append("every turn of a chat needs a 'speaker'")
    elif len(speakers) != 2:
        problems.append(f"a chat has two speakers, not {len(speakers)}")
    sessions = {m.get("session") for m in turns}
    if len(sessions) < MIN_SESSIONS:
        problems.append(f"only {len(sessions)} sessions; a chat needs {MIN_SESSIONS}+")
    if len(turns) < MIN_TURNS:
        problems.append(f"only {len(turns)} turns; a chat needs {MIN_TURNS}+")
    return problems


def _check_memory(
    item: Any,
    n: int,
    keys: dict[str, dict[str, Any]],
    prefixes: set[str],
    now: datetime | None,
) -> list[str]:
    where = f"memory #{n}"
    if not isinstance(item, dict):
        return [f"{where}: must be an object"]
    problems: list[str] = []
    key = item.get("key")
    match = KEY_PATTERN.match(key) if isinstance(key, str) else None
    if match is None or not isinstance(key, str):
        return [f"{where}: 'key' must look like <prefix>-ep|se|pr-NNN (got {key!r})"]
    where = f"memory {key}"
    if key in keys:
        problems.append(f"{where}: duplicate key")
    keys[key] = item
    prefixes.add(match.group(1))
    kind = item.get("type")
    if kind != KEY_TYPES[match.group(2)]:
        problems.append(f"{where}: 'type' must be {KEY_TYPES[match.group(2)]} for this key")
    _text(item, "text", where, problems)
    moment = _when(item.get("timestamp"))
    if moment is None:
        problems.append(f"{where}: 'timestamp' must be ISO 8601 with an offset")
    elif now is not None and moment >= now:
        problems.append(f"{where}: 'timestamp' must be before 'now'")
    if kind == "episodic":
        _text(item, "session", where, problems)
    elif kind == "semantic":
        if item.get("fact_type") not in CORPUS_FACT_TYPES:
            problems.append(f"{where}: 'fact_type' must be one of {', '.join(CORPUS_FACT_TYPES)}")
        confidence = item.get("confidence", 1.0)
        if not isinstance(confidence, int | float) or not 0.0 <= confidence <= 1.0:
            problems.append(f"{where}: 'confidence' must be a number in [0, 1]")
        for name in ("supporting", "supersedes"):
            if not isinstance(item.get(name, []), list):
                problems.append(f"{where}: '{name}' must be a list of keys")
        if item.get("supersedes") and item.get("contradiction") not in ("natural", "harsh"):
            problems.append(f"{where}: a superseding fact needs 'contradiction' natural|harsh")
        if item.get("contradiction") is not None and not item.get("supersedes"):
            problems.append(f"{where}: 'contradiction' without 'supersedes'")
    elif kind == "procedural":
        for name in ("name", "trigger"):
            _text(item, name, where, problems)
        steps = item.get("steps")
        if not isinstance(steps, list) or not 3 <= len(steps) <= 7:
            problems.append(f"{where}: 'steps' must be a list of 3-7 strings")
        elif not all(isinstance(s, str) and s.strip() for s in steps):
            problems.append(f"{where}: every step must be a non-empty string")
        for name in ("success_count", "failure_count"):
            value = item.get(name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problems.append(f"{where}: '{name}' must be a non-negative integer")
    return problems


def _check_supersession(keys: dict[str, dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    superseded_by: dict[str, str] = {}
    for key, item in keys.items():
        for name in ("supporting", "supersedes"):
            refs = item.get(name) or []
            if not isinstance(refs, list):
                continue
            for ref in refs:
                if ref not in keys:
                    problems.append(f"memory {key}: '{name}' names unknown key {ref!r}")
                    continue
                if name == "supporting" and keys[ref].get("type") != "episodic":
                    problems.append(f"memory {key}: supporting {ref} is not episodic")
                if name != "supersedes":
                    continue
                if keys[ref].get("type") != "semantic":
                    problems.append(f"memory {key}: supersedes {ref}, which is not semantic")
                if ref in superseded_by:
                    problems.append(
                        f"memory {ref} is superseded twice ({superseded_by[ref]}, {key})"
                    )
                superseded_by[ref] = key
                old, new = _when(keys[ref].get("timestamp")), _when(item.get("timestamp"))
                if old and new and not old < new:
                    problems.append(f"memory {key}: must be newer than {ref}, which it supersedes")
    return problems


def _check_questions(
    questions: list[Any],
    keys: dict[str, dict[str, Any]],
    prefixes: set[str],
    corpus: str = DEFAULT_CORPUS,
) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    allowed = CORPUS_KINDS[corpus]
    kinds: dict[str, int] = dict.fromkeys(allowed, 0)
    superseded = {ref for item in keys.values() for ref in (item.get("supersedes") or [])}
    for n, q in enumerate(questions, start=1):
        if not isinstance(q, dict):
            problems.append(f"question #{n}: must be an object")
            continue
        qid = q.get("id")
        where = f"question {qid}" if isinstance(qid, str) else f"question #{n}"
        if not isinstance(qid, str) or not qid.strip():
            problems.append(f"{where}: 'id' must be a non-empty string")
        elif qid in seen:
            problems.append(f"{where}: duplicate id")
        else:
            seen.add(qid)
            if prefixes and not any(qid.startswith(f"{p}-q-") for p in prefixes):
                problems.append(f"{where}: id should be <prefix>-q-NNN")
        _text(q, "question", where, problems)
        targets = q.get("targets")
        if not isinstance(targets, list) or not targets:
            problems.append(f"{where}: 'targets' must be a non-empty list of memory keys")
            targets = []
        for target in targets:
            if target not in keys:
                problems.append(f"{where}: target {target!r} is not a memory key")
        if q.get("match", "any") not in MATCHES:
            problems.append(f"{where}: 'match' must be any or all")
        if q.get("split", "dev") not in SPLITS:
            problems.append(f"{where}: 'split' must be dev or test")
        superseded_targets = [t for t in targets if t in superseded]
        if superseded_targets and corpus != DEFAULT_CORPUS and q.get("kind") != "superseded":
            problems.append(
                f"{where}: target {superseded_targets[0]} is superseded (never recalled)"
            )
        kind = q.get("kind")
        if kind not in allowed:
            problems.append(f"{where}: 'kind' must be one of {', '.join(allowed)}")
            continue
        kinds[kind] += 1
        if kind == "superseded":
            for target in targets:
                if target in superseded:
                    problems.append(f"{where}: target {target} is itself superseded")
                elif target in keys and not keys[target].get("supersedes"):
                    problems.append(f"{where}: target {target} supersedes nothing")
    least_questions = CORPUS_MIN_QUESTIONS[corpus]
    if len(questions) < least_questions:
        problems.append(
            f"only {len(questions)} questions; the contract asks for {least_questions}+"
        )
    for kind, least in CORPUS_MIN_PER_KIND[corpus].items():
        if kinds[kind] < least:
            problems.append(f"only {kinds[kind]} '{kind}' questions; at least {least} needed")
    return problems


def validate_catalog(data: Any) -> list[str]:
    if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
        return ["the catalog must be an object with a 'documents' list"]
    problems: list[str] = []
    seen: set[str] = set()
    for n, doc in enumerate(data["documents"], start=1):
        if not isinstance(doc, dict):
            problems.append(f"document #{n}: must be an object")
            continue
        key = doc.get("key")
        where = f"document {key}" if isinstance(key, str) else f"document #{n}"
        if not isinstance(key, str) or not re.match(r"^cat-\d{3,}$", key):
            problems.append(f"{where}: 'key' must look like cat-NNN")
        elif key in seen:
            problems.append(f"{where}: duplicate key")
        else:
            seen.add(key)
        for name in ("name", "text", "description"):
            _text(doc, name, where, problems)
    return problems


# --- reading -------------------------------------------------------------------------------
def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorpusError(str(path), [f"cannot read JSON: {exc}"]) from exc


def read_persona(path: Path, corpus: str | None = None) -> Persona:
    """The persona in ``path``, or ``CorpusError`` listing every problem."""
    data = _read_json(path)
    problems = validate_persona(data, stem=path.stem, corpus=corpus)
    if problems:
        raise CorpusError(str(path), problems)
    memories = [
        Memory(
            key=m["key"],
            type=m["type"],
            text=m["text"],
            timestamp=datetime.fromisoformat(m["timestamp"]),
            raw=m,
        )
        for m in data["memories"]
    ]
    questions = [
        Question(
            id=q["id"],
            question=q["question"],
            targets=list(q["targets"]),
            kind=q["kind"],
            match=q.get("match", "any"),
            split=q.get("split") or split_of(q["id"]),
        )
        for q in data["questions"]
    ]
    return Persona(
        corpus=data.get("corpus", DEFAULT_CORPUS),
        persona=data["persona"],
        display_name=data["display_name"],
        description=data["description"],
        now=datetime.fromisoformat(data["now"]),
        memories=memories,
        questions=questions,
    )


def read_catalog(path: Path) -> list[CatalogDocument]:
    data = _read_json(path)
    problems = validate_catalog(data)
    if problems:
        raise CorpusError(str(path), problems)
    return [
        CatalogDocument(key=d["key"], name=d["name"], text=d["text"], description=d["description"])
        for d in data["documents"]
    ]


def split_of(question_id: str) -> str:
    """The split of a question that names none (the persona corpus): ``dev`` or ``test`` from
    a hash of its id, fixed and blind to what it asks."""
    digest = hashlib.sha1(question_id.encode()).hexdigest()  # noqa: S324
    return "dev" if int(digest, 16) % 2 == 0 else "test"


def persona_files(directory: Path = CORPUS_DIR) -> list[Path]:
    return sorted(p for p in directory.glob("*.json") if p.name != CATALOG_FILE)


def corpus_files(directory: Path = CORPUS_DIR, corpus: str = DEFAULT_CORPUS) -> list[Path]:
    """The persona files of ``corpus`` under ``directory`` (top level: ``personas``)."""
    return persona_files(directory if corpus == DEFAULT_CORPUS else directory / corpus)


def read_corpus(
    directory: Path = CORPUS_DIR,
    personas: Iterable[str] | None = None,
    corpora: Iterable[str] | None = None,
) -> tuple[list[Persona], list[CatalogDocument]]:
    """The chosen personas and the catalog. ``corpora`` (default: ``personas`` only) picks
    the corpora; ``personas`` picks files by name among them."""
    chosen_corpora = list(corpora) if corpora is not None else [DEFAULT_CORPUS]
    unknown = [c for c in chosen_corpora if c not in CORPORA]
    if unknown:
        raise CorpusError(str(directory), [f"no corpus {name!r}" for name in unknown])
    files = {p.stem: (p, c) for c in chosen_corpora for p in corpus_files(directory, c)}
    chosen = list(personas) if personas is not None else sorted(files)
    missing = [name for name in chosen if name not in files]
    if missing:
        raise CorpusError(str(directory), [f"no persona file {name}.json" for name in missing])
    catalog_path = directory / CATALOG_FILE
    catalog = read_catalog(catalog_path) if catalog_path.exists() else []
    return [read_persona(*files[name]) for name in chosen], catalog


# --- loading -------------------------------------------------------------------------------
@dataclass
class LoadedUser:
    persona: str
    user: Any  # tenants.models.User
    key_to_id: dict[str, str] = field(default_factory=dict)

    @property
    def id_to_key(self) -> dict[str, str]:
        return {v: k for k, v in self.key_to_id.items()}


@dataclass
class LoadedRun:
    tenant: Any  # tenants.models.Tenant
    foreign_tenant: Any
    users: dict[str, LoadedUser]
    foreign: LoadedUser
    catalog_ids: dict[str, str]
    timings_s: dict[str, float] = field(default_factory=dict)


def _onboard(slug: str, name: str, external_ids: list[str], statistics_scope: str) -> Any:
    from tenants.services.tenants import tenant_onboard

    return tenant_onboard(
        slug=slug,
        name=name,
        admin_username=f"{slug}-admin",
        admin_password=f"{secrets.token_urlsafe(18)}-Ev4l",
        user_external_ids=external_ids,
        statistics_scope=statistics_scope,
    )


def load_run(
    personas: Sequence[Persona],
    catalog: Sequence[CatalogDocument],
    *,
    foreign: Persona,
    suffix: str | None = None,
    statistics_scope: str = "tenant",
    path: str = "sessions",
) -> LoadedRun:
    """A fresh tenant with one user per persona (memories written with the corpus's times) and
    the catalog, plus a foreign tenant whose one user holds ``foreign``'s memories.
    ``statistics_scope``: the main tenant's (``Tenant.statistics_scope``); ``path``: how the
    turns are sent (``PATHS``)."""
    import time

    from memory.public import catalog_doc_id, catalog_import

    suffix = suffix or secrets.token_hex(4)
    started = time.perf_counter()
    main = _onboard(
        f"eval-{suffix}",
        f"Recall eval {suffix}",
        [p.persona for p in personas],
        statistics_scope,
    )
    other = _onboard(
        f"eval-{suffix}-foreign", f"Recall eval {suffix} (foreign)", ["foreign"], "tenant"
    )
    timings = {"onboard_s": round(time.perf_counter() - started, 2)}
    users = {}
    for persona, user in zip(personas, main.users, strict=True):
        mark = time.perf_counter()
        users[persona.persona] = load_persona(persona, user, path)
        timings[f"load_{persona.persona}_s"] = round(time.perf_counter() - mark, 2)
    mark = time.perf_counter()
    foreign_user = load_persona(foreign, other.users[0], path, role="foreign")
    timings["load_foreign_s"] = round(time.perf_counter() - mark, 2)
    catalog_ids: dict[str, str] = {}
    if catalog:
        mark = time.perf_counter()
        catalog_import(
            tenant=main.tenant,
            documents=[
                {"id": d.key, "name": d.name, "text": d.text, "metadata": {"about": d.description}}
                for d in catalog
            ],
        )
        catalog_ids = {d.key: catalog_doc_id(main.tenant, d.key) for d in catalog}
        timings["load_catalog_s"] = round(time.perf_counter() - mark, 2)
    return LoadedRun(
        tenant=main.tenant,
        foreign_tenant=other.tenant,
        users=users,
        foreign=LoadedUser(
            persona=foreign.persona, user=other.users[0], key_to_id=foreign_user.key_to_id
        ),
        catalog_ids=catalog_ids,
        timings_s=timings,
    )


def load_persona(
    persona: Persona, user: Any, path: str = "sessions", *, role: str = "user"
) -> LoadedUser:
    """The persona's memories as ``user``'s, with the corpus's times (turns as ``path`` sends
    them: ``PATHS``).

    Repeatable: every memory id derives from a seed that names the corpus, the persona, the
    path and the ``role`` (``replayable``), never the run, so two runs store the same ids and
    the product's ties (fusion breaks them on id) fall the same way; ids stay unique within a
    run (the foreign tenant's copy has its own role).

    Episodes (as turns) go in first through ``memory_import``, then plain facts (citing them)
    and playbooks; every superseding fact goes through ``memory_write`` in time order, with its
    ``supersedes`` keys mapped to ids, so the service marks the older facts as it would live.
    """
    from memory.public import replayable

    with replayable(f"eval:{role}:{persona.corpus}:{persona.persona}:{path}"):
        return _load_persona(persona, user, path)


def _load_persona(persona: Persona, user: Any, path: str) -> LoadedUser:
    from memory.public import memory_import, memory_write

    loaded = LoadedUser(persona=persona.persona, user=user)
    plain = [m for m in persona.memories if not m.raw.get("supersedes")]
    episodes = [m for m in plain if m.type == "episodic"]
    others = [m for m in plain if m.type == "semantic"] + [
        m for m in plain if m.type == "procedural"
    ]
    sent = _sent_turns(episodes, path, persona.now)
    for batch in (episodes, others):
        items = [sent.get(m.key) or _imported(m, loaded.key_to_id) for m in batch]
        docs = memory_import(user=user, memories=items) if items else []
        loaded.key_to_id.update((m.key, d.id) for m, d in zip(batch, docs, strict=True))
    superseding = sorted(
        (m for m in persona.memories if m.raw.get("supersedes")), key=lambda m: m.timestamp
    )
    for memory in superseding:
        raw = memory.raw
        doc = memory_write(
            user=user,
            text=memory.text,
            memory_type="semantic",
            confidence=float(raw.get("confidence", 1.0)),
            fact_type=SERVICE_FACT_TYPE[raw["fact_type"]],
            supersedes=[loaded.key_to_id[k] for k in raw["supersedes"]],
            contradiction=raw.get("contradiction"),
            supporting_episode_ids=[loaded.key_to_id[k] for k in raw.get("supporting") or []],
            tags=[f"fact:{raw['fact_type']}"],
            metadata={"eval_key": memory.key},
            timestamp=memory.timestamp,
        )
        loaded.key_to_id[memory.key] = doc.id
    return loaded


def _sent_turns(episodes: list[Memory], path: str, now: datetime) -> dict[str, Any]:
    """The turns as ``path`` sends them, by key (empty for ``sessions``: as in the corpus)."""
    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(PATHS)}")
    if path == "sessions":
        return {}
    ordered = sorted(episodes, key=lambda m: m.timestamp)
    out = {}
    for n, memory in enumerate(ordered):
        arrival = now - timedelta(seconds=len(ordered) - n)
        item = _imported(memory, {})
        out[memory.key] = dataclasses.replace(
            item, session_id=None, timestamp=arrival if path == "text" else item.timestamp
        )
    return out


def _imported(memory: Memory, ids: dict[str, str]) -> Any:
    """What ``memory_import`` takes for ``memory``: the document a turn (episodes) or
    ``memory_write`` (facts, playbooks) would store, as of its timestamp."""
    from memory.public import ImportedMemory

    raw, when = memory.raw, memory.timestamp
    if memory.type == "episodic":
        return ImportedMemory(
            memory_type="episodic",
            text=memory.text,
            timestamp=when,
            source="turn",
            session_id=str(raw["session"]),
            agent="eval",
            metadata={"speaker": raw["speaker"]} if raw.get("speaker") else {},
        )
    if memory.type == "semantic":
        return ImportedMemory(
            memory_type="semantic",
            text=memory.text,
            timestamp=when,
            metadata={"eval_key": memory.key},
            confidence=float(raw.get("confidence", 1.0)),
            fact_type=SERVICE_FACT_TYPE[raw["fact_type"]],
            tags=[f"fact:{raw['fact_type']}"],
            supporting_episode_ids=[ids[k] for k in raw.get("supporting") or []],
        )
    return ImportedMemory(
        memory_type="procedural",
        text=memory.text,
        timestamp=when,
        metadata={"eval_key": memory.key},
        name=raw["name"],
        trigger=raw["trigger"],
        steps=list(raw["steps"]),
        success_count=raw["success_count"],
        failure_count=raw["failure_count"],
    )
