"""Read a build file and resolve its part names against the catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from dlrig.catalog.loader import Catalog, load_catalog
from dlrig.catalog.schema import (
    CPU,
    GPU,
    PSU,
    Case,
    LoopPart,
    MemoryKit,
    Motherboard,
    PartBase,
    Platform,
    Storage,
)
from dlrig.errors import DlrigError, UnknownPartError, ValidationError
from dlrig.io.documents import read_document
from dlrig.io.validation import validate_document
from dlrig.machine.loop import LoopEntry
from dlrig.machine.model import (
    Build,
    GPUGroup,
    Measured,
    MeasuredDisk,
    MeasuredGPU,
    MemoryConfig,
    Network,
    Prices,
    StorageDevice,
    power_limit_range_w,
)
from dlrig.machine.named import MeasuredBlock, MemoryEntry, NamedBuildFile, part_form
from dlrig.machine.partial import resolve_spec
from dlrig.mains import find_mains


def parse_build(doc: dict[str, Any], source: str) -> NamedBuildFile:
    """Validate a build document; errors name the file and the field.

    A file whose parts are all named is validated by NamedBuildFile's small schema; any other
    (inline specs, or an error) by the full BuildFile, whose result or error stands."""
    try:
        return validate_document(NamedBuildFile, doc, source)
    except ValidationError:
        from dlrig.machine.schema import BuildFile

        return validate_document(BuildFile, doc, source)


P = TypeVar("P", bound=PartBase)

# Per-build settings of an entry, as opposed to the part's own fields.
_SETTINGS = frozenset({"count", "pcie", "holds_dataset", "power_limit_w"})


def _find(catalog: Catalog, model: type[P], name: str, source: str, where: str) -> P:
    try:
        return catalog.find(model, name)
    except UnknownPartError as exc:
        raise UnknownPartError(f"{source}: {where}: {exc.message}", hint=exc.hint) from None


def _part(entry: Any, catalog: Catalog, model: type[P], source: str, where: str) -> P:
    """The part an entry names or describes, whichever of the four forms it is written in."""
    if isinstance(entry, str):
        return _find(catalog, model, entry, source, where)
    if "model" in type(entry).model_fields:
        return _find(catalog, model, entry.model, source, where)
    spec = entry.spec if "spec" in type(entry).model_fields else entry
    fields = {
        k: getattr(spec, k)
        for k in spec.model_fields_set
        if spec is not entry or k not in _SETTINGS
    }
    return resolve_spec(model, fields, f"{source}: {where}")


def _setting(entry: Any, name: str, default: Any) -> Any:
    """A per-build setting of an entry (a bare catalog name has none)."""
    if isinstance(entry, str) or name not in type(entry).model_fields:
        return default
    return getattr(entry, name)


def _power_limit(entry: Any, gpu: GPU, source: str, where: str) -> float | None:
    """The entry's `power_limit_w`, checked against the card's range."""
    limit: float | None = _setting(entry, "power_limit_w", None)
    if limit is None:
        return None
    low_w, high_w = power_limit_range_w(gpu)
    if not low_w - 1e-9 <= limit <= high_w + 1e-9:
        raise ValidationError(
            f"{source}: field '{where}': {limit:g} W is outside what a {gpu.name} takes: "
            f"expected {low_w:.0f}-{high_w:.0f} W ("
            + (
                "the driver's lowest limit"
                if gpu.power_limit_min_w is not None
                else "a third of its stock power"
            )
            + f" to its stock {high_w:.0f} W)",
            field=where,
            reason=f"expected {low_w:.0f}-{high_w:.0f} W",
        )
    return limit


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _measured_part(
    name: str, kind: type[PartBase], names: tuple[str, ...], cat: Catalog, source: str, where: str
) -> str:
    """The build's part a measured entry names: its name as written or as the catalog spells
    it (aliases, case); a part the build lacks is a typo, refused."""
    if name in names:
        return name
    try:
        spelled = cat.find(kind, name).name
    except DlrigError:
        spelled = None
    if spelled in names:
        return str(spelled)
    listed = ", ".join(names) or "none"
    raise ValidationError(
        f"{source}: field '{where}': '{name}' is not a part of this build (its parts: {listed})",
        field=where,
        reason="not a part of this build",
    )


def _measured(
    block: MeasuredBlock, gpus: tuple[str, ...], drives: tuple[str, ...], cat: Catalog, source: str
) -> Measured:
    return Measured(
        taken=block.taken,
        source=block.source,
        ram_bandwidth_gb_s=block.ram_bandwidth_gb_s,
        loader_ms_per_sample_per_core=block.loader_ms_per_sample_per_core,
        storage=tuple(
            MeasuredDisk(
                _measured_part(
                    d.model, Storage, drives, cat, source, f"measured.storage.{i}.model"
                ),
                d.read_mb_s,
                d.read_queue_depth,
                d.read_mb_s_qd1,
            )
            for i, d in enumerate(block.storage)
        ),
        gpus=tuple(
            MeasuredGPU(
                _measured_part(g.model, GPU, gpus, cat, source, f"measured.gpus.{i}.model"),
                tuple(sorted(g.matmul_tflops.items())),
                g.memory_bandwidth_gb_s,
                g.h2d_pinned_gb_s,
                g.h2d_pageable_gb_s,
                g.index,
            )
            for i, g in enumerate(block.gpus)
        ),
        p2p_gb_s=block.p2p_gb_s,
        peer_to_peer=block.peer_to_peer,
        allreduce_busbw_gb_s=block.allreduce_busbw_gb_s,
        allreduce_gpus=block.allreduce_gpus,
    )


def resolve_build(doc: dict[str, Any], source: str, catalog: Catalog | None = None) -> Build:
    """Validate a build document and look its parts up in the catalog."""
    cat = catalog if catalog is not None else load_catalog()
    bf = parse_build(doc, source)

    gpus = []
    for i, g in enumerate(_listed(bf.gpus)):
        pcie = _setting(g, "pcie", None)
        # Written among the spec's fields, `cooler` is the card's own; beside `model` or
        # `spec`, it overrides the card's.
        in_spec = part_form(g) == "spec-fields"
        gpu = _part(g, cat, GPU, source, f"gpus.{i}")
        gpus.append(
            GPUGroup(
                gpu=gpu,
                count=_setting(g, "count", 1),
                pcie_gen=pcie.gen if pcie else None,
                pcie_lanes=pcie.lanes if pcie else None,
                cooler_override=None if in_spec else _setting(g, "cooler", None),
                power_limit_w=_power_limit(g, gpu, source, f"gpus.{i}.power_limit_w"),
            )
        )

    def one(entry: Any, model: type[P], where: str) -> P | None:
        return None if entry is None else _part(entry, cat, model, source, where)

    storage = tuple(
        StorageDevice(
            device=_part(s, cat, Storage, source, f"storage.{i}"),
            count=_setting(s, "count", 1),
            holds_dataset=_setting(s, "holds_dataset", None),
        )
        for i, s in enumerate(_listed(bf.storage))
    )

    memory = None
    if bf.memory is not None:
        m = MemoryEntry(model=bf.memory) if isinstance(bf.memory, str) else bf.memory
        kit = _find(cat, MemoryKit, m.model, source, "memory") if m.model else None
        memory = MemoryConfig(
            size_gb=m.size_gb if m.size_gb is not None else (kit.size_gb * m.count if kit else 0),
            memory_type=m.type or (kit.memory_type if kit else None),
            speed_mt_s=m.speed_mt_s or (kit.speed_mt_s if kit else None),
            kit=kit,
            kit_count=m.count,
            price_usd=m.price_usd
            if m.price_usd is not None
            else (kit.price_usd * m.count if kit and kit.price_usd else None),
        )

    platform = one(bf.platform, Platform, "platform")
    cpu = one(bf.cpu, CPU, "cpu")
    cpu_count = _setting(bf.cpu, "count", 1) if bf.cpu is not None else 1
    if platform is not None:
        # A server sold with its GPUs or CPUs has them even when the file lists none.
        if not gpus and platform.included_gpu and platform.included_gpu_count:
            bundled = _find(cat, GPU, platform.included_gpu, source, "platform.included_gpu")
            gpus.append(GPUGroup(gpu=bundled, count=platform.included_gpu_count))
        if cpu is None and platform.included_cpu:
            cpu = _find(cat, CPU, platform.included_cpu, source, "platform.included_cpu")
            cpu_count = platform.cpu_sockets

    return Build(
        name=bf.name,
        gpus=tuple(gpus),
        cpu=cpu,
        cpu_count=cpu_count,
        motherboard=one(bf.motherboard, Motherboard, "motherboard"),
        platform=platform,
        memory=memory,
        storage=storage,
        psu=one(bf.psu, PSU, "psu"),
        psu_count=_setting(bf.psu, "count", 1) if bf.psu is not None else 1,
        case=one(bf.case, Case, "case"),
        loop=tuple(
            LoopEntry(_part(e, cat, LoopPart, source, f"loop.{i}"), _setting(e, "count", 1))
            for i, e in enumerate(bf.loop)
        ),
        nodes=bf.nodes,
        network=Network(bf.network.kind, bf.network.gbit_s, bf.network.adapters_per_node)
        if bf.network
        else None,
        prices=Prices(bf.prices.electricity_per_kwh, bf.prices.currency, bf.prices.co2_kg_per_kwh),
        source=source,
        measured=_measured(
            bf.measured,
            tuple(g.gpu.name for g in gpus),
            tuple(d.device.name for d in storage),
            cat,
            source,
        )
        if bf.measured is not None
        else None,
        mains=find_mains(bf.circuit, where=f"{source}: field 'circuit'", origin="build file")
        if bf.circuit is not None
        else None,
    )


def load_build(
    path: str | Path, catalog: Catalog | None = None, *, stdin_text: str | None = None
) -> Build:
    """Read a build file (or '-' for stdin) and resolve it."""
    source, doc = read_document(path, stdin_text=stdin_text)
    return resolve_build(doc, source, catalog)
