"""The MPNet graph builder against a plain numpy forward pass of the same (small, random)
weights, and the pieces it relies on. The real model is checked under ``-m models``."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import numpy as np
import onnxruntime as ort

from lab.mpnet import HEADS, mpnet_onnx, read_safetensors, relative_buckets

HIDDEN, INNER, VOCAB, POSITIONS, LAYERS = 24, 48, 40, 30, 2


def small_model(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def t(*shape: int) -> np.ndarray:
        return rng.normal(0, 0.3, shape).astype(np.float32)

    weights = {
        "embeddings.word_embeddings.weight": t(VOCAB, HIDDEN),
        "embeddings.position_embeddings.weight": t(POSITIONS, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + t(HIDDEN),
        "embeddings.LayerNorm.bias": t(HIDDEN),
        "encoder.relative_attention_bias.weight": t(32, HEADS),
    }
    for n in range(LAYERS):
        p = f"encoder.layer.{n}."
        for name in ("q", "k", "v", "o"):
            weights[f"{p}attention.attn.{name}.weight"] = t(HIDDEN, HIDDEN)
            weights[f"{p}attention.attn.{name}.bias"] = t(HIDDEN)
        weights[f"{p}intermediate.dense.weight"] = t(INNER, HIDDEN)
        weights[f"{p}intermediate.dense.bias"] = t(INNER)
        weights[f"{p}output.dense.weight"] = t(HIDDEN, INNER)
        weights[f"{p}output.dense.bias"] = t(HIDDEN)
        for norm in ("attention.LayerNorm", "output.LayerNorm"):
            weights[f"{p}{norm}.weight"] = 1 + t(HIDDEN)
            weights[f"{p}{norm}.bias"] = t(HIDDEN)
    return weights


def reference(w: dict[str, np.ndarray], ids: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
    """MPNet written out directly (as Hugging Face's MPNetModel computes it), one text at a
    time, real tokens only: no padding to handle."""

    def norm(x: np.ndarray, prefix: str) -> Any:
        mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-5) * w[prefix + ".weight"] + w[prefix + ".bias"]

    def dense(x: np.ndarray, prefix: str) -> Any:
        return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]

    def bucket(i: int, j: int) -> int:  # relative_position_bucket(j - i), bidirectional
        n = i - j
        result = 16 if n < 0 else 0
        n = abs(n)
        if n < 8:
            return result + n
        return result + min(15, 8 + int(math.log(n / 8) / math.log(128 / 8) * 8))

    outputs = []
    for row, row_mask in zip(ids, mask, strict=True):
        tokens = row[row_mask == 1]
        count = len(tokens)
        x = w["embeddings.word_embeddings.weight"][tokens]
        x = x + w["embeddings.position_embeddings.weight"][np.arange(count) + 2]
        x = norm(x, "embeddings.LayerNorm")
        bias = np.array(
            [
                [w["encoder.relative_attention_bias.weight"][bucket(i, j)] for j in range(count)]
                for i in range(count)
            ]
        ).transpose(2, 0, 1)
        size = HIDDEN // HEADS
        for n in range(LAYERS):
            p = f"encoder.layer.{n}."
            heads = []
            for h in range(HEADS):
                cut = slice(h * size, (h + 1) * size)
                q = dense(x, p + "attention.attn.q")[:, cut]
                k = dense(x, p + "attention.attn.k")[:, cut]
                v = dense(x, p + "attention.attn.v")[:, cut]
                scores = q @ k.T / math.sqrt(size) + bias[h]
                probs = np.exp(scores - scores.max(-1, keepdims=True))
                heads.append(probs / probs.sum(-1, keepdims=True) @ v)
            x = norm(dense(np.hstack(heads), p + "attention.attn.o") + x, p + "attention.LayerNorm")
            inner = dense(x, p + "intermediate.dense")
            gelu = 0.5 * inner * (1 + np.vectorize(math.erf)(inner / math.sqrt(2)))
            x = norm(dense(gelu, p + "output.dense") + x, p + "output.LayerNorm")
        outputs.append(x)
    return outputs


def test_the_graph_computes_mpnet():
    weights = small_model()
    session = ort.InferenceSession(mpnet_onnx(weights, max_tokens=POSITIONS - 2))
    rng = np.random.default_rng(1)
    ids = rng.integers(3, VOCAB, size=(3, 20))
    mask = np.ones_like(ids)
    mask[1, 12:] = 0  # a shorter text, padded
    mask[2, 5:] = 0

    hidden = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]

    for row, expected in enumerate(reference(weights, ids, mask)):
        got = hidden[row][: len(expected)]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_relative_buckets_follow_mpnet():
    buckets = relative_buckets(300)
    # [query i, key j]: keys before the query (i > j) count up from 0, keys after from 16;
    # exact within 8, log-spaced to 128, then the last bucket.
    assert [buckets[i, 0] for i in (0, 1, 7, 8, 12, 16, 127, 299)] == [0, 1, 7, 8, 9, 10, 15, 15]
    assert [buckets[0, j] for j in (1, 7, 8, 299)] == [17, 23, 24, 31]


def test_safetensors_are_read_as_views():
    tensors: dict[str, np.ndarray] = {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.array([5], np.int64),
    }
    header, blob = {}, b""
    for name, value in tensors.items():
        data = value.tobytes()
        header[name] = {
            "dtype": "F32" if value.dtype == np.float32 else "I64",
            "shape": list(value.shape),
            "data_offsets": [len(blob), len(blob) + len(data)],
        }
        blob += data
    encoded = json.dumps(header).encode()
    read = read_safetensors(struct.pack("<Q", len(encoded)) + encoded + blob)

    assert set(read) == {"a", "b"}
    np.testing.assert_array_equal(read["a"], tensors["a"])
    np.testing.assert_array_equal(read["b"], tensors["b"])
