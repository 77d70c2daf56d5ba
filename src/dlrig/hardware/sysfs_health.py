"""The host's error counters and temperatures in sysfs: PCIe Advanced Error Reporting per device
(and per root port), EDAC memory-controller error counts, and the thermal zones with their trip
points. Every reader takes the filesystem root (`/` on a machine, a fixture folder in tests)
and returns what it found; a missing file is an absent reading, never an exception.

Files read (the kernel's ABI documents, Documentation/ABI/testing/):
- `sysfs-bus-pci-devices-aer_stats`: `/sys/bus/pci/devices/<BDF>/aer_dev_correctable`,
  `aer_dev_fatal`, `aer_dev_nonfatal` (one `NAME COUNT` line per error, `TOTAL_ERR_*` last),
  and on a root port `aer_rootport_total_err_cor|fatal|nonfatal`.
- `sysfs-devices-edac`: `/sys/devices/system/edac/mc/mc*/ce_count` and `ue_count`, and per
  DIMM `dimm*/dimm_ce_count`, `dimm_ue_count`, `dimm_label`.
- `sysfs-class-thermal`: `/sys/class/thermal/thermal_zone*/type`, `temp` (millidegrees C) and
  `trip_point_*_type` / `trip_point_*_temp`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAX_DEVICES = 4096
"""PCI devices, DIMMs or zones read at most (a large server has a few hundred PCI functions)."""
NVIDIA_VENDOR = "0x10de"


@dataclass(frozen=True)
class AerCounters:
    """One PCI function's AER totals since boot (None: the file is absent), with its root port
    (`0000:00:01.1`, None when it is one) and whether it is an NVIDIA display/3D controller."""

    device: str
    correctable: int | None
    nonfatal: int | None
    fatal: int | None
    root_port: str | None = None
    is_root_port: bool = False
    is_nvidia_gpu: bool = False
    details: tuple[tuple[str, int], ...] = ()  # the non-zero lines (`RxErr 3`, `BadTLP 1`)


@dataclass(frozen=True)
class EdacCounters:
    """One memory controller (or one DIMM of it): corrected and uncorrected errors since boot."""

    name: str  # `mc0` or `mc0/dimm3`
    corrected: int | None
    uncorrected: int | None
    label: str | None = None  # the DIMM's silk-screen label (`CPU_SrcID#0_MC#0_Chan#1_DIMM#0`)


@dataclass(frozen=True)
class ThermalZone:
    """A thermal zone's temperature and its trip points (C)."""

    name: str  # `thermal_zone0`
    kind: str | None  # its `type`: `x86_pkg_temp`, `acpitz`, ...
    temperature_c: float | None
    critical_c: float | None = None
    hot_c: float | None = None
    passive_c: float | None = None


def _text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def _int(path: Path) -> int | None:
    text = _text(path)
    try:
        return None if text is None else int(text.split()[0])
    except (ValueError, IndexError):
        return None


def _aer_file(path: Path) -> tuple[int | None, tuple[tuple[str, int], ...]]:
    """An aer_dev_* file: its TOTAL_ERR_* line, and the other non-zero lines."""
    text = _text(path)
    if text is None:
        return None, ()
    total, details = None, []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            continue
        if parts[0].startswith("TOTAL_ERR"):
            total = int(parts[1])
        elif int(parts[1]):
            details.append((parts[0], int(parts[1])))
    if total is None and details:
        total = sum(v for _, v in details)
    return total if total is not None else 0, tuple(details)


def _root_port(devices: Path, name: str) -> str | None:
    """The first PCI function below the host bridge on this device's path (None: itself)."""
    try:
        parts = (devices / name).resolve().parts
    except OSError:
        return None
    functions = [p for p in parts if p.count(":") == 2 and "." in p]
    return functions[0] if functions and functions[0] != name else None


def read_aer(root: Path = Path("/")) -> tuple[AerCounters, ...]:
    """Every PCI function that reports AER counters, in bus order."""
    devices = root / "sys" / "bus" / "pci" / "devices"
    try:
        names = sorted(p.name for p in devices.iterdir())[:MAX_DEVICES]
    except OSError:
        return ()
    found = []
    for name in names:
        folder = devices / name
        correctable, cor_details = _aer_file(folder / "aer_dev_correctable")
        nonfatal, nonfatal_details = _aer_file(folder / "aer_dev_nonfatal")
        fatal, fatal_details = _aer_file(folder / "aer_dev_fatal")
        is_root_port = (folder / "aer_rootport_total_err_cor").exists()
        if correctable is None and nonfatal is None and fatal is None and not is_root_port:
            continue
        if is_root_port and correctable is None:
            correctable = _int(folder / "aer_rootport_total_err_cor")
            nonfatal = _int(folder / "aer_rootport_total_err_nonfatal")
            fatal = _int(folder / "aer_rootport_total_err_fatal")
        vendor = _text(folder / "vendor")
        device_class = _text(folder / "class") or ""
        found.append(
            AerCounters(
                device=name,
                correctable=correctable,
                nonfatal=nonfatal,
                fatal=fatal,
                root_port=None if is_root_port else _root_port(devices, name),
                is_root_port=is_root_port,
                # PCI class 0x03xxxx: display (0x0300 VGA, 0x0302 3D controller as on H100).
                is_nvidia_gpu=vendor == NVIDIA_VENDOR and device_class.startswith("0x03"),
                details=cor_details + nonfatal_details + fatal_details,
            )
        )
    return tuple(found)


def read_edac(root: Path = Path("/")) -> tuple[EdacCounters, ...]:
    """Each memory controller's totals, then each DIMM with errors or a label."""
    mc_root = root / "sys" / "devices" / "system" / "edac" / "mc"
    try:
        controllers = sorted(p for p in mc_root.iterdir() if p.name.startswith("mc"))
    except OSError:
        return ()
    found = []
    for mc in controllers[:MAX_DEVICES]:
        found.append(EdacCounters(mc.name, _int(mc / "ce_count"), _int(mc / "ue_count")))
        for dimm in sorted(mc.glob("dimm*"))[:MAX_DEVICES]:
            found.append(
                EdacCounters(
                    f"{mc.name}/{dimm.name}",
                    _int(dimm / "dimm_ce_count"),
                    _int(dimm / "dimm_ue_count"),
                    label=_text(dimm / "dimm_label") or None,
                )
            )
    return tuple(found)


def _millidegrees(path: Path) -> float | None:
    value = _int(path)
    return None if value is None else value / 1000.0


def read_thermal_zones(root: Path = Path("/")) -> tuple[ThermalZone, ...]:
    """Each thermal zone with its temperature and critical, hot and passive trip points."""
    zones_root = root / "sys" / "class" / "thermal"
    try:
        zones = sorted(p for p in zones_root.iterdir() if p.name.startswith("thermal_zone"))
    except OSError:
        return ()
    found = []
    for zone in zones[:MAX_DEVICES]:
        trips: dict[str, float] = {}
        for trip_type in sorted(zone.glob("trip_point_*_type")):
            kind = _text(trip_type)
            temp = _millidegrees(zone / trip_type.name.replace("_type", "_temp"))
            # A zone may list a trip type twice; the lowest temperature is the one that acts.
            if kind and temp is not None and temp > 0:
                trips[kind] = min(trips.get(kind, temp), temp)
        found.append(
            ThermalZone(
                name=zone.name,
                kind=_text(zone / "type"),
                temperature_c=_millidegrees(zone / "temp"),
                critical_c=trips.get("critical"),
                hot_c=trips.get("hot"),
                passive_c=trips.get("passive"),
            )
        )
    return tuple(found)
