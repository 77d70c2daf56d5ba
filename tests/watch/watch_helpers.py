"""Fakes for the watch tests: an idle host sample and GPU series replayed from NVML fixtures
(a uniquely named module: the fixtures in conftest.py and the tests import it)."""

from __future__ import annotations

import copy
from typing import Any

from dlrig.watch.host import NvmlGpuSampler
from dlrig.watch.samples import HostSample, JobSample, Sample
from support.nvml_fakes import fixture_path, load_fixture, replay_nvml


def idle_host(cpus: int = 8) -> HostSample:
    """A host doing nothing: the GPU detectors are tested apart from the host's load."""
    return HostSample(
        cpu_busy_ratio=(0.05,) * cpus,
        iowait_ratio=0.0,
        memory_total_bytes=64 * 10**9,
        memory_available_bytes=48 * 10**9,
        swap_used_bytes=0,
        swap_in_mb_s=0.0,
        swap_out_mb_s=0.0,
    )


def light_job() -> JobSample:
    """A training process feeding its GPUs with little CPU."""
    return JobSample(
        processes=1,
        cpu_cores=1.0,
        main_cpu_cores=1.0,
        main_busiest_thread_cores=0.6,
        workers=0,
        workers_cpu_cores=0.0,
        rss_bytes=4 * 10**9,
        threads=12,
        read_mb_s=0.0,
    )


def replayed_samples(
    source: str | dict[str, Any], count: int, interval_s: float = 1.0
) -> list[Sample]:
    """`count` ticks of an NVML scenario through the same sampler `dlrig watch` uses."""
    sampler = NvmlGpuSampler(replay_nvml(source))
    return [
        Sample(t_s=(i + 1) * interval_s, host=idle_host(), job=light_job(), gpus=sampler.sample())
        for i in range(count)
    ]


def fixture(scenario: str) -> dict[str, Any]:
    """A copy of a recorded scenario to derive another from."""
    return copy.deepcopy(load_fixture(fixture_path(scenario)))
