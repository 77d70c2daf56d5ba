"""Catalog listings as a rich table or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dlrig.catalog.schema import PartBase
from dlrig.report.jsonout import dumps

if TYPE_CHECKING:
    from rich.table import Table

COLUMNS: dict[str, list[tuple[str, str]]] = {
    "gpus": [
        ("name", "name"),
        ("memory_gb", "GiB"),
        ("memory_bandwidth_gb_s", "GB/s"),
        ("fp32_tflops", "FP32 TF"),
        ("tensor_16bit_tflops", "16-bit TC TF"),
        ("fp8_tensor_tflops", "FP8 TF"),
        ("tdp_w", "TDP W"),
        ("cooler", "cooler"),
        ("price_usd", "USD"),
        ("street_price_usd", "street USD"),
        ("used_price_usd", "used USD"),
    ],
    "cpus": [
        ("name", "name"),
        ("cores", "cores"),
        ("threads", "threads"),
        ("boost_ghz", "GHz"),
        ("pcie_lanes", "lanes"),
        ("pcie_gen", "gen"),
        ("memory_channels", "mem ch"),
        ("tdp_w", "TDP W"),
        ("socket", "socket"),
        ("price_usd", "USD"),
    ],
    "motherboards": [
        ("name", "name"),
        ("socket", "socket"),
        ("memory_type", "memory"),
        ("max_memory_gb", "max GiB"),
        ("x16_slots", "x16 slots (pos:lanes)"),
        ("price_usd", "USD"),
    ],
    "psus": [
        ("name", "name"),
        ("watts", "W"),
        ("efficiency", "80 PLUS"),
        ("pcie_8pin", "8-pin"),
        ("pcie_12v_2x6", "12V-2x6"),
        ("price_usd", "USD"),
    ],
    "cases": [
        ("name", "name"),
        ("max_gpu_length_mm", "GPU mm"),
        ("expansion_slots", "slots"),
        ("radiator_mounts_120mm", "rad 120mm"),
        ("price_usd", "USD"),
    ],
    "storage": [
        ("name", "name"),
        ("kind", "kind"),
        ("capacity_tb", "TB"),
        ("read_mb_s", "read MB/s"),
        ("price_usd", "USD"),
    ],
    "memory": [
        ("name", "name"),
        ("memory_type", "type"),
        ("size_gb", "GiB"),
        ("speed_mt_s", "MT/s"),
        ("price_usd", "USD"),
    ],
    "platforms": [
        ("name", "name"),
        ("max_gpus", "GPUs"),
        ("gpu_form", "form"),
        ("interconnect", "interconnect"),
        ("psu_watts", "PSU W"),
        ("price_usd", "USD"),
    ],
    "cooling": [
        ("name", "name"),
        ("role", "role"),
        ("fits_gpus", "fits"),
        ("slots", "slots"),
        ("radiator_mm", "radiator mm"),
        ("price_usd", "USD"),
    ],
}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        if all(isinstance(v, str) for v in value):
            return ", ".join(value)
        return " ".join(f"{s.position}:x{s.lanes}" for s in value)
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:g}"
    return str(getattr(value, "value", value))


def _field(part: PartBase, name: str) -> Any:
    if name == "tensor_16bit_tflops":
        # The mixed-precision training rate: BF16 where the GPU has it, else FP16 (Volta, Turing).
        return getattr(part, "bf16_tensor_tflops", None) or getattr(
            part, "fp16_tensor_tflops", None
        )
    return getattr(part, name, None)


def catalog_table(kind: str, parts: Sequence[PartBase]) -> Table:
    """A rich table of parts of one kind. Figures are never cut: each column is as wide as
    its longest word (a header or a list of slots wraps between words), and the name takes
    what is left, a long name wrapping onto further lines: 80 columns hold every figure."""
    from rich import box
    from rich.table import Table

    table = Table(
        title=f"{kind} ({len(parts)})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        padding=0,  # the box puts one space between columns
        pad_edge=False,
    )
    rows = [[_cell(_field(part, field)) for field, _ in COLUMNS[kind]] for part in parts]
    for i, (_, header) in enumerate(COLUMNS[kind]):
        if header == "name":
            table.add_column(header, overflow="fold", min_width=16)
        else:
            # A figure or a word is never cut: the column is at least as wide as the
            # longest of them; a header or a list of slots may wrap between words.
            words = [w for row in rows for w in row[i].split()] + header.split()
            table.add_column(header, justify="right", width=max(map(len, words)))
    for row in rows:
        table.add_row(*row)
    return table


def catalog_json(parts: Sequence[PartBase]) -> str:
    """The parts as a JSON list with the catalog's field names."""
    return dumps(list(parts))
