"""Dropout and the loss as the job runs them: eval mode (inference) runs neither, and a model
trained with dropout p = 0 launches no dropout kernels (torch.nn.functional.dropout returns its
input when p is 0 or `training` is False: aten/src/ATen/native/Dropout.cpp `_dropout`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dlrig.model import layers
from dlrig.workloads import resolve_workload
from dlrig.workloads.loader import zoo_document
from dlrig.workloads.model import Workload


def make_workload(zoo_name: str, model: dict[str, Any] | None = None, **keys: Any) -> Workload:
    """A zoo workload with some keys, and some of its model block's, overridden."""
    doc = copy.deepcopy(zoo_document(zoo_name))
    doc.update(keys)
    doc["model"] = {**doc["model"], **(model or {})}
    return resolve_workload(doc, "test")


def test_a_bert_layer_without_dropout_moves_and_launches_none() -> None:
    """BERT-large (24 layers, h 1024, 16 heads, 384 tokens) trained with `dropout: false`: each
    layer's two hidden dropouts (2 x 2.5h a token, 2 kernels each) and the attention
    probabilities' (2.5 score passes each way, 2 kernels) are gone: 6 kernels a layer, 5h a
    token, 2.5 of the 10.5 forward and 11.5 backward score passes (layers.py's counts)."""
    on = layers.layer_work(make_workload("bert-large-squad", precision="fp32"))
    off = layers.layer_work(
        make_workload("bert-large-squad", precision="fp32", model={"dropout": False})
    )
    assert on.kernels_forward - off.kernels_forward == pytest.approx(24 * 6.0)
    assert on.pointwise_elems - off.pointwise_elems == pytest.approx(24 * 5.0 * 1024 * 384)
    heads_scores = 24 * 16 * 384 * 384
    assert on.score_elems == pytest.approx(10.5 * heads_scores)
    assert off.score_elems == pytest.approx(8.0 * heads_scores)
    assert off.score_backward_elems == pytest.approx(9.0 * heads_scores)


def test_inference_runs_no_dropout_and_no_loss() -> None:
    """An inference pass is eval mode: the same counts as `dropout: false`, and no loss over the
    logits (LOSS_FP32_PASSES 7/3 a logit in training, none here)."""
    train = make_workload("gpt2", precision="fp32", model={"dropout": True})
    infer = make_workload("gpt2", precision="fp32", mode="inference", model={"dropout": True})
    assert layers.layer_work(train).loss_fp32_elems == pytest.approx(7.0 / 3.0 * 50257 * 1024)
    assert layers.layer_work(infer).loss_fp32_elems == 0.0
    assert not layers.runs_dropout(infer) and layers.runs_dropout(train)
