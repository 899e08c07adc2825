"""The local ONNX cross-encoder reranker's plumbing, on a tiny ONNX graph built here.

No cross-encoder ships inside a registry package (docs/models.md), so the model under test is
one whose answer is known: its logit for a (query, passage) pair is the number of passage tokens
the model was fed. That checks what the reranker itself does: pair encoding, truncation of the
passage only, length-sorted batching put back in order, the deadline, and the settings.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from pathlib import Path

import numpy as np
import onnx
import pytest
from django.core.exceptions import ImproperlyConfigured
from onnx import TensorProto, helper
from tokenizers import Tokenizer

from memory.embedding import MINILM_TOKENIZER
from memory.rerank import OnnxCrossEncoderReranker, RerankError, default_reranker, rerank


def passage_token_counter(path: Path) -> Path:
    """logits[b, 0] = sum over tokens of token_type_ids * attention_mask (passage tokens)."""
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    nodes = [
        helper.make_node("Mul", ["token_type_ids", "attention_mask"], ["passage"]),
        helper.make_node("Cast", ["passage"], ["passage_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["passage_f", "axes"], ["logits"], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "counter", inputs, [output], initializer=[axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path / "model.onnx"))
    (path / "tokenizer.json").write_bytes(MINILM_TOKENIZER.read_bytes())
    return path


@pytest.fixture
def counter(tmp_path: Path) -> Path:
    return passage_token_counter(tmp_path / "counter")


def passage_tokens(text: str) -> int:
    tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return len(tokenizer.encode(text, add_special_tokens=False).ids) + 1  # tokens and [SEP]


def test_scores_come_back_in_the_callers_order_across_batches(counter):
    reranker = OnnxCrossEncoderReranker(model_path=str(counter), batch_size=4)
    passages = [" ".join(["word"] * n) for n in (7, 1, 12, 3, 9, 2, 5, 11, 4, 8)]

    scores = reranker.scores("a short query", passages, timeout_s=10)

    assert scores == [float(passage_tokens(p)) for p in passages]


def test_the_passage_is_truncated_and_the_query_kept(counter):
    reranker = OnnxCrossEncoderReranker(model_path=str(counter / "model.onnx"), max_tokens=32)
    query = "where did I leave the spare key"  # 7 tokens, + [CLS] and [SEP]
    long_passage = " ".join(["pot"] * 100)

    (score,) = reranker.scores(query, [long_passage], timeout_s=10)

    assert score == 32 - (7 + 2)


def test_rerank_orders_by_the_models_logits(counter):
    reranker = OnnxCrossEncoderReranker(model_path=str(counter))
    passages = ["tea", "the spare key is under the blue pot by the door", "a key"]

    outcome = rerank(reranker, "spare key", passages, budget_ms=5000)

    assert outcome.reranked and outcome.order == [1, 2, 0]
    assert outcome.reranker == "onnx:counter"


def test_a_spent_budget_stops_between_batches(counter):
    reranker = OnnxCrossEncoderReranker(model_path=str(counter), batch_size=2)

    with pytest.raises(RerankError):
        reranker.scores("q", ["a", "b", "c"], timeout_s=0)


def test_concurrent_callers_each_get_their_own_scores(counter):
    reranker = OnnxCrossEncoderReranker(model_path=str(counter), batch_size=8)
    jobs = [[" ".join(["w"] * (n + k)) for n in range(20)] for k in range(8)]

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda ps: reranker.scores("q", ps, timeout_s=30), jobs))

    for passages, scores in zip(jobs, results, strict=True):
        assert np.allclose(scores, [passage_tokens(p) for p in passages])


def test_settings_select_it_and_missing_files_fail_at_load(counter, settings, tmp_path):
    settings.ATLAS_RERANKING = dataclasses.replace(
        settings.ATLAS_RERANKING, kind="onnx", model_path=str(counter)
    )
    default_reranker.cache_clear()
    try:
        reranker = default_reranker()
        assert isinstance(reranker, OnnxCrossEncoderReranker)
        # Its own thread count (two: a batch of long pairs inside a budget), not the embedder's.
        assert settings.ATLAS_EMBEDDING.threads == 1
        assert reranker.session.get_session_options().intra_op_num_threads == 2
        settings.ATLAS_RERANKING = dataclasses.replace(
            settings.ATLAS_RERANKING, model_path=str(tmp_path / "nowhere")
        )
        default_reranker.cache_clear()
        with pytest.raises(ImproperlyConfigured):
            default_reranker()
    finally:
        default_reranker.cache_clear()
