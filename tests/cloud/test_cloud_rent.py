"""The job on a rented instance (cloud/rent.py, cloud/instance.py): the smallest GPU count that
holds it, the run's cost as hours x price, spot's stated restart overhead, and a VM's missing
peer-to-peer slowing a multi-GPU job."""

from __future__ import annotations

import datetime as dt

import pytest

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.cloud.instance import DEFAULT_VCPUS_PER_GPU, instance_build
from dlrig.cloud.loader import snapshot_rows
from dlrig.cloud.offers import CloudOffer
from dlrig.cloud.rent import cheapest_per_provider, price_job, run_on_offer, spot_overhead_fraction
from dlrig.enums import Interconnect
from dlrig.model import estimate
from dlrig.workloads import load_workload


def _offer(
    gpu: str,
    *,
    spot: bool = False,
    peer_to_peer: bool = True,
    counts: tuple[int, ...] = (2, 4, 8),
    interconnect: Interconnect = Interconnect.PCIE,
    provider: str = "Test",
    price: float = 2.0,
    vcpus: int | None = None,
) -> CloudOffer:
    return CloudOffer(
        provider=provider, instance="test", gpu=load_catalog().find(GPU, gpu), gpus=1,
        price_per_hour_usd=price, spot=spot, interconnect=interconnect,
        peer_to_peer=peer_to_peer, region="r", price_date=dt.date(2026, 12, 1), source="test",
        vcpus=vcpus, gpu_counts=counts,
    )  # fmt: skip


def test_spot_overhead_is_the_stated_restarts() -> None:
    """One interruption every 8 h, each losing a 15-minute restart and half a 30-minute
    checkpoint interval: (15 + 15) / 60 / 8 = 6.25% more hours."""
    assert spot_overhead_fraction() == pytest.approx(0.0625)
    job = load_workload("llama-3-8b-lora")
    on_demand = run_on_offer(_offer("H100 SXM5 80GB"), job)
    spot = run_on_offer(_offer("H100 SXM5 80GB", spot=True), job)
    assert on_demand is not None and spot is not None
    assert spot.hours_per_run == pytest.approx(on_demand.hours_per_run * 1.0625)


def test_cost_per_run_is_hours_times_the_price_of_the_count_rented() -> None:
    """Llama 3 8B full fine-tuning (AdamW, bf16) does not fit one 80 GB H100: the offer's next
    count, 2, holds it, at twice the per-GPU price."""
    run = run_on_offer(_offer("H100 SXM5 80GB", price=2.5), load_workload("llama-3-8b"))
    assert run is not None and run.gpus == 2
    assert run.price_per_hour_usd == pytest.approx(5.0)
    assert run.cost_per_run_usd == pytest.approx(run.hours_per_run * 5.0)


def test_an_offer_that_cannot_hold_the_job_is_left_out() -> None:
    """Llama 3 70B full fine-tuning on one 24 GB RTX 4090 sold alone: no count holds it."""
    assert run_on_offer(_offer("GeForce RTX 4090", counts=()), load_workload("llama-3-70b")) is None


def test_a_vm_without_peer_to_peer_stages_the_all_reduce_through_the_host() -> None:
    """Four L40S passed through to a VM without peer access (Platform.peer_to_peer false, the
    model's host-staged ring: 4.0 of 15.75 GB/s, achievable_rates.csv): GPT-2's step is slower
    than on the same instance with P2P, and the estimate says why."""
    job = load_workload("gpt2")
    with_p2p = estimate(instance_build(_offer("NVIDIA L40S"), 4), job)
    without = estimate(instance_build(_offer("NVIDIA L40S", peer_to_peer=False), 4), job)
    assert without.step_time_s > with_p2p.step_time_s * 1.2
    assert any("no PCIe peer-to-peer" in a for a in without.assumptions)


def test_vcpus_scale_with_the_gpus_rented_and_default_to_the_fewest_a_gpu() -> None:
    """Lambda's 1x H100 gives 26 vCPUs (13 cores); an offer without a figure gets 12 vCPUs a
    GPU, the fewest of the snapshot's rows that state one (Azure ND96isr H100 v5: 96 / 8)."""
    stated = [r.vcpus / r.gpus for r in snapshot_rows() if r.vcpus]
    assert min(stated) == DEFAULT_VCPUS_PER_GPU
    lambda_h100 = instance_build(_offer("H100 SXM5 80GB", vcpus=26, counts=()), 1)
    assert lambda_h100.cpu is not None and lambda_h100.cpu.cores == 13
    unknown = instance_build(_offer("H100 SXM5 80GB"), 4)
    assert unknown.cpu is not None and unknown.cpu.threads == 48


def test_one_line_per_provider_and_kind_cheapest_first() -> None:
    job = load_workload("llama-3-8b-lora")
    offers = [_offer("H100 SXM5 80GB", provider="A", price=p) for p in (3.0, 2.0)]
    offers += [_offer("H100 SXM5 80GB", provider="A", price=1.0, spot=True)]
    offers += [_offer("GeForce RTX 4090", provider="B", price=0.4)]
    runs = price_job(offers, job)
    shown = cheapest_per_provider(runs)
    assert [(r.offer.provider, r.offer.spot, r.price_per_hour_usd) for r in shown] == [
        ("A", True, 1.0), ("B", False, 0.4), ("A", False, 2.0),
    ]  # fmt: skip
    costs = [r.cost_per_run_usd for r in shown]
    assert costs == sorted(costs)
