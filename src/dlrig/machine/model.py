"""The resolved build: catalog parts plus per-build settings, frozen, ready for rules and models."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

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
from dlrig.enums import CoolerType, NetworkKind, Precision
from dlrig.machine.loop import LoopEntry
from dlrig.machine.partial import describe_default
from dlrig.machine.topology import Topology, compute_topology
from dlrig.mains import Mains

# The kinds of part a rule may declare it reads (`gpu.tdp_w`), as the build file names them.
PART_KINDS = ("gpu", "cpu", "motherboard", "platform", "storage", "psu", "case")


# The lowest power limit a build may set, as a share of the card's stock board power: NVIDIA's
# driver lets an RTX 4090 go down to 150 of its 450 W (nvidia-smi -q, "Min Power Limit").
# Cards whose driver floor is higher refuse a lower limit themselves (nvidia-smi -pl says so).
MIN_POWER_LIMIT_SHARE = 1.0 / 3.0


def power_limit_range_w(gpu: GPU) -> tuple[float, float]:
    """The power limits a build may set on the card, W: the driver's lowest where the catalog
    states it (`power_limit_min_w`), else a third of its stock board power, up to that."""
    low = gpu.power_limit_min_w or gpu.tdp_w * MIN_POWER_LIMIT_SHARE
    return min(low, gpu.tdp_w), gpu.tdp_w


@dataclass(frozen=True)
class GPUGroup:
    """`count` identical GPUs; `pcie_gen`/`pcie_lanes` are what the slot gives when the user
    said so (None: judge from the card and the board); `power_limit_w`: each card's power
    limit when the user sets one below its stock board power (nvidia-smi -pl)."""

    gpu: GPU
    count: int = 1
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    cooler_override: CoolerType | None = None
    power_limit_w: float | None = None

    @property
    def cooler(self) -> CoolerType:
        """The build file's `cooler` when it names one (an aftermarket or water block), else
        the catalog card's."""
        return self.cooler_override or self.gpu.cooler

    @property
    def board_power_w(self) -> float:
        """What one card draws at most: its power limit, else its stock board power (TDP)."""
        if self.power_limit_w is None:
            return self.gpu.tdp_w
        return min(self.power_limit_w, self.gpu.tdp_w)


@dataclass(frozen=True)
class MemoryConfig:
    """System RAM of one node: `size_gb` in all, from the build's size or its kits times
    `kit_count`."""

    size_gb: float
    memory_type: str | None = None
    speed_mt_s: int | None = None
    kit: MemoryKit | None = None
    kit_count: int = 1
    price_usd: float | None = None


@dataclass(frozen=True)
class StorageDevice:
    """`count` identical drives; `holds_dataset` True or False when the build says so, None to
    let `Build.dataset_storage` pick."""

    device: Storage
    count: int = 1
    holds_dataset: bool | None = None


@dataclass(frozen=True)
class Network:
    """Each node's link to the others: `adapters_per_node` adapters of `gbit_s` each."""

    kind: NetworkKind
    gbit_s: float
    adapters_per_node: int = 1


@dataclass(frozen=True)
class Prices:
    """What a run's energy costs and emits (the build's `prices`, in `currency` per kWh)."""

    electricity_per_kwh: float = 0.20
    currency: str = "USD"
    co2_kg_per_kwh: float = 0.4


@dataclass(frozen=True)
class MeasuredGPU:
    """What a probe measured on one GPU (`index`) or on every GPU of one model."""

    model: str
    matmul_tflops: tuple[tuple[Precision, float], ...] = ()
    memory_bandwidth_gb_s: float | None = None
    h2d_pinned_gb_s: float | None = None
    h2d_pageable_gb_s: float | None = None
    index: int | None = None


@dataclass(frozen=True)
class MeasuredDisk:
    """A drive's measured sequential read: at `read_queue_depth`, and at queue depth 1."""

    model: str
    read_mb_s: float
    read_queue_depth: int = 1
    read_mb_s_qd1: float | None = None


@dataclass(frozen=True)
class Measured:
    """A build file's `measured:` block: the machine's own figures, which the model uses in
    place of datasheet and achievable rates. Entries are matched to parts by name; where
    several GPUs of one model were measured, the slowest figure stands for them all (a
    data-parallel group waits for its slowest card)."""

    taken: str
    source: str = "dlrig probe"
    ram_bandwidth_gb_s: float | None = None
    loader_ms_per_sample_per_core: float | None = None
    storage: tuple[MeasuredDisk, ...] = ()
    gpus: tuple[MeasuredGPU, ...] = ()
    p2p_gb_s: float | None = None
    peer_to_peer: bool | None = None
    allreduce_busbw_gb_s: float | None = None
    allreduce_gpus: int | None = None

    @property
    def date(self) -> str:
        """The day it was measured (YYYY-MM-DD)."""
        return self.taken[:10]

    def _slowest(self, values: list[float | None]) -> float | None:
        found = [v for v in values if v is not None]
        return min(found) if found else None

    def matmul_tflops(self, gpu_name: str, precision: Precision) -> float | None:
        """Measured dense matmul TFLOPS of the GPUs named `gpu_name` at `precision`."""
        return self._slowest(
            [dict(g.matmul_tflops).get(precision) for g in self.gpus if g.model == gpu_name]
        )

    def memory_bandwidth_gb_s(self, gpu_name: str) -> float | None:
        """Measured device-memory bandwidth of the GPUs named `gpu_name`."""
        return self._slowest([g.memory_bandwidth_gb_s for g in self.gpus if g.model == gpu_name])

    def h2d_gb_s(self, gpu_name: str, pinned: bool) -> float | None:
        """Measured host-to-device copy rate to the GPUs named `gpu_name`, pinned or pageable."""
        return self._slowest(
            [
                g.h2d_pinned_gb_s if pinned else g.h2d_pageable_gb_s
                for g in self.gpus
                if g.model == gpu_name
            ]
        )

    def disk(self, drive_name: str) -> MeasuredDisk | None:
        """The measured read of the drive named `drive_name` (the slowest if several)."""
        found = [d for d in self.storage if d.model == drive_name]
        return min(found, key=lambda d: d.read_mb_s) if found else None

    def allreduce_gb_s(self, gpus: int) -> float | None:
        """Measured all-reduce bus bandwidth, when it was measured across `gpus` GPUs."""
        return self.allreduce_busbw_gb_s if self.allreduce_gpus == gpus else None


@dataclass(frozen=True)
class Build:
    """One node's parts (times `nodes` identical nodes). Any part may be missing (None/empty)."""

    name: str = "unnamed build"
    gpus: tuple[GPUGroup, ...] = ()
    cpu: CPU | None = None
    cpu_count: int = 1
    motherboard: Motherboard | None = None
    platform: Platform | None = None
    memory: MemoryConfig | None = None
    storage: tuple[StorageDevice, ...] = ()
    psu: PSU | None = None
    psu_count: int = 1
    case: Case | None = None
    nodes: int = 1
    network: Network | None = None
    prices: Prices = field(default_factory=Prices)
    source: str = ""
    measured: Measured | None = None
    # A custom water loop's parts (blocks, radiators, pump, fittings), when the build names them.
    loop: tuple[LoopEntry, ...] = ()
    # The circuit(s) the node is plugged into (the build file's `circuit`, or what the command
    # resolved: --circuit, the user's config file); None: the rules assume the default circuit.
    mains: Mains | None = None

    @cached_property
    def topology(self) -> Topology:
        """Where the cards sit and the PCIe link each gets, computed once per build."""
        return compute_topology(self)

    @property
    def gpu_count(self) -> int:
        """GPUs in one node."""
        return sum(g.count for g in self.gpus)

    @property
    def largest_gpu_memory_gb(self) -> float | None:
        """The memory of the build's largest card, GB; None without GPUs."""
        return max((g.gpu.memory_gb for g in self.gpus), default=None)

    @property
    def psu_watts(self) -> float | None:
        """What the node's supplies deliver together, W: the PSUs times their count, or the
        platform's own; None when the build says neither."""
        if self.psu is not None:
            return self.psu.watts * self.psu_count
        if self.platform is not None:
            return self.platform.psu_watts
        return None

    @property
    def dataset_storage(self) -> StorageDevice | None:
        """Where the training data is read from: the device marked so, else the fastest."""
        marked = [s for s in self.storage if s.holds_dataset]
        if marked:
            return marked[0]
        candidates = [s for s in self.storage if s.holds_dataset is not False]
        return max(candidates, key=lambda s: s.device.read_mb_s, default=None)

    def storage_read_mb_s(self, device: StorageDevice) -> float:
        """Sequential read of a storage entry, its identical drives read together (striped):
        the probe's measurement of the drive when the build carries one, else its datasheet."""
        found = self.measured.disk(device.device.name) if self.measured else None
        return (found.read_mb_s if found else device.device.read_mb_s) * device.count

    def parts_of(self, kind: str) -> tuple[PartBase, ...]:
        """The parts of one kind (`gpu`, `cpu`, ... as in PART_KINDS) in this build."""
        if kind == "gpu":
            return tuple(g.gpu for g in self.gpus)
        if kind == "storage":
            return tuple(s.device for s in self.storage)
        single: dict[str, PartBase | None] = {
            "cpu": self.cpu,
            "motherboard": self.motherboard,
            "platform": self.platform,
            "psu": self.psu,
            "case": self.case,
        }
        if kind not in single:
            raise ValueError(f"unknown part kind {kind!r}")  # a rule declared a bad field
        part = single[kind]
        return () if part is None else (part,)

    @cached_property
    def _partial_parts(self) -> dict[str, tuple[PartBase, ...]]:
        """Per kind, the parts with unknown fields; empty for a build of catalog parts (the
        planner checks thousands of those: they must not pay for this)."""
        out: dict[str, tuple[PartBase, ...]] = {}
        for kind in PART_KINDS:
            partial = tuple(p for p in self.parts_of(kind) if p.unknown_fields)
            if partial:
                out[kind] = partial
        return out

    @property
    def has_partial_parts(self) -> bool:
        """Some part is a partial inline spec (its unknown fields hold stated defaults)."""
        return bool(self._partial_parts)

    def unknown_inputs(self, reads: tuple[str, ...]) -> tuple[str, ...]:
        """Of the fields `reads` names (`gpu.tdp_w`), those a partial inline spec in this build
        left out, as `cpu 'Threadripper 32-core' socket`."""
        partial = self._partial_parts
        if not partial:
            return ()
        missing: list[str] = []
        for read in reads:
            kind, _, field_name = read.partition(".")
            if kind not in PART_KINDS:
                raise ValueError(f"unknown part kind {kind!r}")  # a rule declared a bad field
            for part in partial.get(kind, ()):
                if field_name in part.unknown_fields:
                    missing.append(f"{kind} '{part.name}' {field_name}")
        return tuple(dict.fromkeys(missing))

    @property
    def assumed_fields(self) -> tuple[str, ...]:
        """Every stated default that stands in for a field a partial inline spec left out."""
        out: list[str] = []
        for kind, parts in self._partial_parts.items():
            for part in parts:
                for name in sorted(part.unknown_fields):
                    value = describe_default(name, getattr(part, name))
                    out.append(f"{kind} '{part.name}': {name} not given, {value} assumed")
        return tuple(dict.fromkeys(out))
