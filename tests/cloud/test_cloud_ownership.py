"""Owning against renting as pure functions (cloud/ownership.py), checked on hand-worked
numbers: the resale curve (calcbee: 20-30% lost in the first year, 10-15% a year after; the
midpoints), the break-even utilisation and the payback month."""

from __future__ import annotations

import pytest

from dlrig.cloud.ownership import (
    HOURS_PER_MONTH,
    OwnedPart,
    break_even_utilisation,
    payback_months,
    resale_value_usd,
    retention,
)


def test_the_resale_curve_is_the_stated_midpoints() -> None:
    """New: 75% through the first year, then 12.5% a year: 0.75 x 0.875^2 = 0.574 at 36
    months. Bought used: 12.5% a year from the used price."""
    assert retention(0, False) == pytest.approx(0.75)
    assert retention(12, False) == pytest.approx(0.75)
    assert retention(36, False) == pytest.approx(0.75 * 0.875**2)
    assert retention(24, True) == pytest.approx(0.875**2)


def test_the_curve_is_within_the_catalogs_dated_used_prices() -> None:
    """gpus.toml: an RTX 3090 (1,499 USD, 2020-09-24) sold used at 800 USD in 2026-02 (0.53 of
    its price); an A100 SXM4 80GB (15,000 USD, released 2020-11-16) traded at 4,000-9,000 USD
    used in 2026-03. The curve says 0.42 of the 3090's price (623 USD: conservative against
    2026's shortage) and 6,300 USD for the A100, inside its range."""
    rtx3090 = retention((2026 - 2020) * 12 + (2 - 9), False)
    assert 0.35 < rtx3090 < 800 / 1499
    a100 = 15_000 * retention((2026 - 2020) * 12 + (3 - 11), False)
    assert 4_000 <= a100 <= 9_000


def test_a_dated_used_price_caps_the_resale() -> None:
    """A card bought new at 1,499 with a used market at 800 resells for at most 800 carried on
    12.5% a year: 800 x 0.875 after a year, below the new curve's 1,124."""
    part = OwnedPart(1499.0, bought_used=False, used_market_usd=800.0)
    assert resale_value_usd([part], 12) == pytest.approx(800 * 0.875)


def test_break_even_utilisation_on_hand_numbers() -> None:
    """10,000 USD build resold at 5,000 after 36 months; renting the same work costs 1.50 USD
    an hour of the build's work and its energy 0.25: owning wins above
    5,000 / (730 x 36 x 1.25) = 15.2% utilisation."""
    u = break_even_utilisation(10_000, 5_000, 36, 1.50, 0.25)
    assert u == pytest.approx(5_000 / (HOURS_PER_MONTH * 36 * 1.25))
    assert u == pytest.approx(0.1522, abs=1e-3)
    assert break_even_utilisation(10_000, 5_000, 36, 0.20, 0.25) is None  # rent < electricity


def test_payback_is_the_first_month_owning_costs_no_more() -> None:
    """A 10,000 USD build that resells at 75% in its first year, 1.25 USD saved per busy hour
    at 50% utilisation (456 USD a month): the 2,500 USD resale loss is made up after
    2,500 / 456.25 = 5.48 months."""
    parts = [OwnedPart(10_000.0)]
    months = payback_months(10_000, lambda m: resale_value_usd(parts, m), 0.5, 1.50, 0.25)
    assert months == pytest.approx(2_500 / (0.5 * HOURS_PER_MONTH * 1.25), abs=1 / 30)
    assert payback_months(10_000, lambda m: resale_value_usd(parts, m), 0.5, 0.2, 0.25) is None
