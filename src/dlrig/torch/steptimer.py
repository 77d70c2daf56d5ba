"""`StepTimer`: how a training loop splits its time between waiting for data, copying it to the
device and computing, and what that says about the machine.

```python
timer = StepTimer()
for batch in timer.loader(loader):          # the wait for each batch
    with timer.h2d():                       # optional: the host-to-device copy
        batch = batch.to(device)
    with timer.step():                      # the step (CUDA synchronized only on a GPU)
        ...
print(timer.report())
```

The wait is wall time spent in the loader's `next()`; the loader's CPU use during the loop
(the training thread's when `num_workers=0`, the worker processes' otherwise; counted as time on
a CPU or waiting for one, `dlrig.hardware.host.demand_s`, so a shared machine does not hide
it) tells a loader that preprocesses (`cpu_preprocessing`) from one that waits on reads (`storage`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import psutil
import torch

from dlrig.enums import Bottleneck
from dlrig.hardware.host import demand_s
from dlrig.torch.advice import LoaderSettings, judge_loop, loader_settings_of
from dlrig.units import s_to_ms

T = TypeVar("T")

# Worker CPU times are read at most this often (a psutil call per worker costs ~50 us).
_WORKER_POLL_S = 0.25


@dataclass(frozen=True)
class StepReport:
    """What `StepTimer.report()` returns: totals in seconds, the verdict and the advice."""

    data_wait_s: float
    h2d_s: float
    compute_s: float
    steps: int
    bottleneck: Bottleneck
    advice: tuple[str, ...]
    shares: dict[str, float]
    compute_device: str
    device_is_cpu: bool
    loader: LoaderSettings | None
    loader_cpu_busy: float | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (the keys of design.md, plus shares and the device)."""
        return {
            "data_wait_s": self.data_wait_s,
            "h2d_s": self.h2d_s,
            "compute_s": self.compute_s,
            "steps": self.steps,
            "bottleneck": self.bottleneck.value,
            "advice": list(self.advice),
            "shares": dict(self.shares),
            "compute_device": self.compute_device,
            "device_is_cpu": self.device_is_cpu,
            "loader": None if self.loader is None else vars(self.loader).copy(),
            "loader_cpu_busy": self.loader_cpu_busy,
        }

    def __str__(self) -> str:
        per_step_ms = s_to_ms(self.data_wait_s + self.h2d_s + self.compute_s) / max(self.steps, 1)
        lines = [
            f"{self.steps} steps, {per_step_ms:.1f} ms per step: "
            f"data wait {self.data_wait_s:.3f} s ({self.shares['data_wait']:.0%}), "
            f"host-to-device {self.h2d_s:.3f} s ({self.shares['h2d']:.0%}), "
            f"compute {self.compute_s:.3f} s ({self.shares['compute']:.0%})",
            f"compute device: {self.compute_device}"
            + (" (no GPU: the device computing is the CPU)" if self.device_is_cpu else ""),
            f"bottleneck: {self.bottleneck.value}",
        ]
        lines += [f"  - {line}" for line in self.advice]
        return "\n".join(lines)


class StepTimer:
    """Times the data wait, host-to-device copy and compute of each step of a loop.

    `device`: where the step runs; by default a GPU when CUDA is initialised in this process,
    else the CPU. `dataloader`: a torch DataLoader whose settings ground the advice (read
    automatically when `loader()` is given one).
    """

    def __init__(self, device: str | torch.device | None = None, *, dataloader: Any = None):
        self._device = None if device is None else torch.device(device)
        self._settings = loader_settings_of(dataloader) if dataloader is not None else None
        self.data_wait_s = 0.0
        self.h2d_s = 0.0
        self.compute_s = 0.0
        self.steps = 0
        self._wait_cpu_s = 0.0
        self._wait_measured_s = 0.0
        # pid -> (CPU seconds, perf_counter seconds) at the first and the latest reading
        self._worker_first: dict[int, tuple[float, float]] = {}
        self._worker_last: dict[int, tuple[float, float]] = {}
        self._worker_poll_at = 0.0

    def loader(self, iterable: Iterable[T]) -> Iterator[T]:
        """Yield the batches of `iterable`, adding the wait for each to `data_wait_s`."""
        self.use_loader(iterable)
        iterator = iter(iterable)
        self._poll_workers(force=True)  # the workers have just started: their baseline
        while True:
            start_s = time.perf_counter()
            start_busy_s = thread_busy_s()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            self.record_wait(time.perf_counter() - start_s, thread_busy_s() - start_busy_s)
            yield batch

    def use_loader(self, loader: Any) -> None:
        """Read the advice's DataLoader settings from `loader` (unless given already)."""
        if self._settings is None and loader is not None:
            self._settings = loader_settings_of(loader)

    def record_wait(self, wall_s: float, busy_s: float | None) -> None:
        """Add one wait for a batch: its wall time and, when measured, the seconds the training
        thread computed (or was ready to) meanwhile (`thread_busy_s()` before and after)."""
        self.data_wait_s += wall_s
        if busy_s is not None:
            self._wait_measured_s += wall_s
            self._wait_cpu_s += busy_s
        self._poll_workers()

    @contextmanager
    def step(self) -> Iterator[None]:
        """Time one step; on a GPU, wait for its kernels so that their time is counted."""
        start_s = time.perf_counter()
        try:
            yield
        finally:
            self._synchronize()
            self.compute_s += time.perf_counter() - start_s
            self.steps += 1

    @contextmanager
    def h2d(self) -> Iterator[None]:
        """Time a host-to-device copy (synchronized on a GPU, so an async copy counts fully)."""
        start_s = time.perf_counter()
        try:
            yield
        finally:
            self._synchronize()
            self.h2d_s += time.perf_counter() - start_s

    def add_h2d(self, seconds: float) -> None:
        """Add a copy time measured elsewhere (the Prefetcher's CUDA events)."""
        self.h2d_s += seconds

    def report(self) -> StepReport:
        """Totals so far, the bottleneck and advice grounded in the loader's settings."""
        device = self._resolved_device()
        device_is_cpu = device.type != "cuda"
        busy = self._loader_cpu_busy()
        verdict = judge_loop(
            data_wait_s=self.data_wait_s,
            h2d_s=self.h2d_s,
            compute_s=self.compute_s,
            loader=self._settings,
            loader_cpu_busy=busy,
            device_is_cpu=device_is_cpu,
            cpu_count=os.cpu_count() or 1,
        )
        return StepReport(
            data_wait_s=self.data_wait_s,
            h2d_s=self.h2d_s,
            compute_s=self.compute_s,
            steps=self.steps,
            bottleneck=verdict.bottleneck,
            advice=verdict.advice,
            shares=verdict.shares,
            compute_device=_device_name(device),
            device_is_cpu=device_is_cpu,
            loader=self._settings,
            loader_cpu_busy=busy,
        )

    def _resolved_device(self) -> torch.device:
        device = self._device
        if device is None:
            cuda = torch.cuda.is_available() and torch.cuda.is_initialized()  # type: ignore[no-untyped-call]
            device = torch.device("cuda" if cuda else "cpu")
        if device.type == "cuda" and device.index is None:  # the current device: name its index
            return torch.device("cuda", torch.cuda.current_device())
        return device

    def _synchronize(self) -> None:
        device = self._resolved_device()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def _poll_workers(self, *, force: bool = False) -> None:
        """Record each worker process's CPU seconds (workers are this one's children)."""
        if self._settings is None or self._settings.num_workers == 0:
            return
        now_s = time.perf_counter()
        if not force and now_s - self._worker_poll_at < _WORKER_POLL_S:
            return
        self._worker_poll_at = now_s
        for child in psutil.Process().children(recursive=True):
            busy_s = demand_s(child.pid)  # on a CPU or waiting for one: fair on a busy host
            if busy_s is None:
                try:
                    times = child.cpu_times()
                except psutil.Error:
                    continue
                busy_s = times.user + times.system
            reading = (busy_s, now_s)
            self._worker_first.setdefault(child.pid, reading)
            self._worker_last[child.pid] = reading

    def _loader_cpu_busy(self) -> float | None:
        """CPU cores used per loading process (1.0: always computing), None if not measured.

        With workers: their CPU seconds between the first and the last reading (the first is
        taken as the loader starts them) over the wall time between. Without: the training
        thread's CPU time inside `next()` over the wall time there.
        """
        if self._settings is not None and self._settings.num_workers > 0:
            cpu_s = wall_s = 0.0
            for pid, (last_cpu_s, last_s) in self._worker_last.items():
                first_cpu_s, first_s = self._worker_first[pid]
                cpu_s += last_cpu_s - first_cpu_s
                wall_s += last_s - first_s
            return cpu_s / wall_s if wall_s > 0 else None
        if self._wait_measured_s <= 0:
            return None
        return self._wait_cpu_s / self._wait_measured_s


def thread_busy_s() -> float:
    """The calling thread's seconds on a CPU or waiting for one (its CPU time off Linux)."""
    busy_s = demand_s(os.getpid(), threading.get_native_id())
    return time.thread_time() if busy_s is None else busy_s


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    return f"cpu ({os.cpu_count() or 1} CPUs)"
