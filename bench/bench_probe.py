"""Honesty benchmark of `dlrig probe`: its disk and memory figures against independent tools.

    .venv/bin/python bench/bench_probe.py [--dir DIR] [--size-mib N] [--no-wall]

1. Disk: one file written by the probe's own code; then, alternately (ROUNDS times each, who
   goes first swapping each round so that no cache below the guest favours one), the probe's
   O_DIRECT sequential read and `dd if=FILE of=/dev/null bs=1M iflag=direct` on the same
   file, compared pair by pair (median of the per-pair differences). Target: within 10%.
2. Memory: the probe's STREAM-style copy on one thread against a plain numpy copy loop
   (`np.copyto(a, b)`) on arrays of the same size, alternating ROUNDS times, compared pair by
   pair. Target: within 10%.
3. Disk at a deep queue: the probe's fallback read (8 threads, O_DIRECT 1 MiB, queue depth 8)
   against `fio --rw=read --bs=1M --direct=1 --ioengine=libaio --iodepth=8` on the same file,
   alternating as in 1 (when fio is on PATH). Target: within 10%.
4. `dlrig probe --train resnet50 --batch 8 --steps 10 --json` on this machine (the CPU when it
   has no CUDA): the measured step next to the model's estimate of the same stand-in.
5. Wall times of `dlrig probe --quick --json` and `dlrig probe --json` (targets 20 s and 90 s).

Results are printed and written to bench/results/probe.md with the machine and the date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from machine_info import machine

from dlrig.hardware.disk import (
    direct_read_mb_s,
    fio_command,
    parse_fio_json,
    probe_directory,
    threaded_direct_read,
    write_probe_file,
)
from dlrig.hardware.host import read_cpu, read_memory
from dlrig.probe.measure_memory import measure_memory_bandwidth, stream_array_bytes

ROOT = Path(__file__).resolve().parents[1]
MIB = 2**20
ROUNDS = 6  # probe and reference alternate this many times, compared pair by pair


def paired(probe: list[float], reference: list[float]) -> dict[str, float]:
    """The probe against the reference run just after it, round by round: the median of the
    per-round differences (%), and their range. Pairing cancels the slow drift of a shared
    machine's load, which moves both figures of a round together."""
    diffs = sorted(100.0 * (p - r) / r for p, r in zip(probe, reference, strict=True))
    return {
        "diff_pct": statistics.median(diffs),
        "diff_min_pct": diffs[0],
        "diff_max_pct": diffs[-1],
    }


def dd_direct_mb_s(path: Path) -> float:
    """dd's own figure for an O_DIRECT read of path: bytes / seconds from its summary line."""
    done = subprocess.run(
        ["dd", f"if={path}", "of=/dev/null", "bs=1M", "iflag=direct"],
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"(\d+) bytes .* copied, ([\d.]+) s", done.stderr)
    if match is None:
        raise RuntimeError(f"cannot read dd's output: {done.stderr!r}")
    return int(match.group(1)) / float(match.group(2)) / 1e6


def bench_disk(directory: Path, size_bytes: int) -> dict[str, object]:
    with probe_directory(directory) as tmp:
        path = tmp / "bench.bin"
        written, _ = write_probe_file(path, size_bytes, 60.0)
        probe_runs, dd_runs = [], []
        for round_ in range(ROUNDS):
            # Who reads first swaps each round: a second read can find the file in a cache
            # below the guest (a hypervisor's, a RAID controller's) that O_DIRECT cannot bypass.
            if round_ % 2:
                dd_runs.append(dd_direct_mb_s(path))
            figure = direct_read_mb_s(path, written, 60.0)
            if figure is None:
                raise RuntimeError(f"O_DIRECT refused on {directory}")
            probe_runs.append(figure)
            if not round_ % 2:
                dd_runs.append(dd_direct_mb_s(path))
    return {"bytes": written, "probe": probe_runs, "dd": dd_runs, **paired(probe_runs, dd_runs)}


def _fio_depth8_mb_s(fio: str, path: Path, size: int) -> float:
    command = [
        c if c != "--iodepth=32" else "--iodepth=8" for c in fio_command(fio, path, size, 60.0)
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = parse_fio_json(done.stdout)
    if found is None:
        raise RuntimeError(f"fio gave no read: {done.stdout[:200]!r}")
    return found.mb_s


def bench_deep_disk(directory: Path, size_bytes: int) -> dict[str, object] | None:
    fio = shutil.which("fio")
    if fio is None:
        return None
    with probe_directory(directory) as tmp:
        path = tmp / "bench.bin"
        written, _ = write_probe_file(path, size_bytes, 60.0)
        probe_runs, fio_runs = [], []
        for round_ in range(ROUNDS):
            if round_ % 2:
                fio_runs.append(_fio_depth8_mb_s(fio, path, written))
            found = threaded_direct_read(path, written, 60.0)
            if found is None:
                raise RuntimeError(f"O_DIRECT refused on {directory}")
            probe_runs.append(found.mb_s)
            if not round_ % 2:
                fio_runs.append(_fio_depth8_mb_s(fio, path, written))
    version = subprocess.run([fio, "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "bytes": written,
        "probe": probe_runs,
        "fio": fio_runs,
        "version": version,
        **paired(probe_runs, fio_runs),
    }


def bench_train() -> dict[str, object]:
    args = ["probe", "--train", "resnet50", "--batch", "8", "--steps", "10", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "dlrig", *args], check=True, capture_output=True, text=True
    )
    data: dict[str, object] = json.loads(done.stdout)
    return data


def _numpy_copy_gb_s(a: np.ndarray, b: np.ndarray, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(a, b)
        best = min(best, time.perf_counter() - start)
    return 16 * a.size / best / 1e9  # STREAM counting, as the probe


def bench_memory() -> dict[str, object]:
    """Probe and reference alternate ROUNDS times (a shared machine's load comes and goes)."""
    size = stream_array_bytes(read_cpu().llc_bytes, read_memory().available_bytes, quick=False)
    n = size // 8
    a, b = np.zeros(n), np.full(n, 1.0)
    probe_runs, reference_runs, triad_runs = [], [], []
    for _ in range(ROUNDS):
        probe = measure_memory_bandwidth(size, threads=1, repeats=3)
        probe_runs.append(probe.copy_gb_s)
        triad_runs.append(probe.triad_gb_s)
        reference_runs.append(_numpy_copy_gb_s(a, b, 3))
    threads = os.cpu_count() or 1
    multi = measure_memory_bandwidth(size, threads=threads, repeats=3) if threads > 1 else probe
    return {
        "bytes": size,
        "probe_copy": probe_runs,
        "probe_triad": max(triad_runs),
        "reference_copy": reference_runs,
        **paired(probe_runs, reference_runs),
        "threads": threads,
        "probe_copy_all_threads": multi.copy_gb_s,
    }


def wall_s(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dlrig", "probe", *args], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    parser.add_argument("--size-mib", type=int, default=2048)
    parser.add_argument("--no-wall", action="store_true")
    parser.add_argument("--no-train", action="store_true")
    args = parser.parse_args()
    disk = bench_disk(args.dir, args.size_mib * MIB)
    deep = bench_deep_disk(args.dir, args.size_mib * MIB)
    memory = bench_memory()
    train = None if args.no_train else bench_train()
    quick = full = None
    if not args.no_wall:
        quick = wall_s("--quick", "--json")
        full = wall_s("--json")
    today = dt.date.today().isoformat()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "# dlrig probe: honesty benchmark",
        "",
        "Command: `.venv/bin/python bench/bench_probe.py "
        f"--dir {args.dir} --size-mib {args.size_mib}`",
        f"Machine: {machine()}. Date: {today}. Load average at the end: {load}.",
        "",
        "| figure | dlrig probe | reference | difference | target |",
        "|---|---|---|---|---|",
        f"| disk sequential read, O_DIRECT 1 MiB, {disk['bytes'] / MIB:.0f} MiB file (MB/s) | "
        + " / ".join(f"{x:.0f}" for x in disk["probe"])  # type: ignore[attr-defined]
        + " | `dd bs=1M iflag=direct`: "
        + " / ".join(f"{x:.0f}" for x in disk["dd"])  # type: ignore[attr-defined]
        + f" | {disk['diff_pct']:+.1f}% ({disk['diff_min_pct']:+.0f}% to "
        f"{disk['diff_max_pct']:+.0f}%) | within 10% |",
        f"| RAM copy, 1 thread, {memory['bytes'] / MIB:.0f} MiB arrays (GB/s) | "
        + " / ".join(f"{x:.1f}" for x in memory["probe_copy"])  # type: ignore[attr-defined]
        + " | numpy `copyto` loop: "
        + " / ".join(f"{x:.1f}" for x in memory["reference_copy"])  # type: ignore[attr-defined]
        + f" | {memory['diff_pct']:+.1f}% ({memory['diff_min_pct']:+.0f}% to "
        f"{memory['diff_max_pct']:+.0f}%) | within 10% |",
    ]
    if deep is not None:
        lines.append(
            f"| disk sequential read, 8 threads O_DIRECT 1 MiB (queue depth 8), "
            f"{deep['bytes'] / MIB:.0f} MiB file (MB/s) | "
            + " / ".join(f"{x:.0f}" for x in deep["probe"])  # type: ignore[attr-defined]
            + f" | {deep['version']} libaio iodepth 8: "
            + " / ".join(f"{x:.0f}" for x in deep["fio"])  # type: ignore[attr-defined]
            + f" | {deep['diff_pct']:+.1f}% ({deep['diff_min_pct']:+.0f}% to "
            f"{deep['diff_max_pct']:+.0f}%) | within 10% |"
        )
    lines += [
        "",
        f"Also measured: RAM triad 1 thread {memory['probe_triad']:.1f} GB/s; RAM copy on "
        f"{memory['threads']} threads {memory['probe_copy_all_threads']:.1f} GB/s.",
        "",
        "Notes: each cell lists every run; probe and reference alternate, each probe run paired "
        "with the reference run right after it; the difference is the median of the per-pair "
        "differences, with their range (a shared machine's load moves both runs of a pair "
        "together). Triad reads below copy "
        "because numpy's add writes with ordinary stores (the cache line is read first, which "
        "STREAM's byte counting leaves out) while the copy goes through memcpy's streaming "
        "stores.",
    ]
    if train is not None:
        timing: dict[str, object] = train["timing"]  # type: ignore[assignment]
        lines += [
            "",
            "`dlrig probe --train resnet50 --batch 8 --steps 10 --json` "
            f"({timing['device']}, {timing['precision']}, torch {timing['torch_version']}):",
            "",
            "| stage | measured ms | estimated ms | measured / estimated |",
            "|---|---|---|---|",
        ]
        for row in train["rows"]:  # type: ignore[attr-defined]
            lines.append(
                f"| {row['stage']} | {row['measured_s'] * 1000:.1f} | "
                f"{row['estimated_s'] * 1000:.1f} | {row['ratio']:.2f} |"
            )
        lines += ["", f"Stand-in: {train['stand_in']}. Estimated on: {train['compute_device']}."]
    if quick is not None and full is not None:
        lines += [
            "",
            "| run | wall time | target |",
            "|---|---|---|",
            f"| `dlrig probe --quick --json` | {quick:.1f} s | under 20 s |",
            f"| `dlrig probe --json` | {full:.1f} s | under 90 s |",
        ]
    text = "\n".join(lines) + "\n"
    out = ROOT / "bench" / "results" / "probe.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
