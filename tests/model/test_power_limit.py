"""model/power_limit.py: the sustained matmul rate under a power limit, against the published
RTX 3090 sweeps it was fitted to (350 W stock): Puget Systems (2020-11-13) 280 W: 95% of the
performance; llmgarage.ai (6x RTX 3090, compute-bound prefill at 198K context): 300 W 9,326 and
250 W 8,436 against 9,893 tokens/s at 350 W."""

from __future__ import annotations

import pytest

from dlrig.catalog.loader import builtin_catalog
from dlrig.enums import Precision
from dlrig.machine.model import GPUGroup
from dlrig.model.power_limit import power_limit_factor

CATALOG = builtin_catalog()


def _card(name: str) -> GPUGroup:
    return GPUGroup(gpu=next(g for g in CATALOG.gpus if g.name == name), count=1)


@pytest.mark.parametrize(
    ("limit_w", "published"), [(280, 0.95), (300, 9326 / 9893), (250, 8436 / 9893)]
)
def test_the_rtx_3090_curve_sits_within_4_points_of_the_published_sweeps(
    limit_w: float, published: float
) -> None:
    card = _card("GeForce RTX 3090")
    limited = GPUGroup(gpu=card.gpu, count=1, power_limit_w=limit_w)
    factor, note = power_limit_factor(limited, Precision.BF16)
    assert abs(factor - published) <= 0.04
    assert note is not None and f"limited to {limit_w:g} of 350 W" in note


def test_rtx_4090_at_300_w_keeps_0_851_of_its_matmul_rate() -> None:
    card = _card("GeForce RTX 4090")
    factor, _ = power_limit_factor(
        GPUGroup(gpu=card.gpu, count=1, power_limit_w=300), Precision.BF16
    )
    assert factor == pytest.approx((300 / 450) ** 0.397)


def test_no_limit_or_a_limit_at_stock_power_changes_nothing() -> None:
    card = _card("GeForce RTX 4090")
    assert power_limit_factor(card, Precision.BF16) == (1.0, None)
    at_stock = GPUGroup(gpu=card.gpu, count=1, power_limit_w=450)
    assert power_limit_factor(at_stock, Precision.BF16) == (1.0, None)
