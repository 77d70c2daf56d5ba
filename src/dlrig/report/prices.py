"""How reports show prices: in the user's currency, with the age of the prices a total rests
on, and a one-line warning when some are older than a year."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlrig.catalog.currency import USD, Currency
from dlrig.catalog.prices import STALE_AFTER_DAYS, PartPrice, age_in_words
from dlrig.catalog.schema import PartBase
from dlrig.machine.model import Build
from dlrig.machine.price import BuildPrice, build_price


@dataclass(frozen=True)
class PriceView:
    """The currency to show prices in and the day their age is counted to (None: ages are not
    shown, as when a caller has no clock)."""

    currency: Currency = field(default_factory=lambda: USD)
    today: dt.date | None = None

    def money(self, usd: float) -> str:
        """'3,120 EUR' (or '3,120 USD')."""
        return self.currency.format(usd)

    def amount(self, usd: float) -> float:
        return round(self.currency.from_usd(usd), 2)


def _price_json(name: str, price: PartPrice) -> dict[str, Any]:
    return {
        "part": name,
        "unit_price_usd": round(price.usd, 2),
        "date": price.date.isoformat() if price.date else None,
        "kind": price.kind,
        "market": price.market,
    }


def build_price_json(build: Build, view: PriceView) -> dict[str, Any]:
    """A build's price facts beside `price_usd`: the price in the user's currency, the oldest
    price it rests on, its age in days, and the prices older than a year."""
    bp = build_price(build)
    oldest = bp.oldest
    out: dict[str, Any] = {
        "price_oldest_date": oldest.date.isoformat() if oldest and oldest.date else None,
        "price_age_days": oldest.age_days(view.today) if oldest and view.today else None,
        "stale_prices": [_price_json(n, p) for n, p in bp.stale(view.today)] if view.today else [],
        "prices": [_price_json(n, p) for n, p in bp.prices],
        "owned_parts": owned_names(build),
        "used_parts": used_names(build),
    }
    return out


def used_names(build: Build) -> list[str]:
    """The parts of build priced on the used market (second-hand: no retail warranty)."""
    return list(dict.fromkeys(name for name, p in build_price(build).prices if p.market == "used"))


def mark_used(label: str, used: Sequence[str]) -> str:
    """'2x GeForce RTX 3090' -> '2x GeForce RTX 3090 (used)' when that part is priced used."""
    return f"{label} (used)" if any(label == n or label.endswith(f"x {n}") for n in used) else label


def owned_names(build: Build) -> list[str]:
    """The parts of build the user already has (`--own`), priced 0."""
    parts: list[PartBase | None] = [g.gpu for g in build.gpus]
    parts += [
        build.cpu,
        build.motherboard,
        build.platform,
        build.psu,
        build.case,
        build.memory.kit if build.memory is not None else None,
    ]
    parts += [s.device for s in build.storage]
    return list(dict.fromkeys(p.name for p in parts if p is not None and p.owned_count))


def age_line(build: Build, view: PriceView) -> str | None:
    """'prices: oldest 2021-03-15 (5.7 years old: AMD EPYC 7313, catalog price); street
    prices: GeForce RTX 3090 (used, 2026-02-01)'."""
    if view.today is None:
        return None
    bp = build_price(build)
    oldest = bp.oldest
    if oldest is None or oldest.date is None:
        return None
    name = next(n for n, p in bp.prices if p is oldest)
    age = age_in_words(oldest.age_days(view.today) or 0)
    streets = [
        f"{n} ({p.market}, {p.date.isoformat() if p.date else '?'})"
        for n, p in bp.prices
        if p.kind == "street"
    ]
    street = f"street prices: {', '.join(streets)}" if streets else "no street prices"
    return f"prices: oldest {oldest.date.isoformat()} ({age} old: {name}, {oldest.label}); {street}"


def stale_warning(builds: Iterable[Build], view: PriceView) -> str | None:
    """One line naming the parts, across builds, whose price is older than a year."""
    if view.today is None:
        return None
    stale: dict[str, PartPrice] = {}
    for build in builds:
        for name, price in build_price(build).stale(view.today):
            stale.setdefault(name, price)
    return _stale_line(stale)


def _stale_line(stale: dict[str, PartPrice]) -> str | None:
    if not stale:
        return None
    named = ", ".join(
        f"{n} ({p.date.isoformat() if p.date else '?'})"
        for n, p in sorted(stale.items(), key=lambda item: item[1].date or dt.date.max)
    )
    return (
        f"warning: {len(stale)} price{'s' if len(stale) != 1 else ''} older than a year "
        "(no dated street price in the "
        f"catalog; check today's): {named}"
    )


def currency_line(view: PriceView) -> str | None:
    """The rate prices are shown at, with its source and age ('' for USD)."""
    cur = view.currency
    if cur.is_usd:
        return None
    line = f"prices in {cur.code} at {cur.describe()}"
    if cur.date is not None and view.today is not None:
        days = (view.today - cur.date).days
        line += f", {age_in_words(days)} old"
        if days > STALE_AFTER_DAYS:
            line += "; give today's rate with --fx-rate"
    return line


def bought_prices(before: Build, after: Build) -> tuple[tuple[str, PartPrice, int], ...]:
    """The prices of what an upgrade buys, with how many of each: the parts after pays for
    beyond those before paid for (more of a card the build has counts, not only new names; a
    part before had without a price is never counted as bought)."""
    old = build_price(before)
    had = _paid_by_name(old)
    unpriced = set(old.unpriced)
    return tuple(
        (name, price, n - had.get(name, 0))
        for name, (price, n) in _priced_by_name(build_price(after)).items()
        if name not in unpriced and n > had.get(name, 0)
    )


def _priced_by_name(bp: BuildPrice) -> dict[str, tuple[PartPrice, int]]:
    out: dict[str, tuple[PartPrice, int]] = {}
    for (name, price), n in zip(bp.prices, bp.paid_counts, strict=True):
        out[name] = (price, n + (out[name][1] if name in out else 0))
    return out


def _paid_by_name(bp: BuildPrice) -> dict[str, int]:
    return {name: n for name, (_, n) in _priced_by_name(bp).items()}


def change_price_json(before: Build, after: Build, view: PriceView) -> dict[str, Any]:
    """What an upgrade buys (each part with its count, its price's date and kind), and those
    bought at prices over a year old."""
    bought = bought_prices(before, after)
    stale = [(n, p, c) for n, p, c in bought if view.today is not None and p.stale(view.today)]
    return {
        "bought_prices": [{**_price_json(n, p), "count": c} for n, p, c in bought],
        "stale_prices": [{**_price_json(n, p), "count": c} for n, p, c in stale],
    }


def stale_bought_warning(before: Build, afters: Iterable[Build], view: PriceView) -> str | None:
    """One line naming the parts the upgrades buy whose price is older than a year."""
    if view.today is None:
        return None
    stale: dict[str, PartPrice] = {}
    for after in afters:
        for name, price, _ in bought_prices(before, after):
            if price.stale(view.today):
                stale.setdefault(name, price)
    return _stale_line(stale)
