"""Refresh src/dlrig/cloud/data/prices.toml from the providers' public price APIs (maintainers only:
dlrig itself never calls the network, and no test runs this script's fetches).

    .venv/bin/python scripts/refresh_cloud_prices.py [--dry-run] [--file PRICES.toml]

What it reads, and for which rows:

- Azure: the Retail Prices API (https://prices.azure.com/api/retail/prices, no key), one query
  per VM size and region; Linux consumption meters only (the Windows meter shares the meter
  name and differs by its product name; "Spot" and "Low Priority" meters are separate).
- AWS: the EC2 bulk price-list file of the row's region
  (https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/<region>/index.json,
  hundreds of MB): the Linux, shared-tenancy, no-preinstalled-software, "Used" capacity product of
  the instance type and its on-demand hourly rate. AWS's spot prices are not in the file (they
  are per zone, from the EC2 API with credentials): a row's spot price is kept.
- Vast.ai: the public offers search (https://console.vast.ai/api/v0/bundles/), verified and
  rentable single-GPU on-demand offers of the row's GPU: the median `dph_total`.

Every other row (Lambda, RunPod, CoreWeave, Nebius, Google Cloud, Vultr: pages without a public
price API) is updated by hand from the provider's pricing page; the script lists the rows whose
price is older than 90 days so that the maintainer knows which.

Each refreshed row gets today's `price_date` and a `source` naming the API and the query.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import statistics
import sys
import tomllib
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PRICES = REPO / "src" / "dlrig" / "cloud" / "data" / "prices.toml"
STALE_AFTER_DAYS = 90

AZURE_API = "https://prices.azure.com/api/retail/prices"
AWS_OFFER_FILE = (
    "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.json"
)
VAST_API = "https://console.vast.ai/api/v0/bundles/"
# Vast.ai's names for the catalog's GPUs in its offers (`gpu_name`).
VAST_GPU_NAMES = {
    "H100 SXM5 80GB": "H100 SXM",
    "H100 NVL 94GB": "H100 NVL",
    "GeForce RTX 4090": "RTX 4090",
    "GeForce RTX 5090": "RTX 5090",
    "B200 SXM 180GB": "B200",
}


@dataclass(frozen=True)
class Refreshed:
    """New prices for one row (None: keep the row's), with the source to record."""

    on_demand: float | None
    spot: float | None
    source: str


# ------------------------------------------------------------------------------------------
# Parsing (pure: tested on samples of each API's documented format)
# ------------------------------------------------------------------------------------------


def parse_azure_items(items: list[dict[str, Any]], sku: str, region: str) -> Refreshed:
    """The Linux on-demand and spot hourly prices of `sku` in `region` among Retail Prices API
    items. Exactly one of each kind must match: a second row is a shape change to look at."""

    def linux(item: dict[str, Any]) -> bool:
        return not str(item.get("productName", "")).endswith("Windows")

    rows = [
        i
        for i in items
        if i.get("armSkuName") == sku
        and i.get("armRegionName") == region
        and i.get("type") == "Consumption"
        and i.get("unitOfMeasure") == "1 Hour"
        and i.get("currencyCode", "USD") == "USD"
        and linux(i)
    ]
    on_demand = [i for i in rows if not str(i.get("meterName", "")).endswith(("Spot", "Priority"))]
    spot = [i for i in rows if str(i.get("meterName", "")).endswith("Spot")]
    if len(on_demand) > 1 or len(spot) > 1:
        raise ValueError(f"Azure {sku} {region}: {len(on_demand)} on-demand, {len(spot)} spot rows")
    if not on_demand and not spot:
        raise ValueError(f"Azure {sku} {region}: no Linux consumption price")
    return Refreshed(
        on_demand=float(on_demand[0]["retailPrice"]) if on_demand else None,
        spot=float(spot[0]["retailPrice"]) if spot else None,
        source=(
            f"Azure Retail Prices API ({AZURE_API}), armSkuName '{sku}', armRegionName "
            f"'{region}', Linux consumption meters"
        ),
    )


def parse_aws_offer_file(doc: dict[str, Any], instance_type: str) -> Refreshed:
    """The on-demand hourly USD price of `instance_type` (Linux, shared tenancy, no
    preinstalled software, used capacity) in an EC2 bulk price-list file."""
    skus = [
        sku
        for sku, product in doc["products"].items()
        if product.get("attributes", {}).get("instanceType") == instance_type
        and product["attributes"].get("operatingSystem") == "Linux"
        and product["attributes"].get("tenancy") == "Shared"
        and product["attributes"].get("preInstalledSw") == "NA"
        and product["attributes"].get("capacitystatus") == "Used"
        and product["attributes"].get("marketoption", "OnDemand") == "OnDemand"
    ]
    if len(skus) != 1:
        raise ValueError(f"AWS {instance_type}: {len(skus)} matching products, expected 1")
    terms = doc["terms"]["OnDemand"][skus[0]]
    prices = [
        float(dim["pricePerUnit"]["USD"])
        for term in terms.values()
        for dim in term["priceDimensions"].values()
        if dim.get("unit") == "Hrs"
    ]
    if len(prices) != 1:
        raise ValueError(f"AWS {instance_type}: {len(prices)} hourly prices, expected 1")
    return Refreshed(
        on_demand=prices[0],
        spot=None,
        source=(
            f"AWS EC2 price-list file (publicationDate {doc.get('publicationDate', '?')}), "
            f"'{instance_type}' Linux shared on-demand"
        ),
    )


def parse_vast_bundles(doc: dict[str, Any], gpu_name: str) -> Refreshed:
    """The median hourly price of verified, rentable single-GPU offers of `gpu_name` in a
    Vast.ai offers search result."""
    prices = [
        float(o["dph_total"])
        for o in doc.get("offers", [])
        if o.get("gpu_name") == gpu_name
        and o.get("num_gpus") == 1
        and o.get("rentable", True)
        and o.get("verification", "verified") == "verified"
        and float(o.get("dph_total") or 0) > 0
    ]
    if not prices:
        raise ValueError(f"Vast.ai {gpu_name}: no verified rentable 1x offer")
    return Refreshed(
        on_demand=statistics.median(prices),
        spot=None,
        source=(
            f"Vast.ai public offers API ({VAST_API}): median of {len(prices)} verified "
            f"rentable 1x {gpu_name} offers"
        ),
    )


def update_row(text: str, provider: str, instance: str, new: Refreshed, today: dt.date) -> str:
    """prices.toml's text with one [[offer]] block (by provider and instance) given the new
    prices, today's date and the new source; the rest of the file is left as it was."""
    blocks = re.split(r"(?m)^(?=\[\[offer\]\])", text)
    found = 0
    for i, block in enumerate(blocks):
        if not block.startswith("[[offer]]"):
            continue
        row = tomllib.loads(block)["offer"][0]
        if row["provider"] != provider or row["instance"] != instance:
            continue
        found += 1
        for key, value in (
            ("on_demand_price_per_hour_usd", new.on_demand),
            ("spot_price_per_hour_usd", new.spot),
        ):
            if value is not None:
                block = _set(block, key, f"{value:.6g}")
        block = _set(block, "price_date", today.isoformat())
        blocks[i] = _set(block, "source", json.dumps(f"{new.source}, read {today.isoformat()}"))
    if found != 1:
        raise ValueError(f"{provider} {instance}: {found} rows in the price file, expected 1")
    return "".join(blocks)


def _set(block: str, key: str, value: str) -> str:
    line = f"{key} = {value}"
    pattern = re.compile(rf"(?m)^{re.escape(key)} = .*$")
    if pattern.search(block):
        return pattern.sub(lambda _: line, block, count=1)
    head, _, tail = block.partition("\n")
    return f"{head}\n{line}\n{tail}"


def stale_rows(text: str, today: dt.date) -> list[str]:
    """'provider instance (date)' for each row older than STALE_AFTER_DAYS."""
    rows = tomllib.loads(text)["offer"]
    return [
        f"{r['provider']} {r['instance']} ({r['price_date']})"
        for r in rows
        if (today - r["price_date"]).days > STALE_AFTER_DAYS
    ]


# ------------------------------------------------------------------------------------------
# Fetching (network: run by a maintainer, never by tests)
# ------------------------------------------------------------------------------------------


def _get_json(url: str, timeout: float = 120.0) -> Any:
    request = urllib.request.Request(url, headers={"User-Agent": "dlrig-refresh-prices"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.load(response)


def fetch_azure(sku: str, region: str) -> Refreshed:
    query = (
        f"serviceName eq 'Virtual Machines' and armSkuName eq '{sku}' "
        f"and armRegionName eq '{region}'"
    )
    url = f"{AZURE_API}?{urllib.parse.urlencode({'$filter': query})}"
    items: list[dict[str, Any]] = []
    while url:
        page = _get_json(url)
        items.extend(page["Items"])
        url = page.get("NextPageLink") or ""
    return parse_azure_items(items, sku, region)


def fetch_aws(instance_type: str, region: str) -> Refreshed:
    return parse_aws_offer_file(
        _get_json(AWS_OFFER_FILE.format(region=region), 900.0), instance_type
    )


def fetch_vast(gpu_name: str) -> Refreshed:
    query = {
        "verified": {"eq": True},
        "rentable": {"eq": True},
        "num_gpus": {"eq": 1},
        "gpu_name": {"eq": gpu_name},
        "type": "on-demand",
    }
    url = f"{VAST_API}?{urllib.parse.urlencode({'q': json.dumps(query)})}"
    return parse_vast_bundles(_get_json(url), gpu_name)


def refresh(text: str, today: dt.date) -> tuple[str, list[str]]:
    """The file with every API-backed row refreshed, and what was done (or failed) per row."""
    log: list[str] = []
    for row in tomllib.loads(text)["offer"]:
        provider, instance = row["provider"], row["instance"]
        try:
            if provider == "Azure":
                new = fetch_azure(instance, row["region"])
            elif provider == "AWS":
                new = fetch_aws(instance, row["region"])
            elif provider == "Vast.ai" and row["gpu"] in VAST_GPU_NAMES:
                new = fetch_vast(VAST_GPU_NAMES[row["gpu"]])
            else:
                continue
        except (OSError, ValueError, KeyError) as exc:
            log.append(f"kept {provider} {instance}: {exc}")
            continue
        text = update_row(text, provider, instance, new, today)
        log.append(f"refreshed {provider} {instance}: {new.on_demand} / {new.spot}")
    return text, log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=PRICES)
    parser.add_argument("--dry-run", action="store_true", help="print, do not write")
    args = parser.parse_args(argv)
    today = dt.date.today()
    text, log = refresh(args.file.read_text("utf-8"), today)
    for line in log:
        print(line)
    for row in stale_rows(text, today):
        print(f"update by hand (older than {STALE_AFTER_DAYS} days): {row}")
    if not args.dry_run:
        args.file.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
