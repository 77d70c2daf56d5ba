"""Prices in the user's currency: a dated exchange rate per US dollar, from the shipped
reference rates (`data/fx.toml`) or the user's own (`--fx-rate`)."""

from __future__ import annotations

import datetime as dt
import functools
import math
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from dlrig.errors import CatalogError, ValidationError
from dlrig.io.validation import closest


@dataclass(frozen=True)
class Currency:
    """A currency and its rate: `per_usd` units of it buy one US dollar's worth."""

    code: str
    per_usd: float
    date: dt.date | None
    source: str

    @property
    def is_usd(self) -> bool:
        return self.code == "USD"

    def from_usd(self, usd: float) -> float:
        return usd * self.per_usd

    def to_usd(self, amount: float) -> float:
        return amount / self.per_usd

    def format(self, usd: float) -> str:
        """A USD amount in this currency: '3,120 EUR'."""
        return f"{self.from_usd(usd):,.0f} {self.code}"

    def describe(self) -> str:
        """'1 USD = 0.8925 EUR (ECB ..., 2026-10-05)': the rate and where it came from."""
        return f"1 USD = {self.per_usd:.4g} {self.code} ({self.source})"

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "per_usd": self.per_usd,
            "date": self.date.isoformat() if self.date else None,
            "source": self.source,
        }


USD = Currency("USD", 1.0, None, "the catalog's own currency")


@functools.lru_cache(maxsize=1)
def _reference() -> dict[str, Any]:
    resource = resources.files("dlrig.catalog").joinpath("data", "fx.toml")
    with resource.open("rb") as fh:
        return tomllib.load(fh)


@functools.lru_cache(maxsize=1)
def iso_currency_codes() -> frozenset[str]:
    """ISO 4217's active codes of money (`data/iso4217.toml`, which says where from)."""
    resource = resources.files("dlrig.catalog").joinpath("data", "iso4217.toml")
    with resource.open("rb") as fh:
        return frozenset(tomllib.load(fh)["codes"])


def iso_currency(code: str, where: str) -> str:
    """code as ISO 4217 writes it (upper case); a ValidationError naming `where` and the
    closest codes when it is not one (`XYZ`, `EURO`)."""
    key = code.strip().upper()
    codes = iso_currency_codes()
    if key not in codes:
        near = closest(key, sorted(codes))
        raise ValidationError(
            f"{where} {code!r}: not an ISO 4217 currency code",
            hint=f"closest: {', '.join(near)}" if near else "e.g. USD, EUR, GBP",
        )
    return key


def known_currencies() -> tuple[str, ...]:
    """The currency codes the shipped reference rates cover."""
    return tuple(sorted(_reference()["per_eur"]))


def currency(code: str, fx_rate: float | None = None) -> Currency:
    """The currency called code with its dated reference rate, or with fx_rate (units per USD,
    the user's figure, dated by no source but the user) when given."""
    key = iso_currency(code, "--currency")
    if fx_rate is not None:
        if not (math.isfinite(fx_rate) and fx_rate > 0):
            raise ValidationError(
                f"--fx-rate {fx_rate}: expected a positive number of {key} per USD"
            )
        if key == "USD" and fx_rate != 1.0:
            raise ValidationError("--fx-rate: USD is 1 USD per USD; give --currency too")
        return Currency(key, fx_rate, None, "--fx-rate (your rate)")
    if key == "USD":
        return USD
    ref = _reference()
    per_eur: dict[str, float] = ref["per_eur"]
    if key not in per_eur:
        near = closest(key, list(per_eur))
        raise ValidationError(
            f"--currency {code}: no reference rate for it",
            hint=f"known: {', '.join(sorted(per_eur))}"
            + (f"; closest: {near[0]}" if near else "")
            + "; or give the rate with --fx-rate (units per USD)",
        )
    if "USD" not in per_eur or not per_eur["USD"] > 0:
        raise CatalogError("catalog/data/fx.toml: per_eur.USD must be a positive rate")
    date = ref.get("date")
    return Currency(
        key,
        per_eur[key] / per_eur["USD"],
        date if isinstance(date, dt.date) else None,
        str(ref.get("source", "catalog/data/fx.toml")),
    )
