"""Properties of estimate over many builds and workloads: finite, consistent, monotone."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from model_fixtures import GTX_1080_TI, RTX_3090, RTX_A6000, make_build, make_workload

from dlrig.enums import Bottleneck
from dlrig.model import estimate
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
