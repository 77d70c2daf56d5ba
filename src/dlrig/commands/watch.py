"""`dlrig watch -- CMD ...`: run a job, watch the machine under it, name what holds it back.

`dlrig watch --list` lists past runs, `dlrig watch --show RUN_ID` replays one's summary. The
exit code is the job's (127 when it cannot start; 2 for dlrig's own usage errors).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dlrig.commands.bmc import (
    BmcCaFileOption,
    BmcOption,
    BmcTimeoutOption,
    BmcUserOption,
    InsecureOption,
    IpmiOption,
    bmc_source,
)
from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import finite

if TYPE_CHECKING:
    from dlrig.hardware.bmc import BmcSource
    from dlrig.watch.samples import Sample

# Options after the first word of the command belong to the command, `--` or not.
CONTEXT_SETTINGS = {"allow_interspersed_args": False, "ignore_unknown_options": True}

# Without a terminal, a status line at most this often keeps a job's log readable.
PLAIN_LINE_EVERY_S = 10.0
# A new Xid stays on the live view this long.
XID_SHOWN_S = 60.0
# The highest TCP port number (ports are 16-bit; 0 would mean "any free port", unknowable here).
MAX_PORT = 65535


def watch(
    command: Annotated[
        list[str] | None,
        typer.Argument(metavar="CMD", help="the command to run (after --)", show_default=False),
    ] = None,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            metavar="SECONDS",
            help="seconds between samples",
            min=0.01,
            callback=finite,
        ),
    ] = 1.0,
    json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    prometheus: Annotated[
        int | None,
        typer.Option(
            "--prometheus", metavar="PORT", help="serve metrics on 127.0.0.1:PORT/metrics"
        ),
    ] = None,
    prometheus_address: Annotated[
        str,
        typer.Option(
            "--prometheus-address",
            metavar="IP",
            help="the address to serve metrics on: 127.0.0.1 (this machine only), or a private "
            "interface's IP or 0.0.0.0 for a Prometheus on another machine",
        ),
    ] = "127.0.0.1",
    shell: Annotated[
        bool, typer.Option("--shell", help="run the command through /bin/sh (pipes, globs)")
    ] = False,
    list_runs: Annotated[bool, typer.Option("--list", help="list past watched runs")] = False,
    show: Annotated[
        int | None, typer.Option("--show", metavar="RUN_ID", help="replay a stored run's summary")
    ] = None,
    html: HtmlOption = None,
    bmc: BmcOption = None,
    ipmi: IpmiOption = None,
    bmc_user: BmcUserOption = None,
    insecure: InsecureOption = False,
    bmc_ca_file: BmcCaFileOption = None,
    bmc_timeout: BmcTimeoutOption = 25.0,
) -> None:
    """Run a command and watch CPUs, disks, RAM and GPUs under it (and the GPUs' and, with
    --bmc or --ipmi, the server's health); alarms and a verdict."""
    from dlrig.errors import ValidationError

    home = os.environ.get("DLRIG_HOME")
    modes = sum([bool(command), list_runs, show is not None])
    if modes != 1:
        raise ValidationError(
            "give one of: a command after --, --list, or --show RUN_ID",
            hint="dlrig watch -- python train.py",
        )
    if prometheus is not None and not 1 <= prometheus <= MAX_PORT:
        raise ValidationError(
            f"--prometheus {prometheus}: expected a TCP port from 1 to {MAX_PORT}",
            hint="dlrig watch --prometheus 9400 -- python train.py",
        )
    address = _listen_address(prometheus_address)
    if list_runs:
        _list(home, json)
    elif show is not None:
        _show(home, show, json, html)
    else:
        metrics = None if prometheus is None else (address, prometheus)
        source = bmc_source(bmc, ipmi, bmc_user, insecure, bmc_ca_file, bmc_timeout)
        raise typer.Exit(_run(command or [], home, interval, json, metrics, shell, html, source))


def _listen_address(text: str) -> str:
    """An IPv4 or IPv6 address to bind the metrics server to (not a host name: it names one
    interface, and a name could resolve to a public one)."""
    import ipaddress

    from dlrig.errors import ValidationError

    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValidationError(
            f"--prometheus-address {text}: expected an IP address of this machine",
            hint="127.0.0.1 (the default), a private interface's IP, or 0.0.0.0 for all",
        ) from None


def _warn(message: str) -> None:
    sys.stderr.write(f"dlrig: warning: {message}\n")


def _history_path(home: str | None) -> Path:
    from dlrig.history import db

    return db.database_path(Path(home) if home else None)


def _open_history(home: str | None, *, create: bool) -> tuple[Any, str]:
    from dlrig.history import db
    from dlrig.history import runs as _registers_the_watch_tables  # noqa: F401

    path = _history_path(home)
    return db.connect(path, create=create), str(path)


def _list(home: str | None, as_json: bool) -> None:
    from dlrig.history.runs import list_runs
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.jsonout import dumps
    from dlrig.report.watch import runs_table

    runs = list_runs(_open_history(home, create=False)[0]) if _history_path(home).exists() else []
    if as_json:
        print_text(dumps(runs))
    else:
        print_renderable(runs_table(runs))


def _show(home: str | None, run_id: int, as_json: bool, html: str | None) -> None:
    from dlrig.errors import ValidationError
    from dlrig.history.runs import load_run
    from dlrig.report.console import print_text
    from dlrig.report.watch import summary_json, summary_text
    from dlrig.watch.summary import judge_stored_run

    if not _history_path(home).exists():
        raise ValidationError(
            f"no watched run {run_id}: no history at {_history_path(home)} yet",
            hint="`dlrig watch -- CMD` records a run; `dlrig watch --list` shows them",
        )
    conn, path = _open_history(home, create=False)
    run = load_run(conn, run_id, db=path)
    summary = run.summary or judge_stored_run(
        run.command, run.interval_s, run.samples, db=path, run_id=run_id
    )
    print_text(summary_json(summary) if as_json else summary_text(summary))
    if html is not None:
        from dlrig.history.runs import load_samples
        from dlrig.report.html.pages import watch_page

        # A finished run is loaded as its summary; the page also draws its series.
        samples = run.samples or tuple(load_samples(conn, run_id))
        save_page(html, watch_page(summary, samples))


def _run(
    command: list[str],
    home: str | None,
    interval_s: float,
    as_json: bool,
    metrics: tuple[str, int] | None,
    shell: bool,
    html: str | None,
    bmc: BmcSource | None = None,
) -> int:
    import socket

    from dlrig.commands.inputs import nccl_p2p_disabled
    from dlrig.errors import HistoryError
    from dlrig.hardware.kernel_log import read_kernel_xids
    from dlrig.hardware.nvml import open_nvml
    from dlrig.history.runs import RunRecorder, discard_run, finish_run, start_run
    from dlrig.report.console import page_on_stdout, print_text
    from dlrig.report.watch import summary_json, summary_text
    from dlrig.watch.host import HealthSampler, NvmlGpuSampler, PsutilHostSampler
    from dlrig.watch.runner import CommandStartError, SampleSink, run_watch
    from dlrig.watch.summary import watch_summary

    nvml = open_nvml()
    health = HealthSampler(nvml, bmc=bmc, kernel_log=read_kernel_xids)
    try:
        health.start()  # a BMC that cannot be read: one line, exit 2, before the job starts
    except BaseException:
        nvml.close()
        raise
    sinks: list[SampleSink] = []
    server = None
    if metrics is not None:
        from dlrig.watch.prometheus import MetricsServer  # prometheus_client only when asked

        address, port = metrics
        server = MetricsServer(port, hostname=socket.gethostname(), address=address)
        sinks.append(_ServerSink(server))
        host = f"[{server.address}]" if ":" in server.address else server.address
        sys.stderr.write(f"dlrig: serving metrics on http://{host}:{server.port}/metrics\n")
        sys.stderr.flush()
    conn = db_path = run_id = recorder = None
    try:
        conn, db_path = _open_history(home, create=True)
        run_id = start_run(conn, command, interval_s)
        recorder = RunRecorder(conn, run_id)
        sinks.append(recorder)
    except HistoryError as exc:
        _warn(f"{exc} (the run is not recorded)")
        conn = db_path = run_id = None
    limits = _disk_limits(conn)
    view = None if as_json else _LiveView(" ".join(command))
    try:
        result = run_watch(
            command,
            gpus=NvmlGpuSampler(nvml),
            interval_s=interval_s,
            shell=shell,
            sinks=sinks,
            on_sample=None if view is None else view.update,
            on_warning=_warn,
            host=PsutilHostSampler(limits),
            # With --json (or --html -), stdout carries the summary (or the page) alone: the
            # job prints to stderr.
            child_stdout=sys.stderr.fileno() if as_json or page_on_stdout() else None,
            nccl_p2p_disabled=nccl_p2p_disabled(),
            health=health,
        )
    except CommandStartError:
        if conn is not None and run_id is not None:
            discard_run(conn, run_id)
        raise
    finally:
        if view is not None:
            view.stop()
        nvml.close()
    summary = watch_summary(result, db=db_path, run_id=run_id, interval_s=interval_s)
    if conn is not None and run_id is not None and recorder is not None and not recorder.failed:
        try:
            finish_run(conn, run_id, summary)
        except HistoryError as exc:
            _warn(str(exc))
    print_text(summary_json(summary) if as_json else summary_text(summary))
    if html is not None:
        from dlrig.report.html.pages import watch_page

        save_page(html, watch_page(summary, result.samples))
    return result.exit_code


def _disk_limits(conn: Any) -> dict[str, float]:
    """Measured sequential reads by disk name from this host's latest saved probe (`dlrig
    probe --save`), so that a disk at its measured rate counts as saturated; {} without one."""
    import socket

    from dlrig.errors import HistoryError
    from dlrig.history.probes import latest_probe

    if conn is None:
        return {}
    try:
        probe = latest_probe(conn, socket.gethostname())
    except HistoryError:
        return {}
    limits: dict[str, float] = {}
    for disk in probe.report.disks if probe is not None else ():
        name = (disk.get("disk") or {}).get("name")
        # The deep-queue figure: a training loader reads with many requests in flight.
        speed = disk.get("speed") or {}
        read_mb_s = speed.get("read_mb_s", speed.get("cold_mb_s"))
        if isinstance(name, str) and isinstance(read_mb_s, int | float) and read_mb_s > 0:
            limits[name] = max(limits.get(name, 0.0), float(read_mb_s))
    return limits


class _ServerSink:
    """Feeds the Prometheus server; closing it releases the port."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def add(self, sample: Sample) -> None:
        self.server.update(sample)

    def close(self) -> None:
        self.server.close()


class _LiveView:
    """A rich table redrawn in place on a terminal (stderr); plain lines without one."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.live: Any = None
        self._last_line_s = -PLAIN_LINE_EVERY_S
        self._bmc: Any = None  # the health sample of the last BMC reading
        self._xids: list[tuple[float, Any]] = []
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.live import Live

            self.live = Live(console=Console(stderr=True), auto_refresh=False, transient=False)
            self.live.start()

    def update(self, sample: Sample) -> None:
        from dlrig.report.watch import live_table, plain_line

        health = self._standing(sample)
        if self.live is not None:
            self.live.update(live_table(sample, self.command, health), refresh=True)
            return
        now_s = time.monotonic()
        if now_s - self._last_line_s >= PLAIN_LINE_EVERY_S:
            self._last_line_s = now_s
            sys.stderr.write(plain_line(sample, health) + "\n")
            sys.stderr.flush()

    def _standing(self, sample: Sample) -> Any:
        """The health to show: the latest BMC reading (it comes every 30 s) and the Xids of the
        last minute, so that a fault stays on screen between the health samples."""
        from dataclasses import replace

        from dlrig.watch.samples import HealthSample

        if sample.health is not None:
            if sample.health.bmc is not None or sample.health.bmc_error is not None:
                self._bmc = sample.health
            self._xids = [(t, x) for t, x in self._xids if sample.t_s - t < XID_SHOWN_S]
            self._xids += [(sample.t_s, x) for x in sample.health.xids]
        base = self._bmc if self._bmc is not None else HealthSample()
        return replace(base, xids=tuple(x for _, x in self._xids))

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
