"""The watch sampler's CPU on a replayed 8-GPU box at 1 Hz and 10 Hz.

The box is `tests/fixtures/nvml/eight_gpu_box.json` (8x A100 SXM4 80GB, 12 NVLinks each;
synthesised from a datasheet-built fixture, not recorded) replayed through dlrig's real NVML
backend, with each NVML call made to cost what a real one costs:

- nvmlDeviceGetPcieThroughput: a 20 ms wait per call (NVML API reference: the call counts
  bytes over a 20 ms interval), modelled as a wait (the thread sleeps; no CPU);
- every other call: 365 us, from the one published per-call figure found: about 2,743
  `nvmlDeviceGetPowerUsage` calls per second in a loop on a Tesla K40m (gpustat issue #76,
  https://github.com/wookayin/gpustat/issues/76, 2020-01-02). Whether the driver spends that
  time computing or waiting is not known, so each case runs twice: `wait` (the call sleeps:
  only dlrig's own work is CPU) and `busy` (the call spins: every microsecond is CPU, the
  worst case).

No recorded per-call latency exists yet (no GPU has been lent to this project); replace the
figures with recorded ones when `scripts/gpu-check` times its calls.

Samplers: `before` reads every field of every GPU at every tick, one call after the other (what
dlrig did before static fields were cached: `read_gpu` without a cache); `after` is the backend
`dlrig watch` uses (static fields once, NVLink every 30 s, PCIe windows at most once a second
and all at once on threads); `whole tick` adds the host and the job samplers (psutil) to
`after`, as `dlrig watch` takes each sample (without the history database and the live view,
which `bench/bench_watch.py` measures). CPU is the process's user + system time (all its
threads) over the measured ticks, as a share of one core; the first tick (static reads) is
excluded as a warm-up.

Targets (issue 12): the sampler under 1% of a core at 1 Hz and under 5% at 10 Hz.

Usage: .venv/bin/python bench/bench_watch_overhead.py [--seconds S] [--write FILE]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the NVML replay lives with the tests' fakes

from machine_info import machine  # noqa: E402

from dlrig.hardware.nvml import GpuReading, Nvml, read_gpu  # noqa: E402
from dlrig.watch.host import NvmlGpuSampler, PsutilHostSampler, PsutilJobSampler  # noqa: E402
from support.nvml_fakes import ReplayCalls, replay_calls  # noqa: E402

FIXTURE = "eight_gpu_box"
PCIE_WINDOW_S = 0.020  # NVML API reference, nvmlDeviceGetPcieThroughput
CALL_S = 1 / 2743  # gpustat issue #76: 2,743 nvmlDeviceGetPowerUsage calls in one second
TARGET_PCT = {1: 1.0, 10: 5.0}
KEPT_RATE = 0.9  # a case keeps its rate when it did at least 90% of its ticks
RESULTS = ROOT / "bench" / "results" / "watch_overhead.md"


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class TimedCalls:
    """A replayed calls layer whose device calls take a real NVML call's time."""

    def __init__(self, inner: ReplayCalls, busy: bool) -> None:
        self.inner = inner
        self.busy = busy

    def init(self) -> None:
        self.inner.init()

    def system(self, call: str) -> Any:
        return self.inner.system(call)

    def device(self, index: int, call: str, arg: str | None = None) -> Any:
        if call == "nvmlDeviceGetPcieThroughput":
            time.sleep(PCIE_WINDOW_S)
        elif self.busy:
            _spin(CALL_S)
        else:
            time.sleep(CALL_S)
        return self.inner.device(index, call, arg)

    def pair(self, a: int, b: int, call: str) -> Any:
        return self.inner.pair(a, b, call)

    def events(self, timeout_ms: int) -> list[dict[str, Any]]:
        return self.inner.events(timeout_ms)

    def begin_sample(self) -> None:
        self.inner.begin_sample()

    def shutdown(self) -> None:
        self.inner.shutdown()


class UncachedSampler:
    """Every field of every GPU at every tick, one call after the other."""

    def __init__(self, calls: TimedCalls, count: int) -> None:
        self.calls = calls
        self.count = count

    def sample(self) -> tuple[GpuReading, ...]:
        self.calls.begin_sample()
        return tuple(read_gpu(self.calls, i) for i in range(self.count))


@dataclass(frozen=True)
class Result:
    sampler: str
    model: str
    hz: int
    cpu_pct: float
    ticks_per_s: float
    tick_ms: float
    calls_per_tick: float


def run_case(sampler_name: str, busy: bool, hz: int, seconds: float) -> Result:
    """Tick at `hz` for `seconds` after one warm-up tick; CPU and wall over the measured ticks."""
    inner = replay_calls(FIXTURE)
    calls = TimedCalls(inner, busy)
    nvml = Nvml(calls)
    count = nvml.device_count()
    gpus: Callable[[], tuple[GpuReading, ...]]
    gpus = (
        UncachedSampler(calls, count).sample
        if sampler_name == "before"
        else NvmlGpuSampler(nvml).sample
    )
    tick: Callable[[], object] = gpus
    child = None
    if sampler_name == "whole tick":
        # The job is a process of its own, as under `dlrig watch` (not this one, whose threads
        # would be counted as the job's).
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        host, job = PsutilHostSampler(), PsutilJobSampler(child.pid)

        def tick() -> object:
            return (host.sample(), job.sample(), gpus())

    interval_s = 1.0 / hz
    tick()  # warm-up: the static reads and the first NVLink and PCIe reads
    calls0 = sum(inner.counts.values())
    cpu0, start = time.process_time(), time.monotonic()
    ticks, busy_s, slot = 0, 0.0, 1
    while time.monotonic() - start < seconds:
        delay = start + slot * interval_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        began = time.monotonic()
        tick()
        busy_s += time.monotonic() - began
        ticks += 1
        # A tick that overran its interval skips the slots it missed (as `run_watch` does).
        slot = max(slot + 1, int((time.monotonic() - start) / interval_s) + 1)
    wall_s = time.monotonic() - start
    cpu_s = time.process_time() - cpu0
    calls_made = sum(inner.counts.values()) - calls0
    nvml.close()
    if child is not None:
        child.kill()
        child.wait()
    return Result(
        sampler=sampler_name,
        model="busy" if busy else "wait",
        hz=hz,
        cpu_pct=100.0 * cpu_s / wall_s,
        ticks_per_s=ticks / wall_s,
        tick_ms=1000.0 * busy_s / ticks,
        calls_per_tick=calls_made / ticks,
    )


def markdown(results: list[Result], seconds: float, write: Path) -> str:
    command = "`.venv/bin/python bench/bench_watch_overhead.py"
    if seconds != 20.0:
        command += f" --seconds {seconds:g}"
    if write != RESULTS:
        command += f" --write {write}"
    command += "`"
    lines = [
        "## dlrig watch: the sampler's CPU on an 8-GPU box",
        "",
        f"Command: {command}",
        f"Machine: {machine()}; measured {dt.date.today().isoformat()}; no GPU: the 8-GPU box "
        f"is `tests/fixtures/nvml/{FIXTURE}.json` replayed (synthesised from a datasheet-built "
        f"A100 SXM4 80GB fixture, not recorded); load average {os.getloadavg()[0]:.1f} at the "
        "end (other work shares the CPUs).",
        "",
        "Each NVML call costs a real call's time: nvmlDeviceGetPcieThroughput waits 20 ms (NVML "
        "API reference: a 20 ms counting window); every other call takes 365 us (2,743 "
        "nvmlDeviceGetPowerUsage calls per second on a Tesla K40m, "
        "https://github.com/wookayin/gpustat/issues/76, 2020-01-02), spent waiting (`wait`) or "
        "computing (`busy`, the worst case). `before`: every field of every GPU at every tick, "
        "one call after another (as before this change, plus the three fields it added); "
        "`after`: static fields once, NVLink every 30 s, PCIe windows and the slow fields at "
        "most once a second, the PCIe windows of all GPUs at once on threads; `whole tick`: "
        "`after` plus the host and job samplers (psutil) on a sleeping job process. CPU: the "
        "process's user + system time over "
        f"{seconds:g} s of ticks after a warm-up tick, as a share of one core.",
        "",
        "| sampler | NVML call model | rate | CPU (% of one core) | target | met (and rate kept) "
        "| ticks/s done "
        "| ms per tick | NVML calls per tick |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        # Within the CPU target while keeping the rate (a sampler that falls behind its ticks
        # spends less CPU per second by doing less).
        met = "yes" if r.cpu_pct < TARGET_PCT[r.hz] and r.ticks_per_s >= KEPT_RATE * r.hz else "no"
        lines.append(
            f"| {r.sampler} | {r.model} | {r.hz} Hz | {r.cpu_pct:.2f} | < {TARGET_PCT[r.hz]:g}% "
            f"| {met} | {r.ticks_per_s:.2f} | {r.tick_ms:.1f} | {r.calls_per_tick:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds measured per case")
    parser.add_argument("--write", type=Path, default=RESULTS, help="markdown results file")
    args = parser.parse_args()
    results = []
    for sampler_name in ("before", "after", "whole tick"):
        for busy in (False, True):
            for hz in (1, 10):
                r = run_case(sampler_name, busy, hz, args.seconds)
                results.append(r)
                print(
                    f"{r.sampler:10s} {r.model:4s} {r.hz:2d} Hz  {r.cpu_pct:6.2f} % of one core"
                    f"  {r.ticks_per_s:5.2f} ticks/s  {r.tick_ms:6.1f} ms/tick"
                    f"  {r.calls_per_tick:4.0f} calls/tick",
                    flush=True,
                )
    args.write.parent.mkdir(parents=True, exist_ok=True)
    args.write.write_text(markdown(results, args.seconds, args.write), encoding="utf-8")


if __name__ == "__main__":
    main()
