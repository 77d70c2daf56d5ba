"""Which of a part's prices dlrig uses, and how old it is.

A catalog part has a launch price (`price_usd`, `price_date`: the MSRP or first reported price)
and, where one is published, a street price (`street_price_usd`, `street_price_date`,
`street_market`: what it sells for now, new or used) and a used price beside it
(`used_price_usd`, `used_price_date`). Every price dlrig adds up comes from `price_in_use`: the
lower of the street and used prices when there are any (a buyer takes the cheaper market;
`--new-only` drops the used ones: Catalog.without_used_prices), else the launch price.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from dlrig.catalog.schema import PartBase

# A price older than this no longer says what the part costs (issue #11: "warn when a plan rests
# on prices older than a year").
STALE_AFTER_DAYS = 365


@dataclass(frozen=True)
class PartPrice:
    """One unit's price in USD, its date (None: the user's own figure, undated) and kind."""

    usd: float
    date: dt.date | None
    kind: Literal["street", "launch"]
    market: Literal["new", "used"] | None = None

    def age_days(self, today: dt.date) -> int | None:
        """Days between the price's date and today (None when undated)."""
        return None if self.date is None else (today - self.date).days

    def stale(self, today: dt.date) -> bool:
        """Older than a year."""
        age = self.age_days(today)
        return age is not None and age > STALE_AFTER_DAYS

    @property
    def label(self) -> str:
        """'street price (used)', 'street price (new)' or 'catalog price' (the launch or first
        listed price)."""
        return f"street price ({self.market})" if self.kind == "street" else "catalog price"


def price_in_use(part: PartBase) -> PartPrice | None:
    """The price dlrig uses for one unit: the lower of the street and used prices when the
    catalog has any, else the launch price; None when the part has none."""
    street = _street(part)
    used = used_price(part)
    current = [p for p in (street, used) if p is not None]
    if current:
        return min(current, key=lambda p: p.usd)
    if part.price_usd is not None:
        return PartPrice(usd=float(part.price_usd), date=part.price_date, kind="launch")
    return None


def _street(part: PartBase) -> PartPrice | None:
    if part.street_price_usd is None:
        return None
    return PartPrice(
        usd=float(part.street_price_usd),
        date=part.street_price_date,
        kind="street",
        market=part.street_market,
    )


def used_price(part: PartBase) -> PartPrice | None:
    """What one unit sells for used: its used price, or its street price when that is from the
    used market; None when the catalog knows none (upgrade's resale reads it)."""
    if part.used_price_usd is not None:
        return PartPrice(
            usd=float(part.used_price_usd), date=part.used_price_date, kind="street", market="used"
        )
    street = _street(part)
    return street if street is not None and street.market == "used" else None


def unit_price_usd(part: PartBase) -> float | None:
    """price_in_use's USD figure (None when the part has no price); the planner asks it of
    every option, so it skips building the PartPrice."""
    street, used = part.street_price_usd, part.used_price_usd
    if street is not None or used is not None:
        return float(min(p for p in (street, used) if p is not None))
    return None if part.price_usd is None else float(part.price_usd)


def paid_count(part: PartBase, count: int) -> int:
    """How many of count the user must buy: the ones they already own cost nothing."""
    return max(0, count - part.owned_count)


def age_in_words(days: int) -> str:
    """'3 months', '2.1 years': how old a price is, for people."""
    if days < 60:
        return f"{days} days"
    if days < 730:
        return f"{days / 30.44:.0f} months"
    return f"{days / 365.25:.1f} years"


# Resale: used GPUs "typically depreciate 20-30% in the first year and 10-15% per year after
# that" (calcbee.com, used GPU value calculator, read 2026-12-06:
# https://www.calcbee.com/calculators/gaming/pc-hardware/used-gpu-value); the midpoints, the
# first year's loss taken at once (a part sells used the day it is bought). Upgrade's resale and
# buy-or-rent's (cloud/ownership.py) both read it.
FIRST_YEAR_RETENTION = 0.75
LATER_YEARLY_RETENTION = 0.875
DAYS_PER_YEAR = 365.25


def retention(years: float, bought_used: bool) -> float:
    """The share of its price a part resells for `years` after it was bought at that price."""
    later = max(years, 0.0) if bought_used else max(years - 1.0, 0.0)
    first = 1.0 if bought_used else FIRST_YEAR_RETENTION
    return float(first * LATER_YEARLY_RETENTION**later)


@dataclass(frozen=True)
class Resale:
    """What one unit of a part would sell for, and how dlrig knows."""

    usd: float
    basis: str


def resale(part: PartBase, today: dt.date) -> Resale | None:
    """What one unit sells for used today: its dated used price, else its newest price (new
    street, else launch) on the used-GPU depreciation curve since that price's date; None when
    the part has no dated price."""
    used = used_price(part)
    if used is not None:
        when = used.date.isoformat() if used.date else "undated"
        return Resale(used.usd, f"its used price ({when})")
    base = price_in_use(part)
    if base is None or base.date is None:
        return None
    years = max(0.0, (today - base.date).days / DAYS_PER_YEAR)
    kept = retention(years, bought_used=False)
    return Resale(
        base.usd * kept,
        f"its {base.label} of {base.date.isoformat()} at {kept:.0%} after {years:.1f} years "
        f"(used GPUs lose {1 - FIRST_YEAR_RETENTION:.0%} the first year and "
        f"{1 - LATER_YEARLY_RETENTION:.1%} a year after: calcbee.com)",
    )
