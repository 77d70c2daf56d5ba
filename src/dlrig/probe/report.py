"""A probe's result as the probe package hands it on: `ProbeReport` (pydantic, frozen), what
`probe --json` prints, what the history stores with `model_dump_json` and loads back.

Keys per design.md: cpu, memory, disks, gpus, links, build (a build file's content), with more
beside them, in this order. The parts inside are plain JSON values of the probe's frozen
dataclasses (`dlrig.probe.result`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dlrig.hardware.nvml import GpuReading
from dlrig.jsonable import to_jsonable
from dlrig.probe.result import GpuProbe, ProbeResult
from dlrig.probe.verdicts import Verdict


class ProbeReport(BaseModel):
    """One probe of one machine. Every field but `host` has a default so that a document saved
    by an older dlrig, with fewer keys, still loads."""

    model_config = ConfigDict(frozen=True)

    host: str
    time_utc: str = ""
    quick: bool = False
    elapsed_s: float = 0.0
    stage_s: dict[str, float] = Field(default_factory=dict)
    cpu: dict[str, Any] = Field(default_factory=dict)
    memory: dict[str, Any] = Field(default_factory=dict)
    disks: tuple[dict[str, Any], ...] = ()
    loader: dict[str, Any] | None = None
    gpus: tuple[dict[str, Any], ...] = ()
    links: dict[str, Any] = Field(default_factory=dict)
    system: dict[str, Any] = Field(default_factory=dict)
    verdicts: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    build: dict[str, Any] = Field(default_factory=dict)
    assumptions: tuple[str, ...] = ()
    health: dict[str, Any] | None = None

    @property
    def faults(self) -> int:
        """Verdicts that are errors or warnings."""
        return sum(1 for v in self.verdicts if v.get("severity") in ("error", "warning"))


def reading_json(reading: GpuReading | None) -> dict[str, Any] | None:
    """An NVML reading with its derived figures (memory in GB, named clock events)."""
    if reading is None:
        return None
    out = to_jsonable(reading)
    out["memory_total_gb"] = reading.memory_total_gb
    out["event_reason_names"] = list(reading.event_reason_names)
    out["thermal_throttled"] = reading.thermal_throttled
    out["power_capped"] = reading.power_capped
    return dict(out)


def _gpu_json(gpu: GpuProbe) -> dict[str, Any]:
    return {
        "index": gpu.index,
        "name": gpu.reading.name,
        "catalog_name": gpu.catalog_name,
        "lost": gpu.reading.lost,
        "reading": reading_json(gpu.reading),
        "under_load": reading_json(gpu.loaded),
        "torch": to_jsonable(gpu.torch),
    }


def _links_json(result: ProbeResult) -> dict[str, Any]:
    pcie = []
    for gpu in result.gpus:
        r = gpu.link_reading
        pcie.append(
            {
                "gpu": gpu.index,
                "gen_current": r.pcie_gen_current,
                "gen_max": r.pcie_gen_max,
                "width_current": r.pcie_width_current,
                "width_max": r.pcie_width_max,
                "under_load": gpu.loaded is not None,
                "nvlink_active": r.nvlink_active_count,
            }
        )
    return {
        "pcie": pcie,
        "topology": to_jsonable(result.topology),
        "p2p_gb_s": to_jsonable(result.p2p_gb_s),
        "nccl_p2p_disabled": result.nccl_p2p_disabled,
    }


def probe_report(
    result: ProbeResult,
    verdicts: tuple[Verdict, ...],
    document: dict[str, Any],
    health: dict[str, Any] | None = None,
) -> ProbeReport:
    """The report of a probe: what it measured, the verdicts, the build `document`
    (`dlrig.probe.document.probe_build_document`: build and assumptions), and the health
    summary (`dlrig.health.health_summary`) when health was read."""
    cpu = to_jsonable(result.cpu)
    cpu["avx512"] = result.cpu.avx512
    cpu["amx"] = result.cpu.amx
    memory = to_jsonable(result.memory)
    memory["bandwidth"] = to_jsonable(result.memory_bandwidth)
    disks = []
    for disk in result.disks:
        entry = to_jsonable(disk.filesystem)
        entry["speed"] = to_jsonable(disk.speed)
        if disk.speed is not None:
            entry["speed"]["cold_mb_s"] = disk.speed.cold_mb_s
            entry["speed"]["read_mb_s"] = disk.speed.read_mb_s
            entry["speed"]["read_queue_depth"] = disk.speed.read_queue_depth
        entry["error"] = disk.error
        disks.append(entry)
    loader = None
    if result.loader is not None:
        loader = to_jsonable(result.loader)
        loader["ms_per_sample"] = result.loader.ms_per_sample
    return ProbeReport(
        host=result.host,
        time_utc=result.time_utc,
        quick=result.quick,
        elapsed_s=result.elapsed_s,
        stage_s=result.stage_s,
        cpu=cpu,
        memory=memory,
        disks=tuple(disks),
        loader=loader,
        gpus=tuple(_gpu_json(g) for g in result.gpus),
        links=_links_json(result),
        system={"nvml": to_jsonable(result.nvml), "cuda": to_jsonable(result.cuda)},
        verdicts=tuple(to_jsonable(verdicts)),
        notes=result.notes,
        build=document["build"],
        assumptions=tuple(document["assumptions"]),
        health=health,
    )
