"""plan.dominance: which parts another part makes pointless to try."""

from __future__ import annotations

from dlrig.catalog.schema import MemoryKit
from dlrig.plan.dominance import memory_merit, pareto_cheapest
from dlrig.plan.parts import MemoryOption


def _kit(name: str, modules: int, price_usd: float) -> MemoryKit:
    return MemoryKit(
        name=name,
        price_usd=price_usd,
        memory_type="DDR5",
        size_gb=64,
        modules=modules,
        speed_mt_s=4800,
        registered=True,
    )


def test_the_same_ram_in_fewer_modules_does_not_make_more_modules_pointless() -> None:
    """64 GB as 2 x 32 GB leaves channels empty that 4 x 16 GB fills: the host's bandwidth is
    channels x speed x 8 B (model/host.py; an 8-channel EPYC with 2 modules moves a quarter of
    what 8 do), and an offloaded layer or optimizer state moves at it. So the cheaper 2-module
    kit must not push the 4-module one out of the search; the reverse still holds (4 modules
    at no more cost beat 2)."""
    two = MemoryOption(_kit("2x32", 2, 200.0), 1)
    four = MemoryOption(_kit("4x16", 4, 240.0), 1)
    assert memory_merit(four) > memory_merit(two)
    assert pareto_cheapest([two, four], lambda m: m.price_usd, memory_merit) == [two, four]
    cheaper_four = MemoryOption(_kit("4x16", 4, 180.0), 1)
    kept = pareto_cheapest([two, cheaper_four], lambda m: m.price_usd, memory_merit)
    assert kept == [cheaper_four]
