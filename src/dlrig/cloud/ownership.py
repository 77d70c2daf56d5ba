"""Owning against renting, as pure functions of money and hours: what a build is worth when
resold, what owning and renting the same work cost over a horizon, the utilisation above which
owning is cheaper, and the months until it pays off.

Utilisation u is the share of the calendar the owned build runs the job (u = 0.5: twelve
hours a day). Renting does the same work: each hour the build is busy is `rent_usd_per_busy_hour`
of cloud time (a run's rented cost over the build's hours for the same run). The build is off
when idle, so its energy is paid only for busy hours.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

HOURS_PER_MONTH = 8760.0 / 12.0

# Resale: used GPUs "typically depreciate 20-30% in the first year and 10-15% per year after
# that" (calcbee.com, used GPU value calculator, read 2026-12-06:
# https://www.calcbee.com/calculators/gaming/pc-hardware/used-gpu-value); the midpoints are
# used, the first year's loss taken at once (a part is sold used the day it is bought). Checked
# against the catalog's dated used prices: an RTX 3090 (1,499 USD in 2020-09) sold used at 800
# in 2026-02, 0.53 of its price where the curve says 0.42; an A100 SXM4 80GB (15,000 USD,
# released 2020-11) at 4,000-9,000 used in 2026-03, where the curve says 6,300 (gpus.toml
# street_price sources).
FIRST_YEAR_RETENTION = 0.75
LATER_YEARLY_RETENTION = 0.875
# The horizon past which a payback is not looked for: ten years outlive any GPU's useful life.
MAX_PAYBACK_MONTHS = 120.0


@dataclass(frozen=True)
class OwnedPart:
    """A bought part's price and whether it was bought used (a used street price: its first
    year's loss is behind it); `used_market_usd`: a dated used price of the same part, when the
    catalog has one, which caps what it resells for."""

    price_usd: float
    bought_used: bool = False
    used_market_usd: float | None = None


def retention(months: float, bought_used: bool) -> float:
    """The share of its price a part resells for after `months` of ownership."""
    years = max(months, 0.0) / 12.0
    later_years = years if bought_used else max(years - 1.0, 0.0)
    first = 1.0 if bought_used else FIRST_YEAR_RETENTION
    return first * math.pow(LATER_YEARLY_RETENTION, later_years)


def resale_value_usd(parts: Sequence[OwnedPart], months: float) -> float:
    """What the parts resell for after `months`: each on the curve from its price, capped by
    the used market's price of the part carried forward on the later years' rate."""
    total = 0.0
    for p in parts:
        value = p.price_usd * retention(months, p.bought_used)
        if p.used_market_usd is not None:
            value = min(value, p.used_market_usd * retention(months, True))
        total += value
    return total


def busy_hours(utilisation: float, months: float) -> float:
    """Hours the owned build runs the job in `months` at `utilisation`."""
    return utilisation * HOURS_PER_MONTH * months


def owning_cost_usd(
    price_usd: float, resale_usd: float, energy_usd_per_busy_hour: float, hours: float
) -> float:
    """Buying the build, paying its energy for `hours` of work, then selling it."""
    return price_usd + energy_usd_per_busy_hour * hours - resale_usd


def renting_cost_usd(rent_usd_per_busy_hour: float, hours: float) -> float:
    """Renting the cloud time that does the work of `hours` of the owned build."""
    return rent_usd_per_busy_hour * hours


def break_even_utilisation(
    price_usd: float,
    resale_usd: float,
    months: float,
    rent_usd_per_busy_hour: float,
    energy_usd_per_busy_hour: float,
) -> float | None:
    """The utilisation over `months` above which owning costs less than renting: the build's
    loss on resale over the busy hours' saving (rent less energy). None when renting costs no
    more than the build's electricity: owning never pays off. Above 1: not within `months`."""
    saving = rent_usd_per_busy_hour - energy_usd_per_busy_hour
    if saving <= 0 or months <= 0:
        return None
    return (price_usd - resale_usd) / (HOURS_PER_MONTH * months * saving)


def payback_months(
    price_usd: float,
    resale_at: Callable[[float], float],
    utilisation: float,
    rent_usd_per_busy_hour: float,
    energy_usd_per_busy_hour: float,
) -> float | None:
    """The first month at which owning has cost no more than renting (sold then, at
    `resale_at(months)`), found to a day; None when it does not come within
    MAX_PAYBACK_MONTHS."""

    def ahead(months: float) -> bool:
        hours = busy_hours(utilisation, months)
        owning = owning_cost_usd(price_usd, resale_at(months), energy_usd_per_busy_hour, hours)
        return owning <= renting_cost_usd(rent_usd_per_busy_hour, hours)

    if utilisation <= 0:
        return None
    # Owning falls behind at first (the resale loss) and catches up as busy hours add up; the
    # resale curve bends, so scan month by month for the first crossing, then bisect it.
    previous = 0.0
    month = 1.0
    while month <= MAX_PAYBACK_MONTHS:
        if ahead(month):
            low, high = previous, month
            while high - low > 1.0 / 30.0:
                mid = (low + high) / 2.0
                low, high = (low, mid) if ahead(mid) else (mid, high)
            return high
        previous, month = month, month + 1.0
    return None


def first_result_hours(lead_time_days: float, start_minutes: float, hours_per_run: float) -> float:
    """Hours from deciding to the first finished run: the wait for the machine, then the run."""
    return lead_time_days * 24.0 + start_minutes / 60.0 + hours_per_run
