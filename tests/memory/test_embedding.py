"""The embedders: the offline default model, and an OpenAI-compatible endpoint faked at its HTTP
boundary (a loopback server speaking the embeddings API)."""

from __future__ import annotations

import dataclasses
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from memory import embedding
from memory.embedding import (
    Embedder,
    EmbeddingError,
    MiniLMOnnxEmbedder,
    OpenAIEmbedder,
    default_embedder,
    load_embedder,
)


def test_the_default_model_loads_offline_and_embeds_meaningfully():
    model = default_embedder()
    assert isinstance(model, MiniLMOnnxEmbedder) and model.dims == 384

    query, near, far = model.embed(
        [
            "where does Sarah live now?",
            "Sarah moved from Bristol to Edinburgh",
            "Victorian walls are thick",
        ]
    )

    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-4)
    assert float(query @ near) > float(query @ far) + 0.2


def test_batches_match_single_encodes():
    model = default_embedder()
    texts = [f"memory number {n} about tea" for n in range(40)]

    batch = model.embed(texts)

    assert batch.shape == (40, 384)
    # int8 compute scales activations per run: the default runs one text at a time, so a
    # vector does not depend on what it was embedded with.
    assert np.allclose(batch[33], model.embed([texts[33]])[0], atol=1e-6)


def test_queries_embed_like_passages_for_a_model_without_prefixes():
    model = default_embedder()

    assert model.symmetric
    assert np.allclose(model.embed_query("tea"), model.embed(["tea"])[0], atol=1e-6)


def test_a_model_with_a_query_prefix_is_not_symmetric():
    """A turn reuses its stored (passage) vector as its recall's query vector only when the
    two agree; a prefixed model must embed the query itself."""
    model = default_embedder()
    prefixed = MiniLMOnnxEmbedder.__new__(MiniLMOnnxEmbedder)
    prefixed.__dict__.update(model.__dict__, query_prefix="query: ", passage_prefix="passage: ")

    assert not prefixed.symmetric
    assert not np.allclose(prefixed.embed_query("tea"), prefixed.embed(["tea"])[0], atol=1e-3)


def test_embeddings_run_on_one_thread_unless_configured(settings):
    """A server runs many embeddings at once: one thread each costs less CPU."""
    default = default_embedder()
    settings.ATLAS_EMBEDDING = dataclasses.replace(settings.ATLAS_EMBEDDING, threads=2)
    configured = load_embedder("local")

    assert isinstance(default, MiniLMOnnxEmbedder) and isinstance(configured, MiniLMOnnxEmbedder)
    assert default.session.get_session_options().intra_op_num_threads == 1
    assert configured.session.get_session_options().intra_op_num_threads == 2


def test_int8_compute_gives_the_vectors_of_the_fp32_run(settings, tmp_path):
    """The default runs the package's weights quantised for int8 compute; the same model run
    in fp32 (the lab's ``minilm-l6-int8`` candidate) must give the same vectors for retrieval
    purposes."""
    texts = ["where does Sarah live now?", "Sarah moved from Bristol to Edinburgh", "tea"]

    int8 = default_embedder().embed(texts)
    fp32 = MiniLMOnnxEmbedder(threads=1).embed(texts)

    assert default_embedder().name == "all-MiniLM-L6-v2-dq8"
    agreement = [float(a @ b) for a, b in zip(int8, fp32, strict=True)]
    assert min(agreement[:2]) > 0.99  # sentences
    assert agreement[2] > 0.98  # a lone short word drifts most (~0.988)


def test_the_quantised_model_is_made_once_and_kept(settings, tmp_path, monkeypatch):
    from onnxruntime import quantization

    settings.ATLAS_EMBEDDING = dataclasses.replace(
        settings.ATLAS_EMBEDDING, models_dir=str(tmp_path / "models")
    )
    made = load_embedder("local")
    kept = list((tmp_path / "models").glob("dq8-*.onnx"))
    assert len(kept) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("quantised again although a kept copy exists")

    monkeypatch.setattr(quantization, "quantize_dynamic", refuse)
    again = load_embedder("local")
    assert np.allclose(again.embed(["tea"]), made.embed(["tea"]), atol=1e-6)


def test_a_read_only_models_dir_still_loads_the_default(settings, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    settings.ATLAS_EMBEDDING = dataclasses.replace(
        settings.ATLAS_EMBEDDING, models_dir=str(locked / "models")
    )
    try:
        model = load_embedder("local")
        assert model.embed(["tea"]).shape == (1, 384)
    finally:
        locked.chmod(0o700)


def test_an_unknown_embedder_name_lists_the_choices():
    with pytest.raises(ImproperlyConfigured, match=r"one of local, .*openai, es-inference"):
        load_embedder("bert-huge")


class _Constant(Embedder):
    name = "constant"
    dims = 2

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def embed(self, texts):
        return np.ones((len(texts), 2), dtype=np.float32) / np.sqrt(2)


def test_a_registered_embedder_is_selectable_by_its_name(settings, monkeypatch):
    monkeypatch.setattr(embedding, "_REGISTERED", dict(embedding._REGISTERED))
    settings.ATLAS_EMBEDDING = dataclasses.replace(settings.ATLAS_EMBEDDING, threads=3)
    embedding.register_embedder("constant-two", _Constant)

    model = load_embedder("constant-two")

    assert isinstance(model, _Constant) and model.threads == 3
    assert "constant-two" in embedding.registered_embedders()
    with pytest.raises(ImproperlyConfigured, match="constant-two"):
        load_embedder("constant-three")  # the error lists what is registered


def test_a_built_in_embedder_cannot_be_replaced(monkeypatch):
    monkeypatch.setattr(embedding, "_REGISTERED", dict(embedding._REGISTERED))
    for name in ("local", "openai", "es-inference"):
        with pytest.raises(ValueError, match="built-in"):
            embedding.register_embedder(name, _Constant)
    assert not {"local", "openai", "es-inference"} & set(embedding.registered_embedders())


@pytest.fixture
def fake_openai():
    calls: list[dict[str, object]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            calls.append(body)
            if body["input"] == ["boom"]:
                self.send_response(500)
                self.end_headers()
                return
            data = [
                {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0]}
                for i, t in enumerate(body["input"])
            ]
            payload = json.dumps(
                {
                    "object": "list",
                    "data": data[::-1],
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", calls
    server.shutdown()


def test_an_openai_compatible_endpoint_is_used_in_order_and_normalised(fake_openai):
    url, calls = fake_openai
    model = OpenAIEmbedder(base_url=url, api_key="k", model="tiny", dims=3, timeout_s=5)

    vectors = model.embed(["a", "abc"])

    assert calls[0]["model"] == "tiny" and calls[0]["input"] == ["a", "abc"]
    assert vectors.shape == (2, 3)
    assert vectors[1][0] > vectors[0][0]  # answers were reversed on the wire; order restored
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


def test_endpoint_failures_and_wrong_dimensions_are_embedding_errors(fake_openai):
    url, _ = fake_openai

    with pytest.raises(EmbeddingError):
        OpenAIEmbedder(base_url=url, api_key="k", model="tiny", dims=3, timeout_s=5).embed(["boom"])
    with pytest.raises(EmbeddingError):
        OpenAIEmbedder(base_url=url, api_key="k", model="tiny", dims=4, timeout_s=5).embed(["a"])
