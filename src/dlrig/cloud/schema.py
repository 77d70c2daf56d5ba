"""The price-list file format (the shipped snapshot and a user's `--prices` file): one row per
rentable instance, validated at the file's edge; `offers.py` turns rows into offers."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dlrig.enums import Interconnect
from dlrig.units import LargeCount, MemoryGiB, PositiveSmallCount, PriceUSD

Text = Annotated[str, Field(min_length=1, max_length=2000)]


class OfferRow(BaseModel):
    """One instance a provider rents out, with its on-demand and/or spot price for the whole
    instance (USD per hour) and the day the price was read."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    provider: Text
    instance: Text
    gpu: Text = Field(description="catalog GPU name (fuzzy: 'H100 SXM', '4090')")
    gpus: PositiveSmallCount = Field(description="GPUs in one instance at the listed price")
    gpu_counts: tuple[PositiveSmallCount, ...] = Field(
        default=(), description="other GPU counts sold at the same price per GPU"
    )
    interconnect: Interconnect | None = Field(
        default=None, description="how the instance's GPUs reach each other (default: the GPU's)"
    )
    peer_to_peer: bool = Field(
        default=True,
        description="false where the PCIe GPUs are passed through to a VM without peer access",
    )
    region: str = Field(default="", max_length=200)
    on_demand_price_per_hour_usd: PriceUSD | None = None
    spot_price_per_hour_usd: PriceUSD | None = None
    price_date: dt.date = Field(description="the day the price was read or published")
    source: Text = Field(description="where the price was read (URL, record, date)")
    vcpus: LargeCount | None = None
    ram_gb: MemoryGiB | None = None
    notes: str = Field(default="", max_length=4000)

    @field_validator("provider", "instance", "gpu", "region", mode="before")
    @classmethod
    def _names_may_be_numbers(cls, value: Any) -> Any:
        """YAML reads `gpu: 4090` as a number; a name it is."""
        return (
            str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
        )

    @model_validator(mode="after")
    def _has_a_price(self) -> OfferRow:
        if self.on_demand_price_per_hour_usd is None and self.spot_price_per_hour_usd is None:
            raise ValueError("give on_demand_price_per_hour_usd, spot_price_per_hour_usd or both")
        return self


class PriceFile(BaseModel):
    """A price list in dlrig's format: `offer` (TOML's [[offer]]) or `offers` (YAML's list)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    offer: tuple[OfferRow, ...] = ()
    offers: tuple[OfferRow, ...] = ()

    @property
    def rows(self) -> tuple[OfferRow, ...]:
        return self.offer + self.offers
