"""A resolved `Build` back to a build-file mapping (design.md's build file), for saving.

`resolve_build(build_to_document(b), b.source, catalog) == b` for every build whose parts come
from `catalog` or from inline specs: a part is written by its catalog name when the catalog holds
that exact part (same fields), otherwise as an inline `spec` with every field that differs from
the schema's default. Per-build settings (`count`, `pcie`, `cooler`, `holds_dataset`) are kept.
The mapping holds only YAML/TOML/JSON types (no None: TOML cannot write it).

One loss is accepted: a RAM kit that is not in the catalog becomes its size, type, speed and
price (the build file has no inline kit), which is all the rules and the model read of it.
"""

from __future__ import annotations

from typing import Any

from dlrig.catalog.loader import KIND_OF_MODEL, Catalog, load_catalog
from dlrig.catalog.schema import PartBase
from dlrig.errors import DlrigError
from dlrig.machine.model import Build, GPUGroup, Measured, MemoryConfig, StorageDevice


def build_to_document(build: Build, catalog: Catalog | None = None) -> dict[str, Any]:
    """The build as a build-file mapping: catalog parts by name, other parts as inline specs.

    `catalog` is the one the build was resolved against (default: the built-in catalog).
    """
    cat = catalog if catalog is not None else load_catalog()
    doc: dict[str, Any] = {"name": build.name}
    if build.gpus:
        doc["gpus"] = [_gpu_entry(g, cat) for g in build.gpus]
    if build.cpu is not None:
        doc["cpu"] = _entry(build.cpu, cat, count=build.cpu_count)
    if build.motherboard is not None:
        doc["motherboard"] = _entry(build.motherboard, cat)
    if build.platform is not None:
        doc["platform"] = _entry(build.platform, cat)
    if build.memory is not None:
        doc["memory"] = _memory_entry(build.memory, cat)
    if build.storage:
        doc["storage"] = [_storage_entry(s, cat) for s in build.storage]
    if build.psu is not None:
        doc["psu"] = _entry(build.psu, cat, count=build.psu_count)
    if build.case is not None:
        doc["case"] = _entry(build.case, cat)
    if build.loop:
        doc["loop"] = [_entry(e.part, cat, count=e.count) for e in build.loop]
    if build.nodes != 1:
        doc["nodes"] = build.nodes
    if build.network is not None:
        doc["network"] = {
            "kind": build.network.kind.value,
            "gbit_s": build.network.gbit_s,
            "adapters_per_node": build.network.adapters_per_node,
        }
    doc["prices"] = {
        "electricity_per_kwh": build.prices.electricity_per_kwh,
        "currency": build.prices.currency,
        "co2_kg_per_kwh": build.prices.co2_kg_per_kwh,
    }
    if build.measured is not None:
        doc["measured"] = _measured_entry(build.measured)
    if build.mains is not None:
        doc["circuit"] = build.mains.name
    return doc


def _measured_entry(measured: Measured) -> dict[str, Any]:
    """The `measured:` block, its unmeasured (None) figures left out."""

    def present(values: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if v is not None and v != [] and v != {}}

    return present(
        {
            "taken": measured.taken,
            "source": measured.source,
            "ram_bandwidth_gb_s": measured.ram_bandwidth_gb_s,
            "loader_ms_per_sample_per_core": measured.loader_ms_per_sample_per_core,
            "storage": [
                present(
                    {
                        "model": d.model,
                        "read_mb_s": d.read_mb_s,
                        "read_queue_depth": d.read_queue_depth,
                        "read_mb_s_qd1": d.read_mb_s_qd1,
                    }
                )
                for d in measured.storage
            ],
            "gpus": [
                present(
                    {
                        "model": g.model,
                        "index": g.index,
                        "matmul_tflops": {p.value: t for p, t in g.matmul_tflops},
                        "memory_bandwidth_gb_s": g.memory_bandwidth_gb_s,
                        "h2d_pinned_gb_s": g.h2d_pinned_gb_s,
                        "h2d_pageable_gb_s": g.h2d_pageable_gb_s,
                    }
                )
                for g in measured.gpus
            ],
            "p2p_gb_s": measured.p2p_gb_s,
            "peer_to_peer": measured.peer_to_peer,
            "allreduce_busbw_gb_s": measured.allreduce_busbw_gb_s,
            "allreduce_gpus": measured.allreduce_gpus,
        }
    )


def _in_catalog(part: PartBase, catalog: Catalog) -> bool:
    """The catalog's part of this name is this very part (same type, same fields)."""
    # An inline spec (GPUSpec, ...) is looked up as its catalog type; it never equals a catalog
    # part (pydantic compares types), so it stays a spec and round-trips as one.
    catalog_type = next(c for c in type(part).__mro__ if c in KIND_OF_MODEL)
    try:
        found = catalog.find(catalog_type, part.name)
    except DlrigError:
        return False
    return found == part


def _spec(part: PartBase) -> dict[str, Any]:
    """The part's fields that differ from the catalog's defaults, less those it does not know
    (a partial spec stays partial: its stated defaults are not written as facts)."""
    dumped: dict[str, Any] = part.model_dump(
        mode="json", exclude_defaults=True, exclude_none=True, exclude=set(part.unknown_fields)
    )
    return dumped


def _model_or_spec(part: PartBase, catalog: Catalog) -> dict[str, Any]:
    """`{"model": name}` for a catalog part, else `{"spec": fields}`: the start of an entry."""
    return {"model": part.name} if _in_catalog(part, catalog) else {"spec": _spec(part)}


def _entry(part: PartBase, catalog: Catalog, *, count: int = 1) -> dict[str, Any] | str:
    base = _model_or_spec(part, catalog)
    if count != 1:
        base["count"] = count
    if list(base) == ["model"]:
        return part.name
    return base


def _gpu_entry(group: GPUGroup, catalog: Catalog) -> dict[str, Any]:
    entry = _model_or_spec(group.gpu, catalog)
    entry["count"] = group.count
    pcie = {
        k: v for k, v in (("gen", group.pcie_gen), ("lanes", group.pcie_lanes)) if v is not None
    }
    if pcie:
        entry["pcie"] = pcie
    if group.cooler_override is not None:
        entry["cooler"] = group.cooler_override.value
    if group.power_limit_w is not None:
        entry["power_limit_w"] = group.power_limit_w
    return entry


def _storage_entry(device: StorageDevice, catalog: Catalog) -> dict[str, Any]:
    entry = _model_or_spec(device.device, catalog)
    if device.count != 1:
        entry["count"] = device.count
    if device.holds_dataset is not None:
        entry["holds_dataset"] = device.holds_dataset
    return entry


def _memory_entry(memory: MemoryConfig, catalog: Catalog) -> dict[str, Any]:
    """A catalog kit by name plus whatever the build set apart from it; else size/type/speed."""
    kit = memory.kit
    if kit is not None and _in_catalog(kit, catalog):
        entry: dict[str, Any] = {"model": kit.name}
        if memory.kit_count != 1:
            entry["count"] = memory.kit_count
        kit_price = kit.price_usd * memory.kit_count if kit.price_usd else None
        defaults: dict[str, Any] = {
            "size_gb": kit.size_gb * memory.kit_count,
            "type": kit.memory_type,
            "speed_mt_s": kit.speed_mt_s,
            "price_usd": kit_price,
        }
    else:
        entry = {"size_gb": memory.size_gb}
        defaults = {"type": None, "speed_mt_s": None, "price_usd": None}
    values = {
        "size_gb": memory.size_gb,
        "type": memory.memory_type,
        "speed_mt_s": memory.speed_mt_s,
        "price_usd": memory.price_usd,
    }
    for key, default in defaults.items():
        value = values[key]
        if value is not None and value != default:
            entry[key] = value
    return entry
