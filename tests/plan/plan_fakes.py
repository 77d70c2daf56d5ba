"""Fakes for the planner's tests: a small catalog of inline parts, workloads, and an evaluator
with a toy model and toy rules (so the search is tested apart from H3's rules and H4's model).

The toy model: samples/s is the slowest of the GPUs (count x TFLOPS x 100 samples per TFLOP,
less 20% when open-air cards are stacked three or more without water), the CPU (cores x 1000 /
ms of preprocessing per sample) and the drive (MB/s / MB per sample). It never gets slower with
more cores, lanes or read rate, which is what the planner's bounds assume of the real model.
Its estimates carry a toy 80% interval of 0.9x-1.1x (and 0.9x for comparisons), so that
near-ties (plan.ties) occur; the
toy rules warn when a build has fewer than 4 CPU cores per GPU.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from dlrig.catalog.loader import Catalog
from dlrig.catalog.schema import (
    CPU,
    GPU,
    PSU,
    Case,
    LoopPart,
    MemoryKit,
    Motherboard,
    PCIeSlot,
    Platform,
    Storage,
)
from dlrig.enums import (
    Bottleneck,
    CoolerType,
    FormFactor,
    Interconnect,
    LoopRole,
    Severity,
    StorageKind,
    Vendor,
)
from dlrig.machine.model import Build
from dlrig.mains import find_mains
from dlrig.model.power import size_build_psu
from dlrig.plan.evaluate import Outcome
from dlrig.rules import Finding


def _slots(*positions_lanes: tuple[int, int]) -> tuple[PCIeSlot, ...]:
    return tuple(PCIeSlot(position=p, lanes=n, gen=4) for p, n in positions_lanes)


def fake_catalog() -> Catalog:
    gpus = (
        GPU(name="Small 12", price_usd=400, memory_gb=12, memory_bandwidth_gb_s=360,
            fp32_tflops=10, tdp_w=170, slots=2, length_mm=240),
        GPU(name="Fast 24", price_usd=1600, memory_gb=24, memory_bandwidth_gb_s=1000,
            fp32_tflops=40, tdp_w=450, slots=3, length_mm=304),
        GPU(name="Blower 48", price_usd=4000, memory_gb=48, memory_bandwidth_gb_s=768,
            fp32_tflops=38, tdp_w=300, slots=2, length_mm=267, cooler=CoolerType.BLOWER),
        GPU(name="Red 24", vendor=Vendor.AMD, price_usd=900, memory_gb=24,
            memory_bandwidth_gb_s=960, fp32_tflops=30, tdp_w=355, slots=2, length_mm=287),
        GPU(name="Module 80", price_usd=20000, memory_gb=80, memory_bandwidth_gb_s=3350,
            fp32_tflops=60, tdp_w=700, form=FormFactor.SXM, cooler=CoolerType.PASSIVE,
            interconnect=Interconnect.NVSWITCH),
    )  # fmt: skip
    cpus = (
        CPU(name="Desk 8", family="ryzen", vendor=Vendor.AMD, price_usd=250, cores=8,
            threads=16, base_ghz=4.2, pcie_lanes=24, pcie_gen=5, memory_channels=2,
            memory_type="ddr5", tdp_w=105, socket="AM5"),
        CPU(name="Desk 16", family="ryzen", vendor=Vendor.AMD, price_usd=550, cores=16,
            threads=32, base_ghz=4.5, pcie_lanes=24, pcie_gen=5, memory_channels=2,
            memory_type="ddr5", tdp_w=170, socket="AM5"),
        CPU(name="Desk 8 dear", family="ryzen", vendor=Vendor.AMD, price_usd=300, cores=8,
            threads=16, base_ghz=4.0, pcie_lanes=24, pcie_gen=5, memory_channels=2,
            memory_type="ddr5", tdp_w=120, socket="AM5"),
        CPU(name="Work 24", family="threadripper", vendor=Vendor.AMD, price_usd=1400,
            cores=24, threads=48, base_ghz=4.2, pcie_lanes=48, pcie_gen=5, memory_channels=4,
            memory_type="ddr5-rdimm", tdp_w=350, socket="sTR5"),
        CPU(name="Blue 24", family="xeon-w", vendor=Vendor.INTEL, price_usd=1300, cores=24,
            threads=48, base_ghz=3.0, pcie_lanes=64, pcie_gen=5, memory_channels=4,
            memory_type="ddr5-rdimm", tdp_w=270, socket="sTR5"),
    )  # fmt: skip
    boards = (
        Motherboard(name="Desk board", price_usd=200, socket="AM5", memory_type="ddr5",
                    memory_slots=4, max_memory_gb=192, x16_slots=_slots((1, 16), (4, 4))),
        Motherboard(name="Work board", price_usd=900, socket="sTR5", memory_type="ddr5-rdimm",
                    memory_slots=8, max_memory_gb=1024,
                    x16_slots=_slots((1, 16), (3, 16), (5, 16), (7, 16))),
    )  # fmt: skip
    psus = (
        PSU(name="PSU 850", price_usd=120, watts=850, efficiency="gold"),
        PSU(name="PSU 1600", price_usd=400, watts=1600, efficiency="platinum"),
        PSU(name="PSU 2400", price_usd=700, watts=2400, efficiency="titanium"),
    )
    cases = (
        Case(name="Mid tower", price_usd=100, max_gpu_length_mm=320, expansion_slots=7),
        Case(name="Full tower", price_usd=250, max_gpu_length_mm=420, expansion_slots=10,
             radiator_mounts_120mm=6),
    )  # fmt: skip
    storage = (
        Storage(name="Disk 4TB", price_usd=90, kind=StorageKind.HDD, capacity_tb=4,
                read_mb_s=180),
        Storage(name="NVMe 2TB", price_usd=160, kind=StorageKind.NVME, capacity_tb=2,
                read_mb_s=7000),
    )  # fmt: skip
    memory = (
        MemoryKit(name="DDR5 2x16", price_usd=100, memory_type="ddr5", size_gb=32, modules=2),
        MemoryKit(name="DDR5 2x32", price_usd=180, memory_type="ddr5", size_gb=64, modules=2),
        MemoryKit(name="RDIMM 32", price_usd=150, memory_type="ddr5-rdimm", size_gb=32),
    )  # fmt: skip
    platforms = (
        Platform(name="Rack 4", price_usd=5000, max_gpus=4, gpu_form=FormFactor.PCIE,
                 interconnect=Interconnect.PCIE, cpu_socket="sTR5", cpu_sockets=1,
                 memory_type="ddr5-rdimm", memory_slots=8, max_memory_gb=1024,
                 psu_watts=2400, network_gbit_s=200),
        Platform(name="HGX 4", price_usd=30000, max_gpus=4, gpu_form=FormFactor.SXM,
                 interconnect=Interconnect.NVSWITCH, included_gpu="Module 80",
                 included_gpu_count=4, cpu_socket="sTR5", cpu_sockets=2,
                 memory_type="ddr5-rdimm", memory_slots=16, max_memory_gb=2048,
                 psu_watts=6000, network_gbit_s=400),
    )  # fmt: skip
    # A loop for the open-air cards (plan/loop.py): a block each, 120 mm sections for their
    # heat, one pump and one set of fittings.
    cooling = (
        LoopPart(name="Block", price_usd=150, role=LoopRole.GPU_BLOCK, slots=2,
                 fits_gpus=("Small 12", "Fast 24", "Red 24")),
        LoopPart(name="Radiator 360", price_usd=120, role=LoopRole.RADIATOR, radiator_mm=360),
        LoopPart(name="Radiator 240", price_usd=90, role=LoopRole.RADIATOR, radiator_mm=240),
        LoopPart(name="Pump", price_usd=150, role=LoopRole.PUMP),
        LoopPart(name="Fittings", price_usd=100, role=LoopRole.FITTINGS),
    )  # fmt: skip
    return Catalog(
        {
            "gpus": gpus,
            "cpus": cpus,
            "motherboards": boards,
            "psus": psus,
            "cases": cases,
            "storage": storage,
            "memory": memory,
            "platforms": platforms,
            "cooling": cooling,
        }
    )


# The toy world is not about the wall: four independent 240 V / 30 A circuits carry any of its
# builds on stock power (tests that judge the circuit name their own).
TOY_MAINS = find_mains("4x-us-240v-30a", where="plan_fakes", origin="test")


@dataclass(frozen=True)
class FakeDataset:
    total_gb: float
    bytes_per_sample: float


@dataclass(frozen=True)
class FakeWorkload:
    """A job for the toy model: memory it needs per GPU, CPU ms and GFLOP per sample."""

    name: str
    required_gb: float
    cpu_ms_per_sample: float
    tflop_per_sample: float
    dataset: FakeDataset | None


FAKE_WORKLOADS = {
    "vision": FakeWorkload("vision", 8, 4.0, 0.03, FakeDataset(150, 110_000)),
    "big-model": FakeWorkload("big-model", 30, 0.1, 2.0, None),
    "huge": FakeWorkload("huge", 80, 0.1, 5.0, None),
    "disk-heavy": FakeWorkload("disk-heavy", 6, 0.5, 0.002, FakeDataset(1500, 2_000_000)),
}


def toy_outcome(build: Build, workload: FakeWorkload) -> Outcome:
    group = build.gpus[0]
    gpu = group.gpu
    throttle = group.count >= 3 and group.cooler is CoolerType.OPEN_AIR
    rates = {
        Bottleneck.GPU_COMPUTE: group.count
        * gpu.fp32_tflops
        * (0.8 if throttle else 1.0)
        / workload.tflop_per_sample,
    }
    if build.cpu is not None:
        rates[Bottleneck.CPU_PREPROCESSING] = (
            build.cpu.cores * build.cpu_count * 1000.0 / workload.cpu_ms_per_sample
        )
    drive = build.dataset_storage
    if workload.dataset is not None and drive is not None:
        rates[Bottleneck.STORAGE] = drive.device.read_mb_s * 1e6 / workload.dataset.bytes_per_sample
    bottleneck = min(rates, key=lambda b: rates[b])
    sps = rates[bottleneck]
    power_w = size_build_psu(build).subtotal_w
    time_h = 1e6 / sps / 3600.0
    return Outcome(
        samples_per_s=sps,
        bottleneck=bottleneck,
        fits=workload.required_gb <= gpu.memory_gb,
        gpu_required_gb=workload.required_gb,
        gpu_available_gb=gpu.memory_gb,
        time_h=time_h,
        energy_kwh=power_w * time_h / 1000.0,
        energy_cost=power_w * time_h / 1000.0 * build.prices.electricity_per_kwh,
        system_peak_w=power_w,
        throughput_ratio_low=0.9,
        throughput_ratio_high=1.1,
        comparison_ratio_low=0.9,
    )


def toy_errors(build: Build, workload: FakeWorkload) -> tuple[Finding, ...]:
    errors: list[Finding] = []
    group = build.gpus[0]
    if build.psu_watts is not None and build.psu_watts < size_build_psu(build).recommended_w:
        errors.append(Finding("PSU.1", Severity.ERROR, "toy rule"))
    if build.memory is not None and build.memory.size_gb < group.gpu.memory_gb:
        errors.append(Finding("RAM.2", Severity.ERROR, "toy rule"))
    if group.count >= 3 and group.cooler is CoolerType.OPEN_AIR:
        errors.append(Finding("COOL.3", Severity.ERROR, "toy rule"))
    if group.count >= 4 and build.cpu is not None and build.cpu.pcie_lanes < 8 * group.count:
        errors.append(Finding("PCIE.2", Severity.ERROR, "toy rule"))
    return tuple(errors)


class FakeEvaluator:
    """The toy model and rules behind the planner's Evaluator protocol."""

    def __init__(self) -> None:
        self.calls = 0

    def errors(self, key: Hashable, build: Build, workload: FakeWorkload) -> tuple[Finding, ...]:  # type: ignore[override]
        self.calls += 1
        return toy_errors(build, workload)

    def outcome(self, key: Hashable, build: Build, workload: FakeWorkload) -> Outcome:  # type: ignore[override]
        self.calls += 1
        return toy_outcome(build, workload)

    def warnings(self, key: Hashable, build: Build, workload: FakeWorkload) -> tuple[str, ...]:  # type: ignore[override]
        return toy_warnings(build)

    def fails(self, key: Hashable, build: Build, workload: FakeWorkload) -> bool:  # type: ignore[override]
        return bool(self.errors(key, build, workload))


def toy_warnings(build: Build) -> tuple[str, ...]:
    """CPU.1's shape: fewer than 4 cores per GPU."""
    gpus = sum(g.count for g in build.gpus)
    cores = build.cpu.cores * build.cpu_count if build.cpu is not None else 0
    return ("CPU.1",) if gpus and cores < 4 * gpus else ()
