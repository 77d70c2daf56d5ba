"""What one job costs on each cloud offer that holds it: the model's run time on the rented
instance (its GPUs, interconnect and peer-to-peer, `instance.py`), the smallest GPU count the
offer sells that fits the job's memory, and the run's price; spot runs carry a stated
restart overhead."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dlrig.cloud.instance import instance_build
from dlrig.cloud.offers import CloudOffer
from dlrig.enums import Bottleneck
from dlrig.errors import DlrigError
from dlrig.model import estimate
from dlrig.workloads.model import Workload

# Spot restarts. An interruption loses the instance's restart (a new instance, the environment
# and the checkpoint loaded: "averaging 10-15 minutes of recovery time", Spheron, "Spot GPU
# Training Resilience", 2026-05-15, https://www.spheron.network/blog/spot-gpu-training-
# resilience-checkpointing-guide/) and, on average, half the interval between checkpoints
# ("checkpoint training jobs every 10-30 minutes", gridstackhub.ai, "Reserved vs spot vs
# on-demand GPU": https://gridstackhub.ai/learn/reserved-vs-spot-vs-on-demand-gpu). How often
# GPU spot capacity is reclaimed is not published per hour (AWS's Spot Instance Advisor gives a
# monthly bucket): dlrig assumes one interruption every 8 hours of run. That is an assumption,
# between the "availability windows ... narrowed to 2-4 hours in peak regions" reported for H100
# spot in Q1 2026 (Digiteria Labs, https://digiterialabs.com/ai/insights/cloud-gpu-pricing-q1-2026)
# and quieter regions and hours, where spot runs last far longer.
SPOT_RESTART_MINUTES = 15.0
SPOT_CHECKPOINT_INTERVAL_MINUTES = 30.0
SPOT_HOURS_BETWEEN_INTERRUPTIONS = 8.0


def spot_overhead_fraction() -> float:
    """Extra run time a spot run pays for its restarts, as a share of the run: interruptions
    per hour times what each loses (the restart and half a checkpoint interval)."""
    lost_h = (SPOT_RESTART_MINUTES + SPOT_CHECKPOINT_INTERVAL_MINUTES / 2.0) / 60.0
    return lost_h / SPOT_HOURS_BETWEEN_INTERRUPTIONS


def spot_overhead_text() -> str:
    return (
        f"spot runs take {spot_overhead_fraction():.2%} longer for restarts (one interruption "
        f"every {SPOT_HOURS_BETWEEN_INTERRUPTIONS:g} h assumed, each losing a "
        f"{SPOT_RESTART_MINUTES:g}-minute restart and half a "
        f"{SPOT_CHECKPOINT_INTERVAL_MINUTES:g}-minute checkpoint interval)"
    )


@dataclass(frozen=True)
class RentedRun:
    """The job on `gpus` GPUs of `offer`: hours per run (spot restarts included) and its
    cost, the instance's price for that count, and the model's view of the run."""

    offer: CloudOffer
    gpus: int
    price_per_hour_usd: float
    hours_per_run: float
    cost_per_run_usd: float
    samples_per_s: float
    bottleneck: Bottleneck
    gpu_required_gb: float

    @property
    def label(self) -> str:
        count = "" if self.gpus == self.offer.gpus else f" x{self.gpus}"
        return f"{self.offer.label}{count}"


def run_on_offer(offer: CloudOffer, job: Workload) -> RentedRun | None:
    """The job on the smallest GPU count of `offer` that holds it; None when none does (or
    the model cannot lay the job out on the instance)."""
    for gpus in offer.counts():
        try:
            est = estimate(instance_build(offer, gpus), job)
        except DlrigError:
            continue  # e.g. a tensor-parallel width the instance's GPU count cannot take
        if not est.memory.fits or est.run.time_h <= 0 or est.run.time_h == float("inf"):
            continue
        overhead = spot_overhead_fraction() if offer.spot else 0.0
        hours = est.run.time_h * (1.0 + overhead)
        price = offer.price_for(gpus)
        return RentedRun(
            offer=offer,
            gpus=gpus,
            price_per_hour_usd=price,
            hours_per_run=hours,
            cost_per_run_usd=hours * price,
            samples_per_s=est.samples_per_s,
            bottleneck=est.bottleneck,
            gpu_required_gb=est.memory.gpu_required_gb,
        )
    return None


def price_job(offers: Iterable[CloudOffer], job: Workload) -> list[RentedRun]:
    """Every offer that holds the job, cheapest run first."""
    runs = [r for r in (run_on_offer(o, job) for o in offers) if r is not None]
    return sorted(runs, key=lambda r: (r.cost_per_run_usd, r.hours_per_run))


def cheapest_per_provider(runs: Sequence[RentedRun]) -> list[RentedRun]:
    """Each provider's cheapest on-demand run and cheapest spot run, cheapest first: the
    choices a renter compares, one line per provider and kind."""
    best: dict[tuple[str, bool], RentedRun] = {}
    for r in runs:
        key = (r.offer.provider, r.offer.spot)
        if key not in best or r.cost_per_run_usd < best[key].cost_per_run_usd:
            best[key] = r
    return sorted(best.values(), key=lambda r: (r.cost_per_run_usd, r.hours_per_run))
