"""A step replayed as a CUDA graph: the host's per-kernel dispatch is gone, the kernels' GPU-side
cost stays (compute.kernel_s, HOST_DISPATCH_S)."""

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


def _step_s(graphs: bool, factors: compute.ComputeFactors) -> float:
    job = make_workload("bert-large-squad", batch_size=8, cuda_graphs=graphs)
    gpu = builtin_catalog().find(GPU, "A100 SXM4 40GB")
    peak, path, _ = matmul_peak(gpu, Precision.FP16)
    rates = compute.Rates(peak, path.value, gpu.memory_bandwidth_gb_s)
    return compute.gpu_step_s(
        layer_work(job), job, 8, rates, factors, optimizer_params=job.params, sixteen_bit=True
    )[0]


def test_a_graph_saves_the_hosts_dispatch_of_every_kernel() -> None:
    """BERT-large fp16 at batch 8 launches (27 x 24 + 14) x 3 = 1,986 kernels a step
    (test_layers); replayed as a graph each costs 12 us less, the host dispatch of an eager
    kernel measured on Llama 3.1 8B's decode step (8.4 ms eager, 5.1 ms graphed, 686 kernels:
    compute.HOST_DISPATCH_S)."""
    cal = default_calibration().compute
    saved = _step_s(False, cal) - _step_s(True, cal)
    assert saved == pytest.approx(1986 * 12e-6)
    assert pytest.approx(12e-6) == compute.HOST_DISPATCH_S


def test_a_graph_cannot_make_a_kernel_cost_less_than_nothing() -> None:
    """A per-kernel figure below the host's dispatch leaves graphed kernels at 0 s, not below."""
    cal = dataclasses.replace(default_calibration().compute, kernel_launch_s=5e-6)
    assert compute.kernel_s(make_workload("gpt2", cuda_graphs=True), cal) == 0.0
    assert _step_s(True, cal) == pytest.approx(
        _step_s(True, dataclasses.replace(cal, kernel_launch_s=0.0))
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
    """An estimate of a graphed job runs faster than the eager one on the same build and says
    so: the kernels and their GPU-side seconds (29 us fitted, less the 12 us dispatch)."""
    build = make_build(None, gpus=[{"model": "GeForce RTX 3090"}])
    eager = estimate(build, make_workload("gpt2"))
    graphed = estimate(build, make_workload("gpt2", cuda_graphs=True))
    assert graphed.step_time_s < eager.step_time_s
    note = next(a for a in graphed.assumptions if a.startswith("CUDA graphs"))
    tau_us = default_calibration().compute.kernel_launch_s * 1e6
    assert f"costs {tau_us - 12:.0f} us on the GPU" in note
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
