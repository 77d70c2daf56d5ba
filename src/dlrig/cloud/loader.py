"""Load the shipped price snapshot and a user's `--prices` file.

A user's file is dlrig's own format (YAML, TOML or JSON with an `offers` list, or a CSV whose
header is the same field names) or SkyPilot's catalog CSV (`skypilot.py`). Its offers are
added to the snapshot's; one with a snapshot offer's provider, instance, region and kind (on
demand or spot) replaces it. Every problem is one error naming the file, the row and the field.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from dlrig.catalog.loader import Catalog
from dlrig.cloud.offers import CloudOffer, merged, offers_from_rows
from dlrig.cloud.schema import OfferRow, PriceFile
from dlrig.cloud.skypilot import is_skypilot_header, parse_skypilot_csv
from dlrig.errors import CatalogError, InputFileError, ValidationError
from dlrig.io.documents import read_document, read_input_bytes
from dlrig.io.validation import validate_document

# SkyPilot's AWS catalog, every instance in every zone, is tens of MB; a price list is no more.
MAX_CSV_BYTES = 200_000_000

SKYPILOT_PROVIDERS = {
    "aws": "AWS",
    "gcp": "Google Cloud",
    "azure": "Azure",
    "lambda": "Lambda",
    "runpod": "RunPod",
    "vast": "Vast.ai",
    "nebius": "Nebius",
    "oci": "Oracle Cloud",
    "fluidstack": "Fluidstack",
    "paperspace": "Paperspace",
    "cudo": "Cudo Compute",
    "do": "DigitalOcean",
    "hyperbolic": "Hyperbolic",
    "scaleway": "Scaleway",
    "ovhcloud": "OVHcloud",
    "primeintellect": "Prime Intellect",
    "shadeform": "Shadeform",
}


@dataclass(frozen=True)
class PriceList:
    """The offers to rent from, and what reading a user's file left out (SkyPilot rows whose
    accelerator dlrig does not know, by name)."""

    offers: tuple[CloudOffer, ...]
    left_out: tuple[tuple[str, int], ...] = ()
    user_file: str | None = None


@functools.cache
def snapshot_rows() -> tuple[OfferRow, ...]:
    """The shipped snapshot's rows (validated once per process)."""
    data = resources.files("dlrig.cloud").joinpath("data/prices.toml").read_text("utf-8")
    try:
        return PriceFile.model_validate(tomllib.loads(data)).rows
    except Exception as exc:  # a broken shipped file is a bug to report, not user input
        raise CatalogError(f"dlrig/cloud/data/prices.toml: {exc}") from None


def load_prices(catalog: Catalog, user_file: Path | None = None) -> PriceList:
    """The snapshot's offers, with a user's file merged in when given."""
    base = offers_from_rows(snapshot_rows(), catalog, "dlrig/cloud/data/prices.toml")
    if user_file is None:
        return PriceList(tuple(base))
    rows, left_out, source = read_price_file(user_file)
    extra = offers_from_rows(rows, catalog, source)
    return PriceList(tuple(merged(base, extra)), left_out, source)


def read_price_file(path: Path) -> tuple[tuple[OfferRow, ...], tuple[tuple[str, int], ...], str]:
    """(rows, accelerators left out, display name) of a user's price file."""
    if path.suffix.lower() != ".csv":
        source, doc = read_document(path)
        rows = validate_document(PriceFile, doc, source).rows
        if not rows:
            raise ValidationError(
                f"{source}: no offers; expected an 'offers' list (or TOML [[offer]] tables)",
                hint="each offer: provider, instance, gpu, gpus, on_demand_price_per_hour_usd "
                "and/or spot_price_per_hour_usd, price_date, source",
            )
        return rows, (), source
    source, text = _read_csv_text(path)
    header = next(csv.reader(io.StringIO(text)), [])
    if is_skypilot_header(header):
        date = dt.date.fromtimestamp(path.stat().st_mtime).isoformat()
        found = parse_skypilot_csv(text, source, _skypilot_provider(path), date)
        rows = tuple(_validated(r, f"{source}: row {i + 1}") for i, r in enumerate(found.rows))
        if not rows:
            raise ValidationError(
                f"{source}: no priced GPU instance dlrig knows in this SkyPilot catalog"
            )
        return rows, tuple(sorted(found.unknown_accelerators.items())), source
    return _own_csv(text, source, header), (), source


def _skypilot_provider(path: Path) -> str:
    """SkyPilot keeps one catalog per cloud, `<cloud>/vms.csv`: the provider is the folder's
    name; any other file is named after its stem."""
    name = path.parent.name if path.stem == "vms" else path.stem
    return SKYPILOT_PROVIDERS.get(name.lower(), name)


def _read_csv_text(path: Path) -> tuple[str, str]:
    name, data = read_input_bytes(path, MAX_CSV_BYTES, expected="a CSV, YAML or TOML file")
    try:
        return name, data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{name}: not UTF-8 text (bad byte at offset {exc.start})", hint="save it as UTF-8"
        ) from None


def _own_csv(text: str, source: str, header: list[str]) -> tuple[OfferRow, ...]:
    """A CSV of dlrig's own fields, one offer a line; `gpu_counts` as '2;4;8'."""
    known = set(OfferRow.model_fields)
    unknown = [c for c in header if c not in known]
    if not header:
        raise ValidationError(
            f"{source}: no header row",
            hint="dlrig's columns: " + ", ".join(OfferRow.model_fields),
        )
    if unknown:
        raise ValidationError(
            f"{source}: line 1: unknown column '{unknown[0]}'",
            hint="dlrig's columns: "
            + ", ".join(OfferRow.model_fields)
            + "; or SkyPilot's catalog CSV (InstanceType, AcceleratorName, ...)",
        )
    rows: list[OfferRow] = []
    for line, rec in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        doc: dict[str, Any] = {k: v.strip() for k, v in rec.items() if k and v and v.strip()}
        if not doc:
            continue
        if "gpu_counts" in doc:
            doc["gpu_counts"] = [c for c in doc["gpu_counts"].replace(",", ";").split(";") if c]
        rows.append(_validated(doc, f"{source}: line {line}"))
    if not rows:
        raise ValidationError(f"{source}: no offers under the header")
    return tuple(rows)


def _validated(doc: dict[str, Any], where: str) -> OfferRow:
    return validate_document(OfferRow, doc, where)
