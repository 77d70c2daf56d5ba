"""The kernel log's `NVRM: Xid` lines: the driver logs every Xid there, including those NVML's
event set never delivers (one raised before anything registered, or while no NVML client ran).

`read_kernel_xids()` reads the kernel's ring buffer through `/dev/kmsg` (each record with its
sequence number, so a later reading can tell the new ones; root or `kernel.dmesg_restrict=0`
needed) and falls back to nothing, with the reason. `parse_xid_lines(text)` reads the same
lines from text: `dmesg` or `journalctl -k` output, `/var/log/kern.log`, or a fixture.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from dlrig.hardware.nvml.health import XidEvent

KMSG = Path("/dev/kmsg")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
MAX_RECORDS = 200_000
"""Records read from the ring buffer at most (a default 256 KiB to 16 MiB buffer holds far
fewer); the loop stops there even on a buffer that keeps filling."""
MAX_TEXT_BYTES = 64 * 2**20
"""A log file read for Xids is cut here (a week of a busy kern.log is well under it)."""

# NVRM: Xid (PCI:0000:5a:00): 79, pid=1234, name=python, GPU has fallen off the bus.
# NVRM: Xid (0000:03:00): 14, Channel 00000001
_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)\):"
    r"\s*(?P<xid>\d+)\s*,?\s*(?P<rest>.*)$"
)
# A leading ISO time (`dmesg --time-format iso`, `journalctl -o short-iso`).
_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[.,](\d+))?([+-]\d{2}:?\d{2}|Z)?")


@dataclass(frozen=True)
class KernelXids:
    """What the kernel log held: the Xid events, whether it could be read, and where it
    stands (the boot and the last record's sequence number, for the next reading)."""

    events: tuple[XidEvent, ...]
    readable: bool
    error: str | None = None
    boot_id: str | None = None
    last_seq: int | None = None
    source: str = "/dev/kmsg"


def _iso_utc(line: str) -> str | None:
    match = _ISO.match(line)
    if match is None:
        return None
    base, fraction, offset = match.groups()
    text = base + (f".{fraction[:6]}" if fraction else "")
    if offset:
        text += (
            "+00:00"
            if offset == "Z"
            else offset
            if ":" in offset
            else offset[:3] + ":" + offset[3:]
        )
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).isoformat()


def xid_from_line(
    line: str, *, seq: int | None = None, boot_id: str | None = None, time_utc: str | None = None
) -> XidEvent | None:
    """The Xid of one `NVRM: Xid` line, None for any other line."""
    match = _XID.search(line)
    if match is None:
        return None
    return XidEvent(
        xid=int(match.group("xid")),
        source="kernel_log",
        pci_bus_id=match.group("bus").lower(),
        message=match.group("rest").strip()[:300],
        time_utc=time_utc if time_utc is not None else _iso_utc(line),
        seq=seq,
        boot_id=boot_id,
    )


def parse_xid_lines(text: str) -> tuple[XidEvent, ...]:
    """Every Xid in a log's text (dmesg, journalctl -k, kern.log), in order."""
    found = []
    for line in text[:MAX_TEXT_BYTES].splitlines():
        event = xid_from_line(line)
        if event is not None:
            found.append(event)
    return tuple(found)


def read_log_file(path: Path) -> KernelXids:
    """The Xids of a saved log file; unreadable is a reading that says why."""
    try:
        with path.open("rb") as fh:
            text = fh.read(MAX_TEXT_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        return KernelXids((), False, f"{path}: {exc.strerror or exc}", source=str(path))
    return KernelXids(parse_xid_lines(text), True, source=str(path))


def _boot_id(path: Path = BOOT_ID) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def read_kernel_xids(kmsg: Path = KMSG, boot_id_path: Path = BOOT_ID) -> KernelXids:
    """The Xids in the kernel's ring buffer now, read without blocking through /dev/kmsg."""
    boot_id = _boot_id(boot_id_path)
    try:
        fd = os.open(kmsg, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        why = (
            "permission denied (run as root, or set kernel.dmesg_restrict=0)"
            if exc.errno in (errno.EPERM, errno.EACCES)
            else exc.strerror or str(exc)
        )
        return KernelXids((), False, f"{kmsg}: {why}", boot_id=boot_id)
    found: list[XidEvent] = []
    last_seq = None
    now_wall, now_mono = time.time(), time.monotonic()
    try:
        for _ in range(MAX_RECORDS):
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break  # the buffer is read to its end
            except OSError as exc:
                if exc.errno == errno.EPIPE:
                    continue  # a record was overwritten while reading: the next one follows
                return KernelXids(tuple(found), False, f"{kmsg}: {exc.strerror}", boot_id=boot_id)
            if not record:
                break  # end of file (a saved copy rather than the device)
            header, _, message = record.decode("utf-8", "replace").partition(";")
            fields = header.split(",")
            if len(fields) < 3:
                continue
            last_seq = int(fields[1])
            if "NVRM: Xid" not in message:
                continue
            # The record's time is microseconds since boot on the monotonic clock.
            when = now_wall - (now_mono - int(fields[2]) / 1e6)
            event = xid_from_line(
                message.splitlines()[0],
                seq=last_seq,
                boot_id=boot_id,
                time_utc=dt.datetime.fromtimestamp(when, dt.UTC).isoformat(timespec="seconds"),
            )
            if event is not None:
                found.append(event)
    finally:
        os.close(fd)
    return KernelXids(tuple(found), True, boot_id=boot_id, last_seq=last_seq)
