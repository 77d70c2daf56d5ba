"""scripts/refresh_cloud_prices.py's parsing and rewriting, on samples of each API's documented
format (no network: the script's fetches run only on a maintainer's machine)."""

from __future__ import annotations

import datetime as dt
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import refresh_cloud_prices as refresh  # noqa: E402

# Recorded: Azure Retail Prices API items for Standard_ND96isr_H100_v5 in eastus as captured
# live on 2026-09-16 (trimmed to the fields the script reads; a public price checker's test
# fixture, the snapshot's Azure source): Linux and Windows share the meter name.
AZURE_ITEMS = [
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5",
     "meterName": "ND96isrH100v5", "productName": "Virtual Machines NDsr H100 v5 Series",
     "type": "Consumption", "unitOfMeasure": "1 Hour", "currencyCode": "USD",
     "retailPrice": 98.32},
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5",
     "meterName": "ND96isrH100v5", "productName": "Virtual Machines NDsr H100 v5 Series Windows",
     "type": "Consumption", "unitOfMeasure": "1 Hour", "currencyCode": "USD",
     "retailPrice": 102.736},
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5",
     "meterName": "ND96isrH100v5 Spot", "productName": "Virtual Machines NDsr H100 v5 Series",
     "type": "Consumption", "unitOfMeasure": "1 Hour", "currencyCode": "USD",
     "retailPrice": 18.169536},
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5",
     "meterName": "ND96isrH100v5 Low Priority",
     "productName": "Virtual Machines NDsr H100 v5 Series Windows", "type": "Consumption",
     "unitOfMeasure": "1 Hour", "currencyCode": "USD", "retailPrice": 41.094},
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5",
     "meterName": "ND96isrH100v5", "productName": "Virtual Machines NDsr H100 v5 Series",
     "type": "Reservation", "reservationTerm": "1 Year", "unitOfMeasure": "1 Hour",
     "currencyCode": "USD", "retailPrice": 531000.0},
]  # fmt: skip

# Hand-made in the EC2 bulk price-list file's documented format (products keyed by SKU, terms
# by SKU and offer term, priceDimensions with pricePerUnit.USD); the figures are the snapshot's
# p5.48xlarge rate and a Windows twin that must not be taken.
AWS_OFFER_FILE = {
    "formatVersion": "v1.0",
    "offerCode": "AmazonEC2",
    "publicationDate": "2026-09-10T19:55:14Z",
    "products": {
        "SKU1": {"sku": "SKU1", "productFamily": "Compute Instance", "attributes": {
            "instanceType": "p5.48xlarge", "operatingSystem": "Linux", "tenancy": "Shared",
            "preInstalledSw": "NA", "capacitystatus": "Used", "regionCode": "us-east-1"}},
        "SKU2": {"sku": "SKU2", "productFamily": "Compute Instance", "attributes": {
            "instanceType": "p5.48xlarge", "operatingSystem": "Windows", "tenancy": "Shared",
            "preInstalledSw": "NA", "capacitystatus": "Used", "regionCode": "us-east-1"}},
        "SKU3": {"sku": "SKU3", "productFamily": "Compute Instance", "attributes": {
            "instanceType": "p5.48xlarge", "operatingSystem": "Linux", "tenancy": "Dedicated",
            "preInstalledSw": "NA", "capacitystatus": "Used", "regionCode": "us-east-1"}},
    },
    "terms": {"OnDemand": {
        "SKU1": {"SKU1.JRTCKXETXF": {"priceDimensions": {"SKU1.JRTCKXETXF.6YS6EN2CT7": {
            "unit": "Hrs", "pricePerUnit": {"USD": "55.0400000000"}}}}},
        "SKU2": {"SKU2.JRTCKXETXF": {"priceDimensions": {"SKU2.JRTCKXETXF.6YS6EN2CT7": {
            "unit": "Hrs", "pricePerUnit": {"USD": "73.4400000000"}}}}},
    }},
}  # fmt: skip

# Hand-made in the shape of Vast.ai's offers search result (`offers` with gpu_name, num_gpus,
# dph_total, verification, rentable): three verified 1x offers, a 2x one and an unverified one.
VAST_BUNDLES = {
    "offers": [
        {"gpu_name": "H100 SXM", "num_gpus": 1, "dph_total": 3.1, "verification": "verified",
         "rentable": True},
        {"gpu_name": "H100 SXM", "num_gpus": 1, "dph_total": 3.3, "verification": "verified",
         "rentable": True},
        {"gpu_name": "H100 SXM", "num_gpus": 1, "dph_total": 4.2, "verification": "verified",
         "rentable": True},
        {"gpu_name": "H100 SXM", "num_gpus": 2, "dph_total": 5.0, "verification": "verified",
         "rentable": True},
        {"gpu_name": "H100 SXM", "num_gpus": 1, "dph_total": 1.0, "verification": "unverified",
         "rentable": True},
    ]
}  # fmt: skip


def test_azure_takes_the_linux_on_demand_and_spot_meters() -> None:
    got = refresh.parse_azure_items(AZURE_ITEMS, "Standard_ND96isr_H100_v5", "eastus")
    assert (got.on_demand, got.spot) == (98.32, 18.169536)
    with pytest.raises(ValueError, match="no Linux consumption price"):
        refresh.parse_azure_items(AZURE_ITEMS, "Standard_ND96isr_H100_v5", "westus")
    with pytest.raises(ValueError, match="2 on-demand"):
        refresh.parse_azure_items([*AZURE_ITEMS, AZURE_ITEMS[0]], "Standard_ND96isr_H100_v5",
                                  "eastus")  # fmt: skip


def test_aws_takes_the_linux_shared_product() -> None:
    got = refresh.parse_aws_offer_file(AWS_OFFER_FILE, "p5.48xlarge")
    assert got.on_demand == 55.04 and got.spot is None
    assert "2026-09-10" in got.source
    with pytest.raises(ValueError, match="0 matching"):
        refresh.parse_aws_offer_file(AWS_OFFER_FILE, "p4d.24xlarge")


def test_vast_takes_the_median_of_verified_single_gpu_offers() -> None:
    got = refresh.parse_vast_bundles(VAST_BUNDLES, "H100 SXM")
    assert got.on_demand == 3.3 and "median of 3" in got.source
    with pytest.raises(ValueError):
        refresh.parse_vast_bundles(VAST_BUNDLES, "RTX 5090")


def test_a_row_is_rewritten_in_place_and_the_file_still_loads() -> None:
    text = refresh.PRICES.read_text("utf-8")
    today = dt.date(2026, 12, 24)
    new = refresh.Refreshed(on_demand=90.5, spot=17.0, source="Azure Retail Prices API (test)")
    out = refresh.update_row(text, "Azure", "Standard_ND96isr_H100_v5", new, today)
    rows = {(r["provider"], r["instance"]): r for r in tomllib.loads(out)["offer"]}
    azure = rows[("Azure", "Standard_ND96isr_H100_v5")]
    assert azure["on_demand_price_per_hour_usd"] == 90.5
    assert azure["spot_price_per_hour_usd"] == 17.0
    assert azure["price_date"] == today and azure["source"].endswith("read 2026-12-24")
    before = {(r["provider"], r["instance"]): r for r in tomllib.loads(text)["offer"]}
    assert {k: v for k, v in rows.items() if k[0] != "Azure"} == {
        k: v for k, v in before.items() if k[0] != "Azure"
    }
    with pytest.raises(ValueError, match="0 rows"):
        refresh.update_row(text, "Azure", "Standard_ND96_nonexistent", new, today)


def test_stale_rows_are_listed_for_a_hand_update() -> None:
    """On 2026-12-06 the rows read before 2026-09-07 are stale: Vultr (2026-05-18), Vast.ai's
    June captures and AWS p5en (2026-08-06)."""
    stale = refresh.stale_rows(refresh.PRICES.read_text("utf-8"), dt.date(2026, 12, 6))
    assert any(s.startswith("Vultr") for s in stale)
    assert any("p5en.48xlarge (2026-08-06)" in s for s in stale)
    assert not any(s.startswith("CoreWeave") for s in stale)
