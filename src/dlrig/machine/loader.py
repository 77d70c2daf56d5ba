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
    MemoryKit,
    Motherboard,
    PartBase,
    Platform,
    Storage,
)
from dlrig.errors import UnknownPartError, ValidationError
from dlrig.io.documents import read_document
from dlrig.io.validation import validate_document
from dlrig.machine.model import Build, GPUGroup, MemoryConfig, Network, Prices, StorageDevice
from dlrig.machine.schema import BuildFile


def parse_build(doc: dict[str, Any], source: str) -> BuildFile:
    """Validate a build document; errors name the file and the field."""
    return validate_document(BuildFile, doc, source)


P = TypeVar("P", bound=PartBase)


def _find(catalog: Catalog, model: type[P], name: str, source: str, where: str) -> P:
    try:
        return catalog.find(model, name)
    except UnknownPartError as exc:
        raise UnknownPartError(f"{source}: {where}: {exc.message}", hint=exc.hint) from None


def _require(part: P | None) -> P:
    if part is None:  # an entry always has a model or a spec (BuildFile validates that)
        raise ValidationError("a storage entry needs a model or a spec")
    return part


def resolve_build(doc: dict[str, Any], source: str, catalog: Catalog | None = None) -> Build:
    """Validate a build document and look its parts up in the catalog."""
    cat = catalog if catalog is not None else load_catalog()
    bf = parse_build(doc, source)

    gpus = []
    for i, g in enumerate(bf.gpus):
        gpu = g.spec if g.spec is not None else _find(cat, GPU, g.model or "", source, f"gpus.{i}")
        gpus.append(
            GPUGroup(
                gpu=gpu,
                count=g.count,
                pcie_gen=g.pcie.gen if g.pcie else None,
                pcie_lanes=g.pcie.lanes if g.pcie else None,
                cooler_override=g.cooler,
            )
        )

    def one(entry: Any, model: type[P], where: str) -> P | None:
        if entry is None:
            return None
        if entry.spec is not None:
            spec: P = entry.spec
            return spec
        return _find(cat, model, entry.model, source, where)

    storage = tuple(
        StorageDevice(
            device=_require(one(s, Storage, f"storage.{i}")),
            count=s.count,
            holds_dataset=s.holds_dataset,
        )
        for i, s in enumerate(bf.storage)
    )

    memory = None
    if bf.memory is not None:
        m = bf.memory
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
    cpu_count = bf.cpu.count if bf.cpu else 1
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
        psu_count=bf.psu.count if bf.psu else 1,
        case=one(bf.case, Case, "case"),
        nodes=bf.nodes,
        network=Network(bf.network.kind, bf.network.gbit_s, bf.network.adapters_per_node)
        if bf.network
        else None,
        prices=Prices(bf.prices.electricity_per_kwh, bf.prices.currency, bf.prices.co2_kg_per_kwh),
        source=source,
    )


def load_build(
    path: str | Path, catalog: Catalog | None = None, *, stdin_text: str | None = None
) -> Build:
    """Read a build file (or '-' for stdin) and resolve it."""
    source, doc = read_document(path, stdin_text=stdin_text)
    return resolve_build(doc, source, catalog)
