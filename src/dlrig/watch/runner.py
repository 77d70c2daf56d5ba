"""Run a command and sample the machine under it until it exits.

The command is spawned without a shell (unless asked), keeps the terminal (it is in the same
process group, so Ctrl-C at a terminal reaches it directly), and gets SIGINT/SIGTERM sent to
dlrig forwarded. Samples go to the sinks (history, Prometheus) and to an optional callback (the
live view) as they are taken; a sink that fails is switched off with a warning and the job runs
on. The detectors and the verdict run over the series at the end.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Protocol

from dlrig.errors import DlrigError
from dlrig.watch.detectors import Alarm, detect_all
from dlrig.watch.detectors.series import gpus_busy
from dlrig.watch.host import (
    GpuSampler,
    HealthSampler,
    HostSampler,
    PsutilHostSampler,
    PsutilJobSampler,
)
from dlrig.watch.samples import Sample
from dlrig.watch.verdict import Verdict, judge

# The series kept in memory for the verdict is thinned (every other sample dropped) past this
# length, so a week-long run stays bounded; the history database keeps every sample.
MAX_SAMPLES_IN_MEMORY = 20_000
# The command could not be started, in the codes of POSIX shells, `env` and `timeout`: 127 for
# a command not found, 126 for one found that cannot run (not executable, a folder).
EXIT_NOT_FOUND = 127
EXIT_CANNOT_RUN = 126


class CommandStartError(DlrigError):
    """The command was found but could not be run (not executable, a folder, a bad binary)."""

    exit_code = EXIT_CANNOT_RUN


class CommandNotFoundError(CommandStartError):
    """No command by that name: no such file, nor one on PATH."""

    exit_code = EXIT_NOT_FOUND


class SampleSink(Protocol):
    """Where samples go as they are taken; raises DlrigError when it cannot take more."""

    def add(self, sample: Sample) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class WatchResult:
    """What a watched run gave: the exit code, the series, the alarms and the verdict."""

    command: tuple[str, ...]
    exit_code: int
    duration_s: float
    samples: tuple[Sample, ...]
    sample_count: int
    alarms: tuple[Alarm, ...]
    verdict: Verdict
    interrupted: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)


def exit_code_of(returncode: int) -> int:
    """A child's status as a shell reports it: killed by signal N is 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


def spawn(
    command: Sequence[str], *, shell: bool, stdout: int | None = None
) -> subprocess.Popen[bytes]:
    """Start the command (through /bin/sh only with `shell`), its standard output to the file
    descriptor `stdout` (None: ours); CommandStartError if it cannot."""
    if not command:
        raise CommandStartError(
            "no command to watch", hint="put it after --: dlrig watch -- python train.py"
        )
    try:
        if shell:
            return subprocess.Popen(" ".join(command), shell=True, stdout=stdout)
        return subprocess.Popen(list(command), stdout=stdout)
    except FileNotFoundError as exc:
        raise CommandNotFoundError(
            f"cannot start {command[0]!r}: no such file or command",
            hint="check the name and PATH; pipes, globs and && need --shell",
        ) from exc
    except PermissionError as exc:
        if os.path.isdir(command[0]):
            raise CommandStartError(f"cannot start {command[0]!r}: it is a folder") from exc
        raise CommandStartError(
            f"cannot start {command[0]!r}: permission denied (not executable?)",
            hint=f"chmod +x {command[0]}, or run it through its interpreter",
        ) from exc
    except OSError as exc:
        raise CommandStartError(f"cannot start {command[0]!r}: {exc.strerror or exc}") from exc


def _terminal_delivers_sigint() -> bool:
    """True when a Ctrl-C at the terminal already reached the job: dlrig (and so the job, in
    its process group) is the terminal's foreground group. Forwarding it too would interrupt
    the job twice."""
    try:
        return os.isatty(sys.stdin.fileno()) and os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


class _ExitWaiter:
    """Sleeps until a deadline or the child's exit, whichever is first (pidfd where there is
    one, so that an exit is seen at once without polling)."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self._child = child
        self._fd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self._fd = os.pidfd_open(child.pid)

    def wait(self, timeout_s: float) -> bool:
        """True when the child has exited."""
        if self._child.poll() is not None:
            return True
        if self._fd is not None:
            select.select([self._fd], [], [], max(0.0, timeout_s))
            return self._child.poll() is not None
        try:
            self._child.wait(timeout=max(0.0, timeout_s))
        except subprocess.TimeoutExpired:
            return False
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# The environment's NCCL_P2P_DISABLE turns NCCL's P2P transport off, NVLink included (NCCL
# environment variables docs): Lambda's 2022 runs under it kept 0.60 of one A100's GNMT rate a
# GPU on two NVSwitch-joined A100s, where the 2024 H100 SXM5 servers keep 0.98-0.99
# (scripts/calibration_data.py).
NCCL_P2P_DISABLED_WARNING = (
    "NCCL_P2P_DISABLE is set for this job: NCCL sent its collectives through host memory, "
    "NVLink included; unset it unless it works around a hang"
)


def run_watch(
    command: Sequence[str],
    *,
    gpus: GpuSampler,
    interval_s: float = 1.0,
    shell: bool = False,
    sinks: Sequence[SampleSink] = (),
    on_sample: Callable[[Sample], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    host: HostSampler | None = None,
    child_stdout: int | None = None,
    nccl_p2p_disabled: bool = False,
    health: HealthSampler | None = None,
) -> WatchResult:
    """Run `command`, sampling every `interval_s`, and judge the run when it exits.
    `child_stdout`: the file descriptor the command's standard output goes to (None: ours).
    `nccl_p2p_disabled`: the command's environment sets NCCL_P2P_DISABLE (a warning when the
    run kept more than one GPU busy). `health`: reads health counters, Xids and the BMC at its
    own pace; their alarms join the others (a BMC that fails to answer is a warning, once).

    Call from the main thread (signal handlers are installed for the run and restored after).
    """
    if interval_s <= 0:
        raise DlrigError(f"the interval must be positive, got {interval_s}")
    host_sampler = host if host is not None else PsutilHostSampler()
    warnings: list[str] = []
    live_sinks = list(sinks)

    def warn(message: str) -> None:
        warnings.append(message)
        if on_warning is not None:
            on_warning(message)

    if health is not None:
        health.start()
    bmc_warned = False
    interrupted = False
    spawned: list[subprocess.Popen[bytes]] = []
    pending: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        interrupted = True
        if signum == signal.SIGINT and _terminal_delivers_sigint():
            return
        if not spawned:
            pending.append(signum)  # sent once the child exists
            return
        with contextlib.suppress(ProcessLookupError):
            spawned[0].send_signal(signum)

    # Installed before the child is spawned: exec resets a handled signal to its default but
    # keeps an ignored one ignored, and a non-interactive shell starts a background job with
    # SIGINT ignored, so a child spawned first would never see the SIGINT dlrig forwards.
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    start_s = time.monotonic()
    try:
        child = spawn(command, shell=shell, stdout=child_stdout)
    except BaseException:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if health is not None:
            health.close()
        raise
    spawned.append(child)
    for early in pending:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(early)
    job = PsutilJobSampler(child.pid)
    job.sample()  # prime the per-process counters
    waiter = _ExitWaiter(child)
    samples: list[Sample] = []
    count = 0
    stride = 1
    try:
        tick = 1
        while True:
            exited = waiter.wait(start_s + tick * interval_s - time.monotonic())
            now_s = time.monotonic()
            last_t = samples[-1].t_s if samples else 0.0
            if exited and now_s - start_s - last_t < 0.2 * interval_s:
                break  # nothing worth a partial sample
            sample = Sample(
                t_s=now_s - start_s,
                host=host_sampler.sample(),
                job=job.sample(),
                gpus=gpus.sample(),
                health=None if health is None else health.sample(force=exited),
            )
            if sample.health is not None and sample.health.bmc_error and not bmc_warned:
                bmc_warned = True
                warn(f"{sample.health.bmc_error} (the BMC's alarms are off until it answers)")
            count += 1
            if count % stride == 0:
                samples.append(sample)
            if len(samples) > MAX_SAMPLES_IN_MEMORY:
                samples = samples[::2]
                stride *= 2
            for sink in list(live_sinks):
                try:
                    sink.add(sample)
                except DlrigError as exc:
                    live_sinks.remove(sink)
                    warn(str(exc))
            if on_sample is not None:
                on_sample(sample)
            if exited:
                break
            tick = max(tick + 1, int((now_s - start_s) / interval_s) + 1)
    finally:
        returncode = child.wait()
        waiter.close()
        if health is not None:
            health.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for sink in live_sinks:
            try:
                sink.close()
            except DlrigError as exc:
                warn(str(exc))
    duration_s = time.monotonic() - start_s
    if nccl_p2p_disabled and gpus_busy(samples) > 1:
        warn(NCCL_P2P_DISABLED_WARNING)
    alarms = detect_all(samples)
    return WatchResult(
        command=tuple(command),
        exit_code=exit_code_of(returncode),
        duration_s=duration_s,
        samples=tuple(samples),
        sample_count=count,
        alarms=alarms,
        verdict=judge(samples, alarms),
        interrupted=interrupted,
        warnings=tuple(warnings),
    )
