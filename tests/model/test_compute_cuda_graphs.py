"""A step replayed as a CUDA graph: the host launches it in one call, so the per-kernel dispatch
that overlaps the GPU's work is gone (compute.launch_s, compute.overlapped_s); the kernels'
GPU-side cost stays. A graph speeds up only a step whose host is the slower side."""

from __future__ import annotations

import dataclasses

import pytest
from model_fixtures import make_build, make_workload

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Precision
from dlrig.model import compute, estimate
from dlrig.model.calibration import default_calibration
from dlrig.model.layers import layer_work
from dlrig.model.rates import matmul_peak


def _step_s(graphs: bool, factors: compute.ComputeFactors, batch: int = 8) -> float:
    job = make_workload("bert-large-squad", batch_size=batch, cuda_graphs=graphs)
    gpu = builtin_catalog().find(GPU, "A100 SXM4 40GB")
    peak, path, _ = matmul_peak(gpu, Precision.FP16)
    rates = compute.Rates(peak, path.value, gpu.memory_bandwidth_gb_s)
    return sum(
        compute.gpu_step_s(
            layer_work(job), job, batch, rates, factors, optimizer_params=job.params,
            sixteen_bit=True,
        )
    )  # fmt: skip


def test_a_graph_removes_the_hosts_dispatch_and_nothing_else() -> None:
    """BERT-large fp16 launches (27 x 24 + 14) x 3 = 1,986 kernels a step (test_layers):
    graphed, the step is the GPU's work alone, what the eager step is with no host time; eager,
    the host's launches overlap that work (compute.overlapped_s)."""
    cal = default_calibration().compute
    gpu_only = _step_s(False, dataclasses.replace(cal, host_kernel_s=0.0))
    assert _step_s(True, cal) == pytest.approx(gpu_only)
    host = 1986 * cal.host_kernel_s
    assert _step_s(False, cal) == pytest.approx(
        compute.overlapped_s(gpu_only, host, cal.host_overlap_exponent)
    )


def test_a_graphed_step_leaves_no_host_launches_for_a_straggler_to_wait_on() -> None:
    """compute.launch_s is the host's share, which the data-parallel straggler term weighs
    (interconnect.straggler_wait_s): none when one call launches the step."""
    cal = default_calibration().compute
    eager = make_workload("gpt2")
    graphed = make_workload("gpt2", cuda_graphs=True)
    assert compute.launch_s(layer_work(eager), eager, 8, cal, sixteen_bit=True) > 0.0
    assert compute.launch_s(layer_work(graphed), graphed, 8, cal, sixteen_bit=True) == 0.0


def test_estimate_says_what_the_graph_saves() -> None:
    """An estimate of a graphed job runs no slower than the eager one on the same build and
    says what the host no longer spends: its fitted seconds per kernel beside the GPU's."""
    build = make_build(None, gpus=[{"model": "GeForce RTX 3090"}])
    eager = estimate(build, make_workload("gpt2"))
    graphed = estimate(build, make_workload("gpt2", cuda_graphs=True))
    assert graphed.step_time_s <= eager.step_time_s
    note = next(a for a in graphed.assumptions if a.startswith("CUDA graphs"))
    cal = default_calibration().compute
    assert f"it spends {cal.host_kernel_s * 1e6:.0f} us on each" in note
    assert not any(a.startswith("CUDA graphs") for a in eager.assumptions)


def test_a_graphed_decode_step_waits_only_on_its_weights() -> None:
    """Decoding Llama 3 8B at batch 1 reads every weight each token; graphed, its tiny kernels
    add nothing (Llama 3.1 8B's graphed decode step, 5.1 ms on an H100 SXM5, is its 16 GB at
    the card's ~3 TB/s), where eager ones add their host dispatch."""
    build = make_build(None, gpus=[{"model": "H100 SXM5 80GB"}])
    keys = dict(batch_size=1)
    eager = estimate(build, make_workload("llama-3-8b-inference", **keys))
    graphed = estimate(build, make_workload("llama-3-8b-inference", cuda_graphs=True, **keys))
    assert graphed.step_time_s < eager.step_time_s
    assert graphed.step_time_s == pytest.approx(16.06e9 / 2.97e12, rel=0.15)
