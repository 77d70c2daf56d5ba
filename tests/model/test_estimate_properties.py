"""Properties of estimate over many builds and workloads: finite, consistent, monotone."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_fixtures import GTX_1080_TI, RTX_3090, RTX_A6000, make_build, make_workload

from dlrig.enums import Bottleneck
from dlrig.model import Estimate, estimate
from dlrig.workloads import zoo

GPUS = [GTX_1080_TI, RTX_3090, RTX_A6000]
NAMES = [w.name for w in zoo()]


@settings(max_examples=60)
@given(
    gpu=st.sampled_from(GPUS),
    count=st.integers(1, 8),
    name=st.sampled_from(NAMES),
    precision=st.sampled_from(["fp32", "tf32", "fp16", "bf16", "fp8"]),
    batch=st.integers(1, 512),
    workers=st.integers(0, 16),
    pinned=st.booleans(),
    read_mb_s=st.floats(50, 14000),
)
def test_estimates_are_finite_and_consistent(
    gpu: dict[str, object], count: int, name: str, precision: str, batch: int, workers: int,
    pinned: bool, read_mb_s: float,
) -> None:  # fmt: skip
    storage = [{"kind": "nvme", "capacity_tb": 4, "read_mb_s": read_mb_s}]
    build = make_build(gpu, count=count, storage=storage)
    job = make_workload(
        name,
        precision=precision,
        batch_size=batch,
        loader={"workers": workers, "pin_memory": pinned},
    )
    est = estimate(build, job)
    assert math.isfinite(est.step_time_s) and est.step_time_s > 0
    if est.serving is not None:
        _serving_is_one_figure(est)
        return
    assert est.samples_per_s == est.batch_per_gpu * est.gpus / est.step_time_s
    assert est.bottleneck in Bottleneck
    # The step is at least the serial chain and at least every stage that runs beside it.
    assert est.step_time_s >= max(est.exposed_s.values()) - 1e-12
    assert sum(est.exposed_s.values()) >= est.step_time_s * (1 - 1e-9)
    assert all(v >= 0 for v in est.stages_s.values())
    assert est.memory.fits == (est.memory.gpu_required_gb <= est.memory.gpu_available_gb)
    # A batch that does not fit several GPUs may run split into micro-batches that do
    # (memory._split_plan): the samples per optimizer step stay the asked batch's.
    assert est.memory.fits == (est.memory.max_batch_per_gpu >= est.batch_per_gpu)
    accumulation = est.parallel.gradient_accumulation if est.parallel else 1
    assert est.batch_per_gpu * accumulation == batch * job.gradient_accumulation
    assert est.run.energy_kwh > 0 and est.power.psu_recommended_w >= est.power.system_peak_w


def _serving_is_one_figure(est: Estimate) -> None:
    """A serving estimate (issue 39): the step is the time per output token its stages add
    up to, the rate the output tokens/s of all users, the memory the serving answer's, and
    the run and its energy at that rate."""
    s = est.serving
    assert s is not None
    assert est.samples_per_s == est.tokens_per_s == s.tokens_per_s_total
    assert sum(est.exposed_s.values()) == pytest.approx(est.step_time_s, rel=1e-9)
    assert est.step_time_s == pytest.approx(s.tpot_s, rel=1e-9)
    assert est.stages_s[est.bottleneck] > 0 or not est.memory.fits
    assert est.memory.fits == s.fits
    m = est.memory
    assert m.gpu_required_gb == pytest.approx(m.model_states_gb + m.activations_gb + m.overhead_gb)
    if s.engine == "batched":
        assert m.fits == (m.gpu_required_gb <= m.gpu_available_gb * (1 + 1e-12))
        assert m.fits == (m.max_batch_per_gpu >= est.batch_per_gpu)
    hours = est.run.samples / est.samples_per_s / 3600.0
    assert est.run.time_h >= hours * (1 - 1e-9)  # and loading the weights
    assert est.kwh_per_million_tokens == pytest.approx(
        est.power.average_wall_w * 1e6 / est.samples_per_s / 3600.0 / 1000.0
    )


@settings(max_examples=30)
@given(name=st.sampled_from(NAMES), batch=st.integers(1, 64))
def test_a_faster_gpu_is_never_slower(name: str, batch: int) -> None:
    """Same card with every rate doubled: the step can only get shorter."""
    rates = {"memory_bandwidth_gb_s": 2 * 936, "fp32_tflops": 71.2, "tf32_tensor_tflops": 71.2}
    fast = dict(RTX_3090, name="2x", fp16_tensor_tflops=142, bf16_tensor_tflops=142, **rates)
    job = make_workload(name, batch_size=batch, dataset="synthetic")
    slow_est = estimate(make_build(RTX_3090), job)
    fast_est = estimate(make_build(fast), job)
    # Where the host's launches bind, both steps are the same host time, summed from its
    # parts in floating point: equal to the last bit or so.
    assert fast_est.step_time_s <= slow_est.step_time_s * (1 + 1e-12)
