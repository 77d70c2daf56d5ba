"""`dlrig health`: the server's and its GPUs' health: NVML counters and Xids, the kernel log,
PCIe AER, EDAC, drives, thermal zones and, with --bmc or --ipmi, the BMC's power supplies,
fans, temperatures, voltages and event log.

Exit codes: 0 healthy (warnings allowed), 1 a fault that needs an action on the machine, 2 bad
input or a BMC that cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from dlrig.health import Baseline, HealthReport
    from dlrig.probe.health import HealthSource


def _sources(text: str | None, bmc_named: bool) -> tuple[HealthSource, ...]:
    from dlrig.errors import ValidationError
    from dlrig.probe.health import HealthSource

    if text is None:
        return tuple(HealthSource)
    chosen = []
    for word in (w.strip() for w in text.split(",") if w.strip()):
        try:
            chosen.append(HealthSource(word))
        except ValueError:
            known = ", ".join(s.value for s in HealthSource)
            raise ValidationError(
                f"--sources {word}: expected some of {known}", field="--sources"
            ) from None
    if HealthSource.BMC in chosen and not bmc_named:
        raise ValidationError("--sources bmc needs --bmc URL or --ipmi HOST")
    return tuple(chosen)


def health(
    json: Annotated[bool, typer.Option("--json", help="print JSON instead of the sheet")] = False,
    html: HtmlOption = None,
    bmc: BmcOption = None,
    ipmi: IpmiOption = None,
    bmc_user: BmcUserOption = None,
    insecure: InsecureOption = False,
    bmc_ca_file: BmcCaFileOption = None,
    bmc_timeout: BmcTimeoutOption = 60.0,
    sources: Annotated[
        str | None,
        typer.Option(
            "--sources",
            metavar="LIST",
            help="read only these: nvml,kernel_log,sysfs,smart,bmc (default: all there are)",
        ),
    ] = None,
    kernel_log: Annotated[
        Path | None,
        typer.Option(
            "--kernel-log",
            metavar="FILE",
            help="read Xid lines from this saved log (dmesg, journalctl -k, kern.log) instead of "
            "the kernel's ring buffer",
        ),
    ] = None,
    save: Annotated[
        bool,
        typer.Option(
            "--save", help="keep this reading in the history: the next one judges growth from it"
        ),
    ] = False,
    root: Annotated[
        Path,
        typer.Option("--root", hidden=True, help="read /sys and /dev/kmsg under this folder"),
    ] = Path("/"),
) -> None:
    """Check the server and its GPUs for faults: ECC, remapped rows, Xids, NVLink and PCIe
    errors, throttling, AER, memory errors, drives and (with --bmc/--ipmi) PSUs, fans and
    temperatures against the BMC's thresholds."""
    import socket

    from dlrig.commands.inputs import history_path
    from dlrig.errors import InputFileError
    from dlrig.hardware.nvml import open_nvml
    from dlrig.health import judge_health
    from dlrig.probe.health import HealthOptions, read_health_inputs
    from dlrig.report import health as report
    from dlrig.report.console import print_renderable, print_text

    source = bmc_source(bmc, ipmi, bmc_user, insecure, bmc_ca_file, bmc_timeout)
    chosen = _sources(sources, source is not None)
    if kernel_log is not None and not kernel_log.is_file():
        raise InputFileError(f"--kernel-log {kernel_log}: no such file")
    host = socket.gethostname()
    baseline, expected = _baseline(history_path(), host)
    nvml = open_nvml()
    try:
        inputs = read_health_inputs(nvml, HealthOptions(chosen, root, kernel_log, source))
    finally:
        nvml.close()
    result = judge_health(inputs, host=host, baseline=baseline, expected_gpus=expected)
    if json:
        print_text(report.health_json(result))
    else:
        print_renderable(report.health_sheet(result))
    if html is not None:
        from dlrig.report.html.pages import health_page

        save_page(html, health_page(result))
    if save:
        _save(result)
    if not result.healthy:
        raise typer.Exit(1)


def _baseline(path: Path, host: str) -> tuple[Baseline | None, int | None]:
    """The baseline and expected GPU count from the history (none when there is no history)."""
    from dlrig.errors import HistoryError

    if not path.exists():
        return None, None
    from dlrig.history import db
    from dlrig.history.health import health_baseline

    try:
        conn = db.connect(path, create=False)
    except HistoryError:
        return None, None
    try:
        return health_baseline(conn, host)
    finally:
        conn.close()


def _save(result: HealthReport) -> None:
    from dlrig.commands.inputs import history_path
    from dlrig.history import db
    from dlrig.history.health import save_health
    from dlrig.report.console import print_note

    conn = db.connect(history_path())
    try:
        reading_id = save_health(conn, result)
    finally:
        conn.close()
    print_note(f"saved health reading {reading_id} to {history_path()}")
