"""`estimate` gives a training job's memory need with its 80% interval (memory.MEMORY_RATIO_BAND):
`memory.gpu_required_gb_low/high` in the JSON, and the same figures on the terminal's memory
line; a serving job's memory carries none (null)."""

from __future__ import annotations

import dataclasses
import json

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.machine.model import Build
from dlrig.model import estimate
from dlrig.report.estimate import estimate_dict, memory_line
from dlrig.workloads import load_workload


def _build() -> Build:
    return resolve_build(
        {"name": "1x 4090", "gpus": [{"model": "GeForce RTX 4090", "count": 1}]}, "t",
        load_catalog(None),
    )  # fmt: skip


def test_training_memory_has_its_interval_in_json_and_terminal() -> None:
    est = estimate(_build(), load_workload("gpt2"))
    memory = json.loads(json.dumps(estimate_dict(est)))["memory"]
    low, need, high = (
        memory["gpu_required_gb_low"], memory["gpu_required_gb"], memory["gpu_required_gb_high"]
    )  # fmt: skip
    assert low <= need < high
    assert f"{need:.1f} GiB needed ({low:.1f}-{high:.1f}, 80% interval) of 24 GiB" in (
        memory_line(est)
    )


def test_serving_memory_has_no_interval() -> None:
    est = estimate(_build(), load_workload("llama-3.1-8b-serve"))
    memory = estimate_dict(est)["memory"]
    assert memory["gpu_required_gb_low"] is None and memory["gpu_required_gb_high"] is None
    assert "80% interval" not in memory_line(est)


def test_a_fit_whose_interval_tops_the_card_says_it_may_run_out() -> None:
    """The need inside the card but its interval's top (the tensors x MEMORY_RATIO_BAND's top)
    over it: 'fits', hedged, not a confident fit. GPT-2 at the largest batch that fits a 4090
    needs close to its 24 GiB, so the top of its interval is over them."""
    build = _build()
    largest = estimate(build, load_workload("gpt2")).memory.max_batch_per_gpu
    est = estimate(build, dataclasses.replace(load_workload("gpt2"), batch_size=largest))
    m = est.memory
    assert m.fits and m.gpu_required_gb_high is not None
    assert m.gpu_required_gb_high > m.gpu_available_gb
    assert "fits, but its interval's top does not: it may run out" in memory_line(est)
