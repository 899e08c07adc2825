"""Rerankers: reorder the fused pool by query-passage relevance, within a time budget.

No offline cross-encoder ships inside any registry package today (docs/models.md has the survey),
so the default is ``none`` and recall reports ``reranked: false``. Options: ``http`` (a Cohere /
Jina / text-embeddings-inference compatible ``POST /rerank``), ``es-inference`` (an Elasticsearch
``rerank`` inference endpoint) and ``onnx`` (a local cross-encoder in ONNX form, from files the
operator provides). Whatever fails or runs past its budget, recall keeps the fused order and
says so.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx2 as httpx
import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from atlas_platform.exceptions import Unavailable


class RerankError(Unavailable):
    """The reranker failed (callers see only this; recall keeps the fused order)."""

    code = "reranker_unavailable"
    public_message = "The reranker is unavailable. Retry later."


class Reranker(ABC):
    name: str

    @abstractmethod
    def scores(self, query: str, passages: Sequence[str], *, timeout_s: float) -> list[float]:
        """One relevance score per passage (higher is better)."""


class HttpReranker(Reranker):
    """``POST {url}`` with ``{"model", "query", "documents"}``; answers
    ``{"results": [{"index", "relevance_score"}]}`` (Cohere / Jina) or a bare list of
    ``{"index", "score"}`` (text-embeddings-inference)."""

    def __init__(self, *, url: str, api_key: str = "", model: str = "") -> None:
        if not url:
            raise ImproperlyConfigured("ATLAS_RERANKER=http needs ATLAS_RERANKER_URL.")
        self.url = url
        self.model = model
        self.name = f"http:{model or url}"
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def scores(self, query: str, passages: Sequence[str], *, timeout_s: float) -> list[float]:
        payload: dict[str, Any] = {
            "query": query,
            "documents": list(passages),
            "texts": list(passages),
        }
        if self.model:
            payload["model"] = self.model
        try:
            response = httpx.post(self.url, json=payload, headers=self.headers, timeout=timeout_s)
            response.raise_for_status()
            body = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise RerankError(f"rerank endpoint failed: {exc}") from exc
        rows = body["results"] if isinstance(body, dict) else body
        out = [float("-inf")] * len(passages)
        try:
            for row in rows:
                out[int(row["index"])] = float(row.get("relevance_score", row.get("score")))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise RerankError(f"rerank endpoint answered an unexpected shape: {exc}") from exc
        return out


class ElasticsearchInferenceReranker(Reranker):
    def __init__(self, *, inference_id: str) -> None:
        from atlas_platform.cluster import require_cluster

        self.client = require_cluster().client
        self.inference_id = inference_id
        self.name = f"es-inference:{inference_id}"

    def scores(self, query: str, passages: Sequence[str], *, timeout_s: float) -> list[float]:
        try:
            body: Any = self.client.options(request_timeout=timeout_s).inference.rerank(
                inference_id=self.inference_id, query=query, input=list(passages)
            )
            out = [float("-inf")] * len(passages)
            for row in body["rerank"]:
                out[int(row["index"])] = float(row["relevance_score"])
        except Exception as exc:
            raise RerankError(f"inference rerank failed: {exc}") from exc
        return out


class OnnxCrossEncoderReranker(Reranker):
    """A BERT-style cross-encoder (query and passage as one pair, one logit out) run by
    onnxruntime on the CPU, e.g. an ms-marco-MiniLM export.

    Pairs are tokenised with the passage truncated to ``max_tokens`` (the query is kept), sorted
    by length so each batch pads little, scored ``batch_size`` at a time and put back in order.
    Between batches the deadline is checked, so a timed-out call stops using the CPU. The
    session is shared: runs are serialised, which keeps latency predictable on 2 cores.
    """

    def __init__(
        self,
        *,
        model_path: str,
        tokenizer_path: str = "",
        max_tokens: int = 256,
        batch_size: int = 32,
        threads: int = 2,
        name: str = "",
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from memory.embedding import session_options

        model = Path(model_path)
        if model.is_dir():
            model = model / "model.onnx"
        tokenizer = Path(tokenizer_path) if tokenizer_path else model.parent / "tokenizer.json"
        if not model.is_file() or not tokenizer.is_file():
            raise ImproperlyConfigured(
                "ATLAS_RERANKER=onnx needs ATLAS_RERANKER_MODEL_PATH (an .onnx file, or a folder "
                f"with model.onnx) and a tokenizer.json beside it: {model}, {tokenizer}."
            )
        self.name = name or f"onnx:{model.parent.name or model.name}"
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token name
        self.tokenizer.enable_truncation(max_length=max_tokens, strategy="only_second")
        self.session = ort.InferenceSession(
            str(model), session_options(threads), providers=["CPUExecutionProvider"]
        )
        self.input_names = {i.name for i in self.session.get_inputs()}
        self._lock = threading.Lock()

    def scores(self, query: str, passages: Sequence[str], *, timeout_s: float) -> list[float]:
        deadline = time.perf_counter() + timeout_s
        order = sorted(range(len(passages)), key=lambda i: len(passages[i]))
        out = [float("-inf")] * len(passages)
        for start in range(0, len(order), self.batch_size):
            if time.perf_counter() > deadline:
                raise RerankError("local cross-encoder ran past its budget")
            batch = order[start : start + self.batch_size]
            scores = self._score_batch(query, [passages[i] for i in batch])
            for index, score in zip(batch, scores, strict=True):
                out[index] = score
        return out

    def _score_batch(self, query: str, passages: list[str]) -> list[float]:
        try:
            encodings = self.tokenizer.encode_batch([(query, p) for p in passages])
            feeds = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            }
            if "token_type_ids" in self.input_names:
                feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            with self._lock:
                logits = np.asarray(self.session.run(None, feeds)[0], dtype=np.float32)
        except Exception as exc:
            raise RerankError(f"local cross-encoder failed: {exc}") from exc
        # One logit per pair; a two-class head scores with its "relevant" column.
        column = logits.reshape(len(passages), -1)[:, -1]
        return [float(x) for x in column]


@dataclass
class RerankOutcome:
    order: list[int]  # indices into the passages, best first
    reranked: bool
    reranker: str | None
    took_ms: float
    error: str | None = None


_pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="atlas-rerank")


def rerank(
    reranker: Reranker | None, query: str, passages: Sequence[str], *, budget_ms: int
) -> RerankOutcome:
    """Rerank within ``budget_ms``; on error or timeout keep the given order."""
    identity = list(range(len(passages)))
    if reranker is None or not passages:
        return RerankOutcome(identity, False, None, 0.0)
    started = time.perf_counter()
    budget_s = budget_ms / 1000.0
    future = _pool.submit(reranker.scores, query, passages, timeout_s=budget_s)
    try:
        scores = future.result(timeout=budget_s)
    except concurrent.futures.TimeoutError:
        return RerankOutcome(identity, False, reranker.name, _ms(started), "timeout")
    except RerankError as exc:
        return RerankOutcome(identity, False, reranker.name, _ms(started), str(exc))
    order = sorted(identity, key=lambda i: (-scores[i], i))
    return RerankOutcome(order, True, reranker.name, _ms(started))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 2)


@cache
def default_reranker() -> Reranker | None:
    kind = settings.ATLAS_RERANKING.kind
    if kind == "none":
        return None
    if kind == "http":
        return HttpReranker(
            url=settings.ATLAS_RERANKING.url,
            api_key=settings.ATLAS_RERANKING.api_key,
            model=settings.ATLAS_RERANKING.model,
        )
    if kind == "es-inference":
        return ElasticsearchInferenceReranker(inference_id=settings.ATLAS_RERANKING.model)
    if kind == "onnx":
        return OnnxCrossEncoderReranker(
            model_path=settings.ATLAS_RERANKING.model_path,
            tokenizer_path=settings.ATLAS_RERANKING.tokenizer_path,
            max_tokens=settings.ATLAS_RERANKING.max_tokens,
            batch_size=settings.ATLAS_RERANKING.batch,
            threads=settings.ATLAS_RERANKING.threads,
        )
    raise ImproperlyConfigured(
        f"ATLAS_RERANKER must be none, http, es-inference or onnx, not {kind!r}."
    )
