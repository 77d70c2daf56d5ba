"""Rentable offers: a price-list row becomes one offer per price it lists (on demand, spot),
with its GPU resolved in the catalog, and each offer knows how old its price is."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from dlrig.catalog.loader import Catalog
from dlrig.catalog.schema import GPU
from dlrig.cloud.schema import OfferRow
from dlrig.enums import Interconnect
from dlrig.errors import UnknownPartError, ValidationError

# A cloud price moves with the market within weeks (Vast.ai's H100 median went from $3.47 to
# $3.30 in twelve days, prices.toml): older than this, dlrig names it as it names a part price
# older than a year (catalog/prices.py STALE_AFTER_DAYS).
STALE_AFTER_DAYS = 90


# eq=False: an offer is itself (its GPU part, a pydantic model with a dict, does not hash).
@dataclass(frozen=True, eq=False)
class CloudOffer:
    """One way to rent `gpus` of `gpu` for `price_per_hour_usd` (the whole instance), on demand
    or on spot; `gpu_counts` are other counts sold at the same price per GPU."""

    provider: str
    instance: str
    gpu: GPU
    gpus: int
    price_per_hour_usd: float
    spot: bool
    interconnect: Interconnect
    peer_to_peer: bool
    region: str
    price_date: dt.date
    source: str
    vcpus: int | None = None
    ram_gb: float | None = None
    gpu_counts: tuple[int, ...] = ()
    notes: str = ""

    @property
    def price_per_gpu_hour_usd(self) -> float:
        return self.price_per_hour_usd / self.gpus

    @property
    def key(self) -> tuple[str, str, str, bool]:
        """What a user's row must match to replace this offer: provider, instance, region and
        on demand or spot (case and spacing forgiven)."""
        return (_fold(self.provider), _fold(self.instance), _fold(self.region), self.spot)

    def counts(self) -> tuple[int, ...]:
        """Every GPU count this offer rents, smallest first."""
        return tuple(sorted({self.gpus, *self.gpu_counts}))

    def price_for(self, gpus: int) -> float:
        """USD per hour for `gpus` GPUs of this offer (its per-GPU price times the count)."""
        return self.price_per_gpu_hour_usd * gpus

    def age_days(self, today: dt.date) -> int:
        return (today - self.price_date).days

    def stale(self, today: dt.date) -> bool:
        """Older than STALE_AFTER_DAYS."""
        return self.age_days(today) > STALE_AFTER_DAYS

    @property
    def label(self) -> str:
        """'RunPod H100 SXM (Community Cloud), spot'."""
        return f"{self.provider} {self.instance}{', spot' if self.spot else ''}"


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def offers_from_rows(rows: tuple[OfferRow, ...], catalog: Catalog, source: str) -> list[CloudOffer]:
    """Each row's on-demand and spot offers, its GPU found in the catalog; an unknown GPU is an
    error naming the file, the row and the closest catalog names."""
    out: list[CloudOffer] = []
    for i, row in enumerate(rows):
        try:
            gpu = catalog.find(GPU, row.gpu)
        except UnknownPartError as exc:
            raise ValidationError(
                f"{source}: offer {i + 1} ({row.provider} {row.instance}) field 'gpu': "
                f"{exc.message}",
                hint=exc.hint,
                field=f"offer.{i}.gpu",
            ) from None
        prices = [(row.on_demand_price_per_hour_usd, False), (row.spot_price_per_hour_usd, True)]
        for price, spot in prices:
            if price is None:
                continue
            out.append(
                CloudOffer(
                    provider=row.provider,
                    instance=row.instance,
                    gpu=gpu,
                    gpus=row.gpus,
                    price_per_hour_usd=float(price),
                    spot=spot,
                    interconnect=row.interconnect or gpu.interconnect,
                    peer_to_peer=row.peer_to_peer,
                    region=row.region,
                    price_date=row.price_date,
                    source=row.source,
                    vcpus=row.vcpus,
                    ram_gb=row.ram_gb,
                    gpu_counts=tuple(c for c in row.gpu_counts if c != row.gpus),
                    notes=row.notes,
                )
            )
    return out


def merged(base: list[CloudOffer], extra: list[CloudOffer]) -> list[CloudOffer]:
    """`base` with `extra` added; an extra offer with a base offer's key replaces it (a user's
    newer price for the same instance)."""
    keys = {o.key for o in extra}
    return [o for o in base if o.key not in keys] + extra
