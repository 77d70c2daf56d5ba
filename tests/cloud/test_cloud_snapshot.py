"""The shipped cloud price snapshot (src/dlrig/cloud/data/prices.toml): every row dated and
sourced, the providers and GPUs the issue asks for present, and each price in a sane band."""

from __future__ import annotations

import datetime as dt

from dlrig.catalog import load_catalog
from dlrig.cloud.loader import load_prices, snapshot_rows
from dlrig.enums import Interconnect

# The day the snapshot was compiled: no price can be read after it.
COMPILED = dt.date(2026, 12, 6)


def test_every_row_is_dated_sourced_and_resolves_to_a_catalog_gpu() -> None:
    rows = snapshot_rows()
    offers = load_prices(load_catalog()).offers
    assert len(rows) >= 40
    for row in rows:
        assert row.price_date <= COMPILED, row
        assert "http" in row.source or "API" in row.source, row.source
    # Each row gives one offer per price it lists (on demand, spot).
    assert len(offers) == sum(
        (r.on_demand_price_per_hour_usd is not None) + (r.spot_price_per_hour_usd is not None)
        for r in rows
    )


def test_the_issues_providers_and_gpus_are_in_it() -> None:
    """Issue 38: AWS, GCP, Azure, Lambda, CoreWeave, RunPod, Vast.ai and one more GPU cloud;
    H100, H200, B200, A100, L40S, RTX 4090/5090 and MI300X where offered."""
    offers = load_prices(load_catalog()).offers
    providers = {o.provider for o in offers}
    assert {"AWS", "Google Cloud", "Azure", "Lambda", "CoreWeave", "RunPod", "Vast.ai"} <= providers
    assert len(providers) >= 8
    gpus = {o.gpu.name for o in offers}
    for wanted in ("H100 SXM5 80GB", "H100 PCIe 80GB", "H200 SXM 141GB", "B200 SXM 180GB",
                   "A100 SXM4 80GB", "NVIDIA L40S", "GeForce RTX 4090", "GeForce RTX 5090",
                   "AMD Instinct MI300X"):  # fmt: skip
        assert wanted in gpus, wanted
    assert any(o.spot for o in offers) and any(not o.spot for o in offers)


def test_prices_per_gpu_hour_sit_in_a_sane_band_and_spot_is_cheaper() -> None:
    """Per GPU-hour, from RunPod's $0.34 RTX 4090 (Community Cloud, 2026-09-25) to Azure's
    $12.29 H100 (98.32 / 8, Retail Prices API 2026-09-16): a row outside 0.1-20 USD is a typo
    or a whole-instance price divided wrongly."""
    offers = load_prices(load_catalog()).offers
    for o in offers:
        assert 0.1 <= o.price_per_gpu_hour_usd <= 20.0, (o.label, o.price_per_gpu_hour_usd)
    by_row: dict[tuple[str, str, str], dict[bool, float]] = {}
    for o in offers:
        by_row.setdefault((o.provider, o.instance, o.region), {})[o.spot] = o.price_per_hour_usd
    for key, prices in by_row.items():
        if len(prices) == 2:
            assert prices[True] < prices[False], key


def test_hgx_instances_are_nvswitch_and_8_gpu_rows_say_so() -> None:
    """AWS p5.48xlarge, Azure ND96isr H100 v5 and CoreWeave's HGX H100 are 8 H100 SXM on an
    NVSwitch board (the providers' instance pages)."""
    offers = load_prices(load_catalog()).offers
    for provider, instance in (("AWS", "p5.48xlarge"), ("Azure", "Standard_ND96isr_H100_v5"),
                               ("CoreWeave", "NVIDIA HGX H100")):  # fmt: skip
        found = [o for o in offers if o.provider == provider and o.instance == instance]
        assert found and all(o.gpus == 8 for o in found)
        assert all(o.interconnect is Interconnect.NVSWITCH for o in found)
        assert all(o.gpu.name == "H100 SXM5 80GB" for o in found)
