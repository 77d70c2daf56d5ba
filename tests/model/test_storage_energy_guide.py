"""DISK.1 and PSU.3 worked examples."""

from __future__ import annotations

import pytest
from model_fixtures import GTX_1080_TI, make_build, make_workload

from dlrig.enums import Bottleneck
from dlrig.model import estimate
from dlrig.model.energy import energy_cost, wall_energy_kwh
from dlrig.model.pipeline import storage_read_time_s
from dlrig.model.step import compose_step

IMAGE_FLOAT32_BYTES = 3 * 224 * 224 * 4  # an ImageNet image as a float32 tensor


def test_disk1_32_image_batch_from_a_100_mb_s_disk_takes_185_ms() -> None:
    """Guide: a 32-image ImageNet mini-batch from a 100 MB/s hard disk takes 185 ms (dlrig:
    19.3 MB / 100 MB/s = 193 ms, within 5%)."""
    t = storage_read_time_s(32 * IMAGE_FLOAT32_BYTES, 100.0)
    assert t == pytest.approx(0.185, rel=0.05)


def test_disk1_hidden_behind_a_200_ms_step_with_async_loading_exposed_without() -> None:
    """Guide: most ImageNet networks need ~200 ms per mini-batch, so loading the next one
    asynchronously hides the 185 ms read entirely; synchronously it adds to every step."""
    read_s = storage_read_time_s(32 * IMAGE_FLOAT32_BYTES, 100.0)
    stages = dict.fromkeys(Bottleneck, 0.0)
    stages[Bottleneck.GPU_COMPUTE] = 0.200
    stages[Bottleneck.STORAGE] = read_s
    hidden = compose_step(stages, stages, [Bottleneck.STORAGE])
    exposed = compose_step(stages, stages, [])
    assert hidden.time_s == pytest.approx(0.200)
    assert Bottleneck.STORAGE in hidden.hidden and hidden.bottleneck is Bottleneck.GPU_COMPUTE
    assert exposed.time_s == pytest.approx(0.200 + read_s)


def test_disk1_through_estimate() -> None:
    """The same through the model: float32 images on a 100 MB/s disk, too big for the page
    cache, ResNet-152 on a GTX 1080 Ti (a step longer than the read)."""
    hdd = [{"kind": "hdd", "capacity_tb": 8, "read_mb_s": 100}]
    build = make_build(GTX_1080_TI, storage=hdd, memory={"size_gb": 16})
    # The guide's figure is the disk's sequential rate: the preprocessed float32 images stored
    # as one array (files: 1), not ImageNet's 1,281,167 JPEG files, each a seek (issue 35).
    data = {"samples": 1281167, "bytes_per_sample": IMAGE_FLOAT32_BYTES, "files": 1}
    pre = {"strategy": "offline", "offline_cpu_ms_per_sample": 0.0}
    synthetic = estimate(build, make_workload("resnet152", dataset="synthetic"))
    on_async = estimate(build, make_workload("resnet152", dataset=data, preprocessing=pre))
    sync_loader = {"workers": 0, "pin_memory": True, "prefetch": 0}
    on_sync = estimate(
        build, make_workload("resnet152", dataset=data, preprocessing=pre, loader=sync_loader)
    )
    assert on_async.stages_s[Bottleneck.STORAGE] == pytest.approx(0.193, rel=0.01)
    assert Bottleneck.STORAGE in on_async.hidden
    assert on_async.step_time_s == pytest.approx(synthetic.step_time_s, rel=0.01)
    assert on_sync.step_time_s > synthetic.step_time_s + 0.19


def test_psu3_two_weeks_of_a_4_gpu_system() -> None:
    """Guide: 1000-1500 W for two weeks is 300-500 kWh; 60-100 at 0.20 per kWh (100% PSU);
    an 80% efficient PSU adds 18-26 (dlrig: 16.8-25.2, within 10%)."""
    hours = 14 * 24
    low, high = wall_energy_kwh(1000, hours, 1.0), wall_energy_kwh(1500, hours, 1.0)
    assert (low, high) == pytest.approx((336.0, 504.0))
    assert low >= 300 and high <= 500 * 1.01
    assert energy_cost(low, 0.20) == pytest.approx(67.2)
    assert energy_cost(low, 0.20) >= 60 and energy_cost(high, 0.20) <= 100 * 1.01
    extra_low = energy_cost(wall_energy_kwh(1000, hours, 0.8) - low, 0.20)
    extra_high = energy_cost(wall_energy_kwh(1500, hours, 0.8) - high, 0.20)
    assert extra_low == pytest.approx(18, rel=0.10)
    assert extra_high == pytest.approx(26, rel=0.10)


def test_run_totals_use_the_overridable_price_and_grid_intensity() -> None:
    build = make_build(GTX_1080_TI)
    job = make_workload("resnet50", dataset="synthetic", steps=1000)
    base = estimate(build, job)
    dear = estimate(build, job, electricity_per_kwh=0.40, co2_kg_per_kwh=0.8)
    assert base.run.electricity_per_kwh == 0.20  # the build file's default price
    assert dear.run.energy_cost == pytest.approx(2 * base.run.energy_cost)
    assert dear.run.co2_kg == pytest.approx(2 * base.run.co2_kg)
    # Energy at the wall: the average draw over the hours, divided by the PSU's efficiency.
    expected = base.power.average_w * base.run.time_h / 1e3 / base.power.psu_efficiency
    assert base.run.energy_kwh == pytest.approx(expected)
