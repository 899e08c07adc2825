"""Rerankers: reorder the fused pool by query-passage relevance, within a time budget.

No offline cross-encoder ships inside any registry package today (see CONTRIBUTING), so the
default is ``none`` and recall reports ``reranked: false``. Options: ``http`` (a Cohere / Jina /
text-embeddings-inference compatible ``POST /rerank``) and ``es-inference`` (an Elasticsearch
``rerank`` inference endpoint). Whatever fails or runs past its budget, recall keeps the fused
order and says so.
"""

from __future__ import annotations

import concurrent.futures
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx2 as httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class RerankError(Exception):
    """The reranker failed (callers see only this)."""


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
    kind = settings.ATLAS_RERANKER
    if kind == "none":
        return None
    if kind == "http":
        return HttpReranker(
            url=settings.ATLAS_RERANKER_URL,
            api_key=settings.ATLAS_RERANKER_API_KEY,
            model=settings.ATLAS_RERANKER_MODEL,
        )
    if kind == "es-inference":
        return ElasticsearchInferenceReranker(inference_id=settings.ATLAS_RERANKER_MODEL)
    raise ImproperlyConfigured(f"ATLAS_RERANKER must be none, http or es-inference, not {kind!r}.")
