"""`dlrig probe`: measure this machine (host, disks, loader, GPUs), judge it, optionally save it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dlrig.commands.html import HtmlOption, save_page
from dlrig.commands.inputs import checked_folders

if TYPE_CHECKING:
    from dlrig.probe.report import ProbeReport

QuickOption = Annotated[bool, typer.Option("--quick", help="a short probe (under 20 s)")]
JsonOption = Annotated[bool, typer.Option("--json", help="print JSON instead of tables")]
SaveOption = Annotated[bool, typer.Option("--save", help="store the probe in the history database")]
PathOption = Annotated[
    list[str] | None,
    typer.Option(
        "--path",
        metavar="FOLDER",
        help="measure the disk under this directory (repeatable)",
        callback=checked_folders,
    ),
]
HistoryOption = Annotated[bool, typer.Option("--history", help="list the saved probes")]
CompareOption = Annotated[
    bool, typer.Option("--compare", help="what changed since the last saved probe of this host")
]
DistributedOption = Annotated[
    bool,
    typer.Option("--distributed", help="under torchrun: probe every rank, measure all-reduce"),
]
NoTorchOption = Annotated[
    bool, typer.Option("--no-torch", help="skip the torch.cuda measurements (NVML only)")
]
TrainOption = Annotated[
    str | None,
    typer.Option(
        "--train",
        metavar="WORKLOAD",
        help="train a stand-in of WORKLOAD (zoo name or file) for a few dozen steps here and "
        "print its measured step next to the model's estimate (needs torch)",
    ),
]
BatchOption = Annotated[
    int | None,
    typer.Option(
        "--batch", min=1, max=65536, help="--train: the batch (default: the workload's; 8 on a CPU)"
    ),
]
StepsOption = Annotated[
    int, typer.Option("--steps", min=1, max=10000, help="--train: timed steps after warm-up")
]


def _home() -> Path | None:
    # The CLI layer is the one place that reads the environment (core code takes paths).
    home = os.environ.get("DLRIG_HOME")
    return Path(home) if home else None


def _db_path() -> Path:
    from dlrig.history import db

    return db.database_path(_home())


def probe(
    quick: QuickOption = False,
    json: JsonOption = False,
    save: SaveOption = False,
    path: PathOption = None,
    history: HistoryOption = False,
    compare: CompareOption = False,
    distributed: DistributedOption = False,
    no_torch: NoTorchOption = False,
    html: HtmlOption = None,
    train: TrainOption = None,
    batch: BatchOption = None,
    steps: StepsOption = 30,
) -> None:
    """Measure this machine (CPU, RAM, disks, input pipeline, GPUs) against its datasheets.

    The machine is also saved as a build, so `dlrig check probe:latest` judges it.
    """
    if train is not None:
        _train(train, batch, steps, json)
        return
    if history:
        _show_history(json)
        return
    if distributed:
        from dlrig.probe.distributed import run_distributed

        # torchrun's environment names this process's GPU on its node.
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        cluster = run_distributed(quick=quick, local_rank=local_rank)
        if cluster is not None:
            _print_cluster(cluster, json)
        return
    if save:
        from dlrig.history import db

        db.check_writable(_db_path())  # before a measurement that would otherwise be lost
    report = _measure(quick, tuple(Path(p) for p in path or ()), not no_torch, json)
    if compare:
        _compare(report, json)
    elif json:
        from dlrig.report.console import print_text
        from dlrig.report.jsonout import dumps

        print_text(dumps(report.model_dump(mode="json")))
    else:
        from dlrig.report.console import print_renderable
        from dlrig.report.probe import probe_summary

        print_renderable(probe_summary(report))
    if html is not None:
        from dlrig.report.html.pages import probe_page

        save_page(html, probe_page(report))
    if save:
        _save(report, quiet=json)


def _measure(quick: bool, paths: tuple[Path, ...], torch: bool, quiet: bool) -> ProbeReport:
    from dlrig.catalog import load_catalog
    from dlrig.commands.inputs import nccl_p2p_disabled
    from dlrig.hardware.nvml import open_nvml
    from dlrig.probe.document import probe_build_document
    from dlrig.probe.judge import judge
    from dlrig.probe.report import probe_report
    from dlrig.probe.run import ProbeOptions, run_probe

    catalog = load_catalog()
    nvml = open_nvml()
    options = ProbeOptions(
        quick=quick, paths=paths, torch=torch, nccl_p2p_disabled=nccl_p2p_disabled()
    )
    try:
        if quiet:
            result = run_probe(options, nvml, catalog)
        else:
            result = _with_progress(lambda progress: run_probe(options, nvml, catalog, progress))
        health = _health(nvml, quick, result.host)
    finally:
        nvml.close()
    document = probe_build_document(result, catalog)
    verdicts = judge(result, catalog, document["build"])
    return probe_report(result, verdicts, document, health)


def _health(nvml: Any, quick: bool, host: str) -> dict[str, Any]:
    """The machine's health summary (`dlrig health` without a BMC; smartctl only in a full
    probe), judged against this host's last saved reading; saved with the probe, it is the
    next reading's baseline."""
    from dlrig.commands.health import _baseline
    from dlrig.commands.inputs import history_path
    from dlrig.health import health_summary, judge_health
    from dlrig.probe.health import HealthOptions, HealthSource, read_health_inputs

    sources = [s for s in HealthSource if s is not HealthSource.BMC]
    if quick:
        sources.remove(HealthSource.SMART)
    baseline, expected = _baseline(history_path(), host)
    inputs = read_health_inputs(nvml, HealthOptions(tuple(sources)))
    report = judge_health(inputs, host=host, baseline=baseline, expected_gpus=expected)
    return health_summary(report)


def _train(workload_ref: str, batch: int | None, steps: int, as_json: bool) -> None:
    import datetime as dt
    import socket

    from dlrig.catalog import load_catalog
    from dlrig.hardware import host, torch_train
    from dlrig.probe import train as tr
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.jsonout import dumps
    from dlrig.report.probe import train_summary
    from dlrig.workloads import load_workload

    workload = load_workload(workload_ref)
    gpu_bytes = torch_train.cuda_memory_bytes()  # one line, exit 2, without torch
    on_cpu = gpu_bytes is None
    memory = host.read_memory()
    room = gpu_bytes if gpu_bytes is not None else memory.available_bytes or memory.total_bytes
    chosen = batch or (min(workload.batch_size, tr.CPU_BATCH) if on_cpu else workload.batch_size)
    standin = tr.stand_in(workload, chosen, on_cpu, (room or 0) / tr.BYTES_PER_PARAM)
    readings: tuple[Any, ...] = ()
    if not on_cpu:
        from dlrig.hardware.nvml import open_nvml

        nvml = open_nvml()
        try:
            readings = tuple(nvml.read_gpus())[:1]
        finally:
            nvml.close()
    timing = torch_train.train_steps(standin.spec, steps=steps, warmup=2 if on_cpu else 5)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    build = tr.machine_build(
        socket.gethostname(), now, host.read_cpu(), memory, readings, load_catalog(), on_cpu
    )
    data = tr.comparison_json(tr.compare(workload, standin, timing, build))
    if as_json:
        print_text(dumps(data))
    else:
        print_renderable(train_summary(data))


def _with_progress(run: Any) -> Any:
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        transient=True,
    ) as bars:
        task = bars.add_task("probing", total=None)

        def progress(label: str) -> None:
            bars.update(task, description=label)
            bars.advance(task)

        return run(progress)


def _print_cluster(cluster: dict[str, Any], as_json: bool) -> None:
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.jsonout import dumps
    from dlrig.report.probe import distributed_summary

    if as_json:
        print_text(dumps(cluster))
    else:
        print_renderable(distributed_summary(cluster))


def _save(report: ProbeReport, quiet: bool) -> None:
    from dlrig.errors import HistoryError
    from dlrig.history import db
    from dlrig.history.probes import save_probe

    path = _db_path()
    try:
        conn = db.connect(path)
        try:
            probe_id = save_probe(conn, report)
        finally:
            conn.close()
    except HistoryError as exc:
        # The database failed after the check (another process, a full disk): keep the
        # measurement in a new file rather than lose it.
        kept = _keep_report(report)
        where = f"the probe was written to {kept}" if kept else "no folder took the probe either"
        raise HistoryError(f"{exc.message}; {where}", hint=exc.hint) from exc
    if not quiet:
        from dlrig.report.console import print_text

        print_text(f"saved probe {probe_id} to {path}")


def _keep_report(report: ProbeReport) -> Path | None:
    """A new file (never an existing one) holding the report's JSON: the current folder, else
    the temporary one; None when neither takes it."""
    import tempfile

    for folder in (Path.cwd(), Path(tempfile.gettempdir())):
        try:
            fd, name = tempfile.mkstemp(prefix="dlrig-probe-", suffix=".json", dir=folder)
        except OSError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(report.model_dump_json(indent=2))
        return Path(name)
    return None


def _show_history(as_json: bool) -> None:
    from dlrig.history import db
    from dlrig.history.probes import list_probes
    from dlrig.probe.compare import history_row
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.jsonout import dumps
    from dlrig.report.probe import history_table

    conn = db.connect(_db_path(), create=False)
    try:
        rows = [history_row(r.probe_id, r.report) for r in list_probes(conn)]
    finally:
        conn.close()
    if as_json:
        print_text(dumps(rows))
    else:
        print_renderable(history_table(rows))


def _compare(report: ProbeReport, as_json: bool) -> None:
    from dlrig.errors import HistoryError
    from dlrig.history import db
    from dlrig.history.probes import latest_probe
    from dlrig.probe.compare import compare_probes
    from dlrig.report.console import print_renderable, print_text
    from dlrig.report.jsonout import dumps
    from dlrig.report.probe import compare_table

    conn = db.connect(_db_path(), create=False)
    try:
        before = latest_probe(conn, report.host)
    finally:
        conn.close()
    if before is None:
        raise HistoryError(
            f"no saved probe of {report.host} to compare with", hint="run `dlrig probe --save`"
        )
    changes = compare_probes(before.report, report)
    if as_json:
        probe = report.model_dump(mode="json")
        print_text(dumps({"before": before.probe_id, "changes": changes, "probe": probe}))
    else:
        print_renderable(compare_table(changes, f"{before.probe_id}", "now"))
