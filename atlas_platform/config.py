"""Typed groups of settings, built once by ``atlas_platform.settings`` from the environment.

Each group is a frozen dataclass read as one Django setting (``settings.ATLAS_RECALL``, ...):
its fields are typed and checked when the process starts, so a bad value stops start-up with a
message that names the variable to fix, instead of surfacing inside a request. A test changes
one field with ``dataclasses.replace(settings.ATLAS_RECALL, candidates=80)``. The groups:
``ATLAS_RECALL`` (RecallSettings), ``ATLAS_EMBEDDING`` (EmbedderSettings: ``ATLAS_EMBEDDER*``,
``ATLAS_MODELS_DIR``), ``ATLAS_RERANKING`` (RerankerSettings: ``ATLAS_RERANKER*``),
``ATLAS_CHAT_MODEL`` (ChatModelSettings: consolidation's model); the environment variables
keep their names.

Nothing here imports an app: the settings module imports it before Django is set up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured


def _within(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise ImproperlyConfigured(f"{name} must be from {low:g} to {high:g}, not {value!r}.")


@dataclass(frozen=True)
class RecallSettings:
    """Recall's knobs that a deployment may set (docs/recall-quality.md, "Defaults"). Each was
    chosen across corpora on dev splits; ``RecallPlan`` fields left ``None`` read them. Methods
    that were measured and not kept have no setting: the lab reaches them through
    ``RecallPlan`` (its fields' defaults are the kept methods)."""

    max_k: int = 50  # ATLAS_RECALL_MAX_K: the most hits one recall may ask for
    candidates: int = 40  # ATLAS_RECALL_CANDIDATES: ids each leg returns
    rank_constant: int = 5  # ATLAS_RECALL_RANK_CONSTANT: RRF's rank constant
    context_boost: float = 0.5  # ATLAS_TURN_CONTEXT_BOOST: a turn's lexical context's weight
    session_spread: float = 0.25  # ATLAS_RECALL_SESSION_SPREAD: share a head turn lends
    session_depth: int = 2  # ATLAS_RECALL_SESSION_DEPTH: turns each way it lends to
    turn_prior: float = 0.8  # ATLAS_RECALL_TURN_PRIOR: a question / small-talk turn's factor
    rerank_budget_ms: int = 400  # ATLAS_RERANK_BUDGET_MS: past it, the fused order stands

    def __post_init__(self) -> None:
        # The same bounds as RecallPlan's (memory/plans.py), so any setting is a valid plan.
        _within("ATLAS_RECALL_MAX_K", self.max_k, 1, 1000)
        _within("ATLAS_RECALL_CANDIDATES", self.candidates, 1, 1000)
        _within("ATLAS_RECALL_RANK_CONSTANT", self.rank_constant, 0, 1000)
        _within("ATLAS_TURN_CONTEXT_BOOST", self.context_boost, 0.0, 10.0)
        _within("ATLAS_RECALL_SESSION_SPREAD", self.session_spread, 0.0, 1.0)
        _within("ATLAS_RECALL_SESSION_DEPTH", self.session_depth, 0, 10)
        _within("ATLAS_RECALL_TURN_PRIOR", self.turn_prior, 0.0, 1.0)
        _within("ATLAS_RERANK_BUDGET_MS", self.rerank_budget_ms, 0, 60_000)

    @classmethod
    def from_env(cls, env: Any) -> RecallSettings:
        d = cls()
        return cls(
            max_k=env.int("ATLAS_RECALL_MAX_K", default=d.max_k),
            candidates=env.int("ATLAS_RECALL_CANDIDATES", default=d.candidates),
            rank_constant=env.int("ATLAS_RECALL_RANK_CONSTANT", default=d.rank_constant),
            context_boost=env.float("ATLAS_TURN_CONTEXT_BOOST", default=d.context_boost),
            session_spread=env.float("ATLAS_RECALL_SESSION_SPREAD", default=d.session_spread),
            session_depth=env.int("ATLAS_RECALL_SESSION_DEPTH", default=d.session_depth),
            turn_prior=env.float("ATLAS_RECALL_TURN_PRIOR", default=d.turn_prior),
            rerank_budget_ms=env.int("ATLAS_RERANK_BUDGET_MS", default=d.rerank_budget_ms),
        )


def _needs(kind_name: str, kind: str, **values: str) -> None:
    for name, value in values.items():
        if not value:
            raise ImproperlyConfigured(f"{kind_name}={kind} needs {name}.")


@dataclass(frozen=True)
class EmbedderSettings:
    """The embedding model (docs/models.md): which one, where its files are, how it runs.
    ``kind`` is ``local`` (all-MiniLM-L6-v2 int8, shipped), ``openai`` (an OpenAI-compatible
    ``/embeddings`` endpoint), ``es-inference`` (an Elasticsearch inference endpoint) or an
    offline candidate the lab registers (``memory.embedding.register_embedder``): the name is
    checked when the embedder loads, where the registered names are known."""

    kind: str = "local"  # ATLAS_EMBEDDER
    models_dir: str = ""  # ATLAS_MODELS_DIR: candidate jars, built and quantised ONNX files
    model_path: str = ""  # ATLAS_EMBEDDER_MODEL_PATH: a candidate's jar named directly
    threads: int = 1  # ATLAS_EMBEDDER_THREADS: onnxruntime threads per embedding
    url: str = ""  # ATLAS_EMBEDDER_URL (openai)
    api_key: str = ""  # ATLAS_EMBEDDER_API_KEY (openai)
    model: str = ""  # ATLAS_EMBEDDER_MODEL (openai: the model; es-inference: the endpoint id)
    dims: int = 384  # ATLAS_EMBEDDER_DIMS (openai, es-inference)
    timeout_s: float = 10.0  # ATLAS_EMBEDDER_TIMEOUT_S (openai)

    def __post_init__(self) -> None:
        _within("ATLAS_EMBEDDER_THREADS", self.threads, 1, 64)
        _within("ATLAS_EMBEDDER_DIMS", self.dims, 1, 8192)
        _within("ATLAS_EMBEDDER_TIMEOUT_S", self.timeout_s, 0.1, 600.0)
        if self.kind == "openai":
            _needs(
                "ATLAS_EMBEDDER",
                self.kind,
                ATLAS_EMBEDDER_URL=self.url,
                ATLAS_EMBEDDER_MODEL=self.model,
            )
        if self.kind == "es-inference":
            _needs("ATLAS_EMBEDDER", self.kind, ATLAS_EMBEDDER_MODEL=self.model)

    @classmethod
    def from_env(cls, env: Any, *, models_dir: str) -> EmbedderSettings:
        d = cls()
        return cls(
            kind=env.str("ATLAS_EMBEDDER", default=d.kind),
            models_dir=env.str("ATLAS_MODELS_DIR", default=models_dir),
            model_path=env.str("ATLAS_EMBEDDER_MODEL_PATH", default=d.model_path),
            threads=env.int("ATLAS_EMBEDDER_THREADS", default=d.threads),
            url=env.str("ATLAS_EMBEDDER_URL", default=d.url),
            api_key=env.str("ATLAS_EMBEDDER_API_KEY", default=d.api_key),
            model=env.str("ATLAS_EMBEDDER_MODEL", default=d.model),
            dims=env.int("ATLAS_EMBEDDER_DIMS", default=d.dims),
            timeout_s=env.float("ATLAS_EMBEDDER_TIMEOUT_S", default=d.timeout_s),
        )


RERANKERS = ("none", "http", "es-inference", "onnx")


@dataclass(frozen=True)
class RerankerSettings:
    """The reranker (docs/models.md): ``none``, ``http`` (a Cohere/Jina/TEI-compatible
    ``/rerank`` endpoint), ``es-inference`` (an Elasticsearch rerank endpoint) or ``onnx`` (a
    local ONNX cross-encoder, its tokenizer.json beside it or at ``tokenizer_path``). Its time
    budget is recall's (``RecallSettings.rerank_budget_ms``)."""

    kind: str = "none"  # ATLAS_RERANKER
    url: str = ""  # ATLAS_RERANKER_URL (http)
    api_key: str = ""  # ATLAS_RERANKER_API_KEY (http)
    model: str = ""  # ATLAS_RERANKER_MODEL (http: the model; es-inference: the endpoint id)
    model_path: str = ""  # ATLAS_RERANKER_MODEL_PATH (onnx: an .onnx file or its folder)
    tokenizer_path: str = ""  # ATLAS_RERANKER_TOKENIZER_PATH (onnx)
    max_tokens: int = 256  # ATLAS_RERANKER_MAX_TOKENS (onnx: a pair's length)
    batch: int = 32  # ATLAS_RERANKER_BATCH (onnx: pairs per run)
    threads: int = 2  # ATLAS_RERANKER_THREADS (onnx)

    def __post_init__(self) -> None:
        if self.kind not in RERANKERS:
            raise ImproperlyConfigured(
                f"ATLAS_RERANKER must be none, http, es-inference or onnx, not {self.kind!r}."
            )
        _within("ATLAS_RERANKER_MAX_TOKENS", self.max_tokens, 8, 8192)
        _within("ATLAS_RERANKER_BATCH", self.batch, 1, 1024)
        _within("ATLAS_RERANKER_THREADS", self.threads, 1, 64)
        if self.kind == "http":
            _needs("ATLAS_RERANKER", self.kind, ATLAS_RERANKER_URL=self.url)
        if self.kind == "es-inference":
            _needs("ATLAS_RERANKER", self.kind, ATLAS_RERANKER_MODEL=self.model)
        if self.kind == "onnx":
            _needs("ATLAS_RERANKER", self.kind, ATLAS_RERANKER_MODEL_PATH=self.model_path)

    @classmethod
    def from_env(cls, env: Any) -> RerankerSettings:
        d = cls()
        return cls(
            kind=env.str("ATLAS_RERANKER", default=d.kind),
            url=env.str("ATLAS_RERANKER_URL", default=d.url),
            api_key=env.str("ATLAS_RERANKER_API_KEY", default=d.api_key),
            model=env.str("ATLAS_RERANKER_MODEL", default=d.model),
            model_path=env.str("ATLAS_RERANKER_MODEL_PATH", default=d.model_path),
            tokenizer_path=env.str("ATLAS_RERANKER_TOKENIZER_PATH", default=d.tokenizer_path),
            max_tokens=env.int("ATLAS_RERANKER_MAX_TOKENS", default=d.max_tokens),
            batch=env.int("ATLAS_RERANKER_BATCH", default=d.batch),
            threads=env.int("ATLAS_RERANKER_THREADS", default=d.threads),
        )


@dataclass(frozen=True)
class ChatModelSettings:
    """The chat model (an OpenAI-compatible ``/chat/completions`` endpoint) that consolidation
    and the knowledge handoff's narration call; no base URL or no model: off."""

    base_url: str = ""  # ATLAS_CONSOLIDATION_BASE_URL
    model: str = ""  # ATLAS_CONSOLIDATION_MODEL
    api_key: str = ""  # ATLAS_CONSOLIDATION_API_KEY
    timeout_s: float = 60.0  # ATLAS_CONSOLIDATION_TIMEOUT_S: one HTTP call
    http_retries: int = 2  # ATLAS_CONSOLIDATION_HTTP_RETRIES: the client's own retries
    json_attempts: int = 2  # ATLAS_CONSOLIDATION_JSON_ATTEMPTS: asks until the reply parses

    def __post_init__(self) -> None:
        _within("ATLAS_CONSOLIDATION_TIMEOUT_S", self.timeout_s, 0.1, 3600.0)
        _within("ATLAS_CONSOLIDATION_HTTP_RETRIES", self.http_retries, 0, 10)
        _within("ATLAS_CONSOLIDATION_JSON_ATTEMPTS", self.json_attempts, 1, 10)

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)

    @classmethod
    def from_env(cls, env: Any) -> ChatModelSettings:
        d = cls()
        return cls(
            base_url=env.str("ATLAS_CONSOLIDATION_BASE_URL", default=d.base_url),
            model=env.str("ATLAS_CONSOLIDATION_MODEL", default=d.model),
            api_key=env.str("ATLAS_CONSOLIDATION_API_KEY", default=d.api_key),
            timeout_s=env.float("ATLAS_CONSOLIDATION_TIMEOUT_S", default=d.timeout_s),
            http_retries=env.int("ATLAS_CONSOLIDATION_HTTP_RETRIES", default=d.http_retries),
            json_attempts=env.int("ATLAS_CONSOLIDATION_JSON_ATTEMPTS", default=d.json_attempts),
        )


# Settings of recall methods measured and not kept (atlas-lab/lab/docs/recall-notebook.md):
# the variable -> what was kept, and the RecallPlan field the lab sets to try the method again.
RETIRED_SETTINGS = {
    "ATLAS_RECALL_LEXICAL_WEIGHT": (
        "plain RRF (1.0) was kept across corpora",
        "RecallPlan.lexical_weight",
    ),
    "ATLAS_RECALL_WINDOW_DECAY": (
        "decay inside the time-window legs was kept",
        "RecallPlan.window_decay",
    ),
    "ATLAS_RECALL_TIME_ANCHOR": (
        "the history anchor (time words read as of an old history's newest memory) was kept",
        "RecallPlan.time_anchor",
    ),
}


def refuse_retired(environ: Mapping[str, str]) -> None:
    """Stop start-up when a retired recall setting is still in the environment: silently
    ignoring it would run another recall than the operator asked for."""
    for name, (kept, field) in RETIRED_SETTINGS.items():
        if name in environ or f"{name}_FILE" in environ:
            raise ImproperlyConfigured(
                f"{name} is retired: {kept} (docs/recall-quality.md). Remove it from the "
                f"environment; the lab measures the alternatives through {field}."
            )
