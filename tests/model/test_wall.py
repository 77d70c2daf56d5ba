"""Power at the wall (model/wall.py): the 80 PLUS curve, the sustained draw, the split over
supplies and circuits."""

from __future__ import annotations

import dataclasses

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import CPU, GPU, PSU
from dlrig.machine.model import Build, GPUGroup
from dlrig.mains import find_mains
from dlrig.model.wall import (
    circuit_efficiency,
    max_dc_w_on,
    psu_efficiency_at,
    sustained_dc_w,
    wall_draw,
)

CAT = builtin_catalog()


def mains(name: str):  # type: ignore[no-untyped-def]
    return find_mains(name, where="test", origin="test")


def test_80_plus_levels_at_their_certified_loads() -> None:
    """CLEAResult's 80 PLUS table (Wikipedia, "80 Plus"): 115 V internal Gold 87/90/87% at
    20/50/100% load, Platinum 90/92/89%, Titanium 90/92/94/90% at 10/20/50/100%; 230 V EU
    internal Titanium 90/94/96/94%."""
    assert psu_efficiency_at("gold", 0.2, low_line=True) == 0.87
    assert psu_efficiency_at("gold", 0.5, low_line=True) == 0.90
    assert psu_efficiency_at("gold", 1.0, low_line=True) == 0.87
    assert psu_efficiency_at("platinum", 1.0, low_line=True) == 0.89
    assert psu_efficiency_at("titanium", 0.1, low_line=True) == 0.90
    assert psu_efficiency_at("titanium", 0.5, low_line=False) == 0.96
    # Linear between the points: Gold at 75% load is halfway from 90% to 87%.
    assert psu_efficiency_at("gold", 0.75, low_line=True) == pytest.approx(0.885)
    assert psu_efficiency_at("mystery", 0.5, low_line=True) is None


def test_the_circuit_counts_light_loads_at_the_half_load_figure() -> None:
    """A bigger supply never draws more at the wall: under half load the 50% figure counts."""
    assert circuit_efficiency("gold", 0.1, low_line=True) == 0.90
    assert circuit_efficiency("gold", None, low_line=True) == 0.90
    assert circuit_efficiency("gold", 0.9, low_line=True) == pytest.approx(0.876)


def test_the_sustained_draw_is_psu_1s_sum_before_its_peaks() -> None:
    """The guide's PSU.1 adds 10% "for power peaks" to GPU + CPU watts; a breaker does not see
    millisecond peaks: 4 x 250 W + 150 W = 1,150 W sustained (the guide's example build)."""
    build = Build(
        gpus=(GPUGroup(GPU(name="g", memory_gb=11, memory_bandwidth_gb_s=600,
                           fp32_tflops=13, tdp_w=250), 4),),
        cpu=CAT.find(CPU, "AMD EPYC 7313").model_copy(update={"tdp_w": 150.0}),
    )  # fmt: skip
    assert sustained_dc_w(build) == 1150.0
    limited = dataclasses.replace(
        build, gpus=(dataclasses.replace(build.gpus[0], power_limit_w=200.0),)
    )
    assert sustained_dc_w(limited) == 950.0


def test_load_splits_over_supplies_and_supplies_over_circuits() -> None:
    psu = CAT.find(PSU, "Seasonic PRIME TX-1600 ATX 3.1")
    gpu = CAT.find(GPU, "GeForce RTX 4090")
    build = Build(gpus=(GPUGroup(gpu, 4),), cpu=CAT.find(CPU, "AMD EPYC 7313"), psu=psu)
    one = wall_draw(build, mains("2x-us-20a"))
    assert one.per_circuit_w == one.wall_w  # one supply draws from one circuit
    two = wall_draw(dataclasses.replace(build, psu_count=2), mains("2x-us-20a"))
    assert two.per_circuit_w == pytest.approx(two.wall_w / 2)
    four = wall_draw(dataclasses.replace(build, psu_count=4), mains("2x-us-20a"))
    assert four.per_circuit_w == pytest.approx(four.wall_w / 2)
    # 230 V supplies are more efficient (80 PLUS 230 V EU internal), so less at the wall.
    assert wall_draw(build, mains("eu-16a")).wall_w < wall_draw(build, mains("us-20a")).wall_w


def test_the_most_a_circuit_carries_is_what_wall_draw_accepts() -> None:
    """max_dc_w_on (the planner's limit) and wall_draw (PSU.6) agree to within a watt."""
    psu = CAT.find(PSU, "Seasonic PRIME TX-1600 ATX 3.1")
    dc = max_dc_w_on(mains("us-15a"), "titanium", psu.watts)
    gpu = GPU(name="g", memory_gb=24, memory_bandwidth_gb_s=900, fp32_tflops=30, tdp_w=dc - 150)
    build = Build(gpus=(GPUGroup(gpu, 1),), psu=psu)
    draw = wall_draw(build, mains("us-15a"))
    assert draw.wall_w == pytest.approx(1440, abs=1.0)
