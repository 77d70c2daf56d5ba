"""machine/price.py: a build's price counts its water loop's parts, as the plan that chose the
loop did (issue 35: "water cooling priced and sized from its parts"); check, estimate,
compare and upgrade priced a planned water build without its loop (10,363 USD for the plan's
12,113 USD build of three RTX 5090s on quoted loop parts)."""

from __future__ import annotations

import datetime as dt

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import GPU, LoopPart
from dlrig.enums import LoopRole
from dlrig.machine.loop import LoopEntry
from dlrig.machine.model import Build, GPUGroup
from dlrig.machine.price import build_price

CATALOG = builtin_catalog()
CARD = GPU(name="Hot 24", price_usd=1600, price_date=dt.date(2026, 1, 1), memory_gb=24,
           memory_bandwidth_gb_s=1000, fp32_tflops=40, tdp_w=450, slots=3,
           length_mm=304)  # fmt: skip
BLOCK = LoopPart(name="Quoted block", price_usd=300, price_date=dt.date(2026, 12, 1),
                 role=LoopRole.GPU_BLOCK, slots=2, fits_gpus=("Hot 24",))  # fmt: skip
RADIATOR = LoopPart(name="Quoted 480", price_usd=160, price_date=dt.date(2026, 12, 1),
                    role=LoopRole.RADIATOR, radiator_mm=480)  # fmt: skip


def _build(*loop: LoopEntry) -> Build:
    return Build(name="loop", gpus=(GPUGroup(CARD, 3),), loop=loop)


def test_a_loops_parts_add_to_the_build_price_with_their_counts() -> None:
    """Three cards (3 x 1,600) and a loop of three blocks (3 x 300) and two 480 mm radiators
    (2 x 160): 4,800 + 900 + 320 = 6,020 USD, each loop part listed with its dated price."""
    bp = build_price(_build(LoopEntry(BLOCK, 3), LoopEntry(RADIATOR, 2)))
    assert bp.total_usd == 6020
    names = [name for name, _ in bp.prices]
    assert names == ["Hot 24", "Quoted block", "Quoted 480"]
    assert bp.paid_counts == (3, 3, 2)
    assert bp.complete


def test_a_loop_part_without_a_price_leaves_the_price_incomplete_and_says_which() -> None:
    """The catalog's D5 pump has no dated public price (catalog/data/cooling.toml): a build
    listing it is not priced as if the pump were free."""
    pump = CATALOG.find(LoopPart, "D5 pump with reservoir")
    assert pump.price_usd is None
    bp = build_price(_build(LoopEntry(BLOCK, 3), LoopEntry(pump, 1)))
    assert bp.total_usd == 4800 + 900
    assert bp.unpriced == ("D5 pump with reservoir",)
    assert not bp.complete
