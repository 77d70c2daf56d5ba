"""Drive health through smartmontools' `smartctl --json` (7.0 and later), when it is installed.

`smartctl --scan-open --json` lists the drives; each is read with `smartctl --json -H -A`.
Each call is bounded in time; smartctl's exit status is a bit mask (bit 3: the drive says it
is failing; bits 0-2: it could not be read) and is kept. A host without smartctl, or a drive it
cannot open (not root), is a note, never an error.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

TIMEOUT_S = 10.0
"""One smartctl call (a drive in standby spins up within this)."""
MAX_DRIVES = 64
MAX_OUTPUT_BYTES = 4 * 2**20

# ATA attributes whose raw value counts sectors the drive had to replace or cannot read.
ATA_COUNTERS = {
    5: "reallocated_sectors",
    197: "pending_sectors",
    198: "offline_uncorrectable",
}

Runner = Callable[[Sequence[str]], tuple[int, str]]
"""Runs a command and returns (exit status, standard output); tests pass a recorded one."""


@dataclass(frozen=True)
class DriveHealth:
    """One drive as smartctl reads it (None: not reported for this kind of drive).

    `passed` is SMART's overall self-assessment; `critical_warning` the NVMe health log's bit
    field (0 is healthy); `percentage_used` the NVMe endurance used (may pass 100)."""

    name: str
    model: str | None = None
    serial: str | None = None
    protocol: str | None = None  # "NVMe" | "ATA" | "SCSI"
    passed: bool | None = None
    critical_warning: int | None = None
    media_errors: int | None = None
    percentage_used: int | None = None
    reallocated_sectors: int | None = None
    pending_sectors: int | None = None
    offline_uncorrectable: int | None = None
    temperature_c: int | None = None
    exit_status: int | None = None
    error: str | None = None


def run_command(command: Sequence[str]) -> tuple[int, str]:
    """The real runner: no shell, bounded time and output."""
    done = subprocess.run(
        list(command), capture_output=True, timeout=TIMEOUT_S, check=False, stdin=subprocess.DEVNULL
    )
    return done.returncode, done.stdout[:MAX_OUTPUT_BYTES].decode("utf-8", "replace")


def _json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def drive_from_json(name: str, data: dict[str, Any], exit_status: int | None) -> DriveHealth:
    """A drive from `smartctl --json -H -A` output."""
    nvme = data.get("nvme_smart_health_information_log") or {}
    table = (data.get("ata_smart_attributes") or {}).get("table") or []
    ata = {
        ATA_COUNTERS[row["id"]]: (row.get("raw") or {}).get("value")
        for row in table
        if isinstance(row, dict) and row.get("id") in ATA_COUNTERS
    }
    status = data.get("smart_status") or {}
    device = data.get("device") or {}
    messages = (data.get("smartctl") or {}).get("messages") or []
    errors = [
        m.get("string") for m in messages if isinstance(m, dict) and m.get("severity") == "error"
    ]
    return DriveHealth(
        name=name,
        model=data.get("model_name"),
        serial=data.get("serial_number"),
        protocol=device.get("protocol"),
        passed=status.get("passed") if isinstance(status.get("passed"), bool) else None,
        critical_warning=nvme.get("critical_warning"),
        media_errors=nvme.get("media_errors"),
        percentage_used=nvme.get("percentage_used"),
        temperature_c=(data.get("temperature") or {}).get("current"),
        exit_status=exit_status,
        error="; ".join(str(e) for e in errors if e) or None,
        **ata,
    )


@dataclass(frozen=True)
class DriveReadings:
    """The drives smartctl read, or why none were (not installed, no drive it can open)."""

    drives: tuple[DriveHealth, ...]
    note: str | None = None


def read_drives(runner: Runner | None = None, smartctl: str | None = None) -> DriveReadings:
    """Every drive `smartctl --scan-open` lists, read with `-H -A`."""
    exe = smartctl or shutil.which("smartctl")
    if exe is None and runner is None:
        return DriveReadings((), "smartctl not installed (smartmontools): drives not judged")
    run = runner or run_command
    exe = exe or "smartctl"
    try:
        _, scan_text = run([exe, "--scan-open", "--json"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return DriveReadings((), f"smartctl --scan-open failed: {exc}")
    scan = _json(scan_text).get("devices") or []
    drives = []
    for device in scan[:MAX_DRIVES]:
        name = device.get("name") if isinstance(device, dict) else None
        if not isinstance(name, str):
            continue
        command = [exe, "--json", "-H", "-A", name]
        if isinstance(device.get("type"), str):
            command[1:1] = ["-d", device["type"]]
        try:
            status, text = run(command)
        except (OSError, subprocess.TimeoutExpired) as exc:
            drives.append(DriveHealth(name=name, error=f"smartctl failed: {exc}"))
            continue
        drives.append(drive_from_json(name, _json(text), status))
    note = None if drives else "smartctl found no drive it can open (run as root?)"
    return DriveReadings(tuple(drives), note)
