"""Serving on a build of several nodes: the copies of the model fill every node (a copy's
tensor parallelism stays within one node's links), so two identical nodes serve twice the
users at twice the rate, and the energy per output token, both nodes' draw over both nodes'
tokens, is one node's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.result import Estimate
from dlrig.workloads import load_workload

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "builds" / "8x-h100-hgx-server.yaml"


def _estimate(nodes: int, users: int) -> Estimate:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["nodes"] = nodes
    if nodes == 1:
        doc.pop("network")
    build = resolve_build(doc, "test", load_catalog(None))
    w = load_workload("llama-3.1-8b-serve")
    assert w.serve is not None
    return estimate(build, replace(w, serve=replace(w.serve, users=users)))


def test_two_nodes_serve_twice_one_nodes_users_at_twice_the_rate() -> None:
    one, two = _estimate(1, 1500), _estimate(2, 3000)
    assert one.serving is not None and two.serving is not None
    assert two.serving.gpus == 16 and one.serving.gpus == 8
    assert two.serving.max_users_fit == 2 * one.serving.max_users_fit
    assert two.serving.tokens_per_s_total == pytest.approx(2 * one.serving.tokens_per_s_total)
    assert two.serving.tpot_s == pytest.approx(one.serving.tpot_s)
    assert two.serving.parallelism.endswith("over 2 nodes")
    assert two.kwh_per_million_tokens == pytest.approx(one.kwh_per_million_tokens, rel=1e-6)


def test_a_batch_on_two_nodes_counts_both_nodes_copies() -> None:
    """100,000 requests on the example's two nodes of eight H100s: the batch's chosen layout,
    one GPU a copy, is sixteen copies, and the assumptions say so."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    build = resolve_build(doc, "test", load_catalog(None))
    w = load_workload("llama-3.1-8b-serve")
    assert w.serve is not None
    est = estimate(build, replace(w, serve=replace(w.serve, users=100_000, requests=100_000)))
    assert est.serving is not None and est.serving.batch is not None
    assert any("16 copies of 1 GPU" in a for a in est.assumptions)
    assert est.serving.parallelism == "16 copies of the model, one per GPU over 2 nodes"
