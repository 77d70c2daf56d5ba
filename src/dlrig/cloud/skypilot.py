"""SkyPilot's catalog CSV (`catalogs/<version>/<cloud>/vms.csv` in skypilot-org/skypilot-catalog)
read as a price list: one row per instance type, region (and, for AWS and GCP, zone), with its
accelerator, on-demand `Price` and `SpotPrice` in USD per hour.

The columns (skypilot-catalog README; catalogs/v7/lambda/vms.csv): InstanceType,
AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Price, Region, GpuInfo, SpotPrice, and
AvailabilityZone where the cloud has zones. GpuInfo is a Python-literal dict whose
`MemoryInfo.SizeInMiB` tells an A100 40GB from an 80GB. Rows without an accelerator (CPU
instances) or without a price are not offers; an accelerator the catalog does not know is
counted and left out.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from typing import Any

from dlrig.errors import ValidationError

REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")

# SkyPilot's accelerator names -> catalog GPU names. Datacenter parts default to the SXM module
# that the hyperscalers' 8-GPU instances carry; an instance type naming PCIe takes the card.
ACCELERATORS: dict[str, str] = {
    "H100": "H100 SXM5 80GB",
    "H100-80GB": "H100 SXM5 80GB",
    "H100-MEGA": "H100 SXM5 80GB",
    "H100-NVL": "H100 NVL 94GB",
    "H200": "H200 SXM 141GB",
    "B200": "B200 SXM 180GB",
    "GH200": "GH200 96GB",
    "A100": "A100 SXM4 40GB",
    "A100-80GB": "A100 SXM4 80GB",
    "L40S": "NVIDIA L40S",
    "L40": "NVIDIA L40",
    "L4": "NVIDIA L4",
    "A10": "NVIDIA A10",
    "A40": "NVIDIA A40",
    "T4": "NVIDIA T4",
    "V100": "Tesla V100 SXM2 16GB",
    "V100-32GB": "Tesla V100 SXM2 32GB",
    "A6000": "NVIDIA RTX A6000",
    "A5000": "NVIDIA RTX A5000",
    "A4000": "NVIDIA RTX A4000",
    "RTX6000-Ada": "NVIDIA RTX 6000 Ada Generation",
    "RTXPRO6000": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "RTX3090": "GeForce RTX 3090",
    "RTX4090": "GeForce RTX 4090",
    "RTX5090": "GeForce RTX 5090",
    "MI300X": "AMD Instinct MI300X",
}
PCIE_TWINS = {
    "H100 SXM5 80GB": "H100 PCIe 80GB",
    "A100 SXM4 40GB": "A100 PCIe 40GB",
    "A100 SXM4 80GB": "A100 PCIe 80GB",
}
MIB_80GB = 70_000  # an A100 row with more MiB than this is the 80 GB part


@dataclass(frozen=True)
class SkyPilotRows:
    """The rows as price-list rows (dlrig's OfferRow fields), and the accelerators left out."""

    rows: list[dict[str, Any]]
    unknown_accelerators: dict[str, int] = field(default_factory=dict)


def is_skypilot_header(columns: list[str]) -> bool:
    """A CSV whose header has SkyPilot's catalog columns."""
    return all(c in columns for c in REQUIRED_COLUMNS)


def catalog_gpu_name(accelerator: str, instance: str, gpu_info: str) -> str | None:
    """The catalog GPU a SkyPilot accelerator name stands for, or None when dlrig has no
    mapping for it."""
    name = ACCELERATORS.get(accelerator)
    if name is None:
        return None
    if name == "A100 SXM4 40GB" and _memory_mib(gpu_info) > MIB_80GB:
        name = "A100 SXM4 80GB"
    if "pcie" in instance.lower():
        name = PCIE_TWINS.get(name, name)
    return name


def _memory_mib(gpu_info: str) -> float:
    found = re.search(r"'SizeInMiB':\s*([0-9.]+)", gpu_info or "")
    return float(found.group(1)) if found else 0.0


def _number(text: str, where: str, column: str, *, integer: bool = False) -> float | None:
    """A numeric cell; empty (or NaN, as pandas writes a missing price) is None."""
    text = text.strip()
    if not text or text.lower() == "nan":
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValidationError(
            f"{where} field '{column}': expected a number, got {text!r}", field=column
        ) from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValidationError(
            f"{where} field '{column}': expected a positive number, got {text!r}", field=column
        )
    if integer and value != int(value):
        raise ValidationError(
            f"{where} field '{column}': expected a whole number, got {text!r}", field=column
        )
    return value


def parse_skypilot_csv(text: str, source: str, provider: str, date: str) -> SkyPilotRows:
    """Price-list rows from a SkyPilot vms.csv: one per (instance type, region), on demand at
    `Price` and spot at the lowest `SpotPrice` of the region's zones."""
    reader = csv.DictReader(io.StringIO(text))
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    unknown: dict[str, int] = {}
    for line, rec in enumerate(reader, start=2):
        where = f"{source}: line {line}"
        accelerator = (rec.get("AcceleratorName") or "").strip()
        if not accelerator:
            continue  # a CPU instance
        instance = (rec.get("InstanceType") or "").strip()
        if not instance:
            raise ValidationError(f"{where} field 'InstanceType': empty", field="InstanceType")
        count = _number(rec.get("AcceleratorCount") or "", where, "AcceleratorCount")
        price = _number(rec.get("Price") or "", where, "Price")
        spot = _number(rec.get("SpotPrice") or "", where, "SpotPrice")
        if count is None or (price is None and spot is None):
            continue  # listed without a price: not for rent at a known price
        gpu = catalog_gpu_name(accelerator, instance, rec.get("GpuInfo") or "")
        if gpu is None:
            unknown[accelerator] = unknown.get(accelerator, 0) + 1
            continue
        if count != int(count):
            continue  # a fractional GPU (a slice of one card) is not a whole-GPU offer
        region = (rec.get("Region") or "").strip()
        row = by_key.setdefault(
            (instance, region),
            {
                "provider": provider,
                "instance": instance,
                "gpu": gpu,
                "gpus": int(count),
                "region": region,
                "price_date": date,
                "source": f"SkyPilot catalog {source} (file dated {date})",
                **_vm_size(rec, where),
            },
        )
        if price is not None:
            row["on_demand_price_per_hour_usd"] = price
        if spot is not None:
            low = row.get("spot_price_per_hour_usd")
            row["spot_price_per_hour_usd"] = spot if low is None else min(low, spot)
    return SkyPilotRows(list(by_key.values()), unknown)


def _vm_size(rec: dict[str, str], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    vcpus = _number(rec.get("vCPUs") or "", where, "vCPUs")
    memory = _number(rec.get("MemoryGiB") or "", where, "MemoryGiB")
    if vcpus is not None and vcpus >= 1:
        out["vcpus"] = int(vcpus)
    if memory is not None:
        out["ram_gb"] = memory * 2**30 / 1e9
    return out
