"""`dlrig health` end to end in real processes, against Redfish mockups served over loopback:
the issue's "done when" (a failed PSU, a stopped fan and a hot inlet named as the BMC names them,
exit 1, no password anywhere; a healthy BMC exit 0; a wrong password or a dead address one line
and exit 2 within 15 s), and the history's baseline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.redfish_mockup import Misbehaviour, dead_address, serve_mockup

PASSWORD = "s3cret-Pa55"
ISSUE_BOUND_S = 15.0


def _dlrig(
    home: Path, *args: str, password: str | None = PASSWORD, timeout_s: float = 60
) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "DLRIG_HOME": str(home), "COLUMNS": "100"}
    env.pop("DLRIG_BMC_PASSWORD", None)
    if password is not None:
        env["DLRIG_BMC_PASSWORD"] = password
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "dlrig", "health", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return done, time.monotonic() - start


def _no_secret(done: subprocess.CompletedProcess[str]) -> None:
    assert PASSWORD not in done.stdout and PASSWORD not in done.stderr


@pytest.fixture
def empty_root(tmp_path: Path) -> str:
    """A filesystem root without /sys or /dev/kmsg: this test machine's own host readings stay
    out of the BMC's verdict (--root is the hidden option for a copied tree)."""
    root = tmp_path / "root"
    root.mkdir()
    return str(root)


def test_failed_psu_stopped_fan_and_hot_inlet(tmp_path: Path, empty_root: str) -> None:
    with serve_mockup("faulted_legacy", user="U", password=PASSWORD) as bmc:
        done, _ = _dlrig(
            tmp_path, "--bmc", bmc.url, "--bmc-user", "U", "--json", "--root", empty_root
        )
    assert done.returncode == 1, done.stderr
    _no_secret(done)
    report = json.loads(done.stdout)
    errors = {(f["name"], f["part"]) for f in report["findings"] if f["severity"] == "error"}
    assert ("power_supply_failed", "'PS2 Status'") in errors
    assert ("power_supply_redundancy_lost", "'System Board PS Redundancy'") in errors
    assert ("fan_failed", "'System Board Fan3A'") in errors
    assert ("temperature_high", "'System Board Inlet Temp'") in errors
    assert report["healthy"] is False
    assert report["bmc"]["product"] == "Dell Inc. PowerEdge XE8640"
    assert {s["name"] for s in report["sources"]} >= {"nvml", "kernel_log", "redfish"}


def test_newer_resources_fail_the_same_way(tmp_path: Path) -> None:
    with serve_mockup("faulted_subsystems", user="U", password=PASSWORD) as bmc:
        done, _ = _dlrig(tmp_path, "--bmc", bmc.url, "--bmc-user", "U", "--sources", "bmc")
    assert done.returncode == 1
    _no_secret(done)
    for name in ("'PSU2'", "'FAN3'", "'Inlet Temp'", "FAULT"):
        assert name in done.stdout  # the sheet


def test_healthy_bmc_exits_0(tmp_path: Path, empty_root: str) -> None:
    with serve_mockup("healthy_subsystems", user="U", password=PASSWORD) as bmc:
        done, _ = _dlrig(
            tmp_path, "--bmc", bmc.url, "--bmc-user", "U", "--json", "--root", empty_root
        )
    assert done.returncode == 0, done.stdout
    assert json.loads(done.stdout)["verdict"] == "healthy: no fault needs an action"


def test_wrong_password_is_one_line_exit_2(tmp_path: Path) -> None:
    with serve_mockup("healthy_legacy", user="U", password=PASSWORD) as bmc:
        done, seconds = _dlrig(tmp_path, "--bmc", bmc.url, "--bmc-user", "U", password="nope-9")
    assert done.returncode == 2 and seconds < ISSUE_BOUND_S
    assert done.stdout == ""
    first, *rest = done.stderr.splitlines()
    assert (
        first
        == f"dlrig: error: BMC {bmc.url}: user 'U' was refused (HTTP 401): wrong user or password"
    )
    assert all(line.startswith("  hint:") for line in rest)
    assert "nope-9" not in done.stderr


def test_dead_address_is_one_line_exit_2_within_15_s(tmp_path: Path) -> None:
    url = dead_address()
    done, seconds = _dlrig(tmp_path, "--bmc", url, "--bmc-user", "U")
    assert done.returncode == 2 and seconds < ISSUE_BOUND_S
    assert done.stderr.splitlines()[0] == f"dlrig: error: BMC {url}: connection refused or dropped"
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_bmc_that_never_answers_is_cut_within_15_s(tmp_path: Path) -> None:
    with serve_mockup("healthy_legacy", misbehaviour=Misbehaviour(delay_s=30)) as bmc:
        done, seconds = _dlrig(tmp_path, "--bmc", bmc.url, "--bmc-user", "U")
    assert done.returncode == 2 and seconds < ISSUE_BOUND_S
    assert "no answer within 10 s" in done.stderr


def test_no_password_and_no_terminal(tmp_path: Path) -> None:
    done, _ = _dlrig(tmp_path, "--bmc", "https://10.0.0.21", "--bmc-user", "U", password=None)
    assert done.returncode == 2
    assert "no password: set DLRIG_BMC_PASSWORD" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--bmc", "https://10.0.0.21"), "--bmc needs --bmc-user USER"),
        (("--bmc", "http://10.0.0.21", "--bmc-user", "U"), "plain http would send the password"),
        (("--bmc-user", "U"), "--bmc-user needs --bmc URL or --ipmi HOST"),
        (("--sources", "nvml,gpus"), "--sources gpus: expected some of nvml, kernel_log"),
        (("--kernel-log", "/no/such/log"), "--kernel-log /no/such/log: no such file"),
        (("--bmc", "https://a:b@10.0.0.21", "--bmc-user", "U"), "the address holds credentials"),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done, _ = _dlrig(tmp_path, *args)
    assert done.returncode == 2 and message in done.stderr.splitlines()[0]


def test_kernel_log_file_xids(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text(
        "Dec  5 21:40:10 node07 kernel: [812345.2] NVRM: Xid (PCI:0000:5a:00): 79, pid=1, "
        "name=python, GPU has fallen off the bus.\n"
    )
    done, _ = _dlrig(tmp_path, "--sources", "kernel_log", "--kernel-log", str(log), "--json")
    assert done.returncode == 1
    (finding,) = json.loads(done.stdout)["findings"]
    assert finding["evidence"]["immediate"] == "RESTART_BM"  # NVIDIA's catalog, Xid 79
    assert finding["part"] == "GPU at 0000:5a:00"


def test_saved_reading_is_the_next_baseline(tmp_path: Path, empty_root: str) -> None:
    import sqlite3

    with serve_mockup("healthy_subsystems", user="U", password=PASSWORD) as bmc:
        args = ("--bmc", bmc.url, "--bmc-user", "U", "--root", empty_root, "--json")
        first, _ = _dlrig(tmp_path, *args, "--save")
        assert first.returncode == 0 and "saved health reading 1" in first.stderr
        second, _ = _dlrig(tmp_path, *args)
    saved = json.loads(first.stdout)
    assert saved["baseline"] is None
    baseline = json.loads(second.stdout)["baseline"]
    assert baseline == {"taken_utc": saved["taken_utc"], "source": "health reading"}
    _no_secret(first)
    with sqlite3.connect(tmp_path / "dlrig.sqlite3") as conn:
        (data,) = conn.execute("SELECT data FROM health_readings").fetchone()
    assert PASSWORD not in data  # never saved


def test_html_page(tmp_path: Path, empty_root: str) -> None:
    page = tmp_path / "health.html"
    with serve_mockup("faulted_subsystems", user="U", password=PASSWORD) as bmc:
        done, _ = _dlrig(
            tmp_path, "--bmc", bmc.url, "--bmc-user", "U", "--root", empty_root, "--html", str(page)
        )
    assert done.returncode == 1
    html = page.read_text()
    assert "Temperatures as a share of the BMC&#39;s upper critical threshold" in html
    assert "PSU2" in html and "HEALTH.14" in html and PASSWORD not in html


def test_readme_sheet_is_what_the_command_prints(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("--kernel-log tests/fixtures/kernel_log/hgx_node07.log\n", 1)[1]
    shown = block.split("\n```", 1)[0].splitlines()
    log = Path(__file__).resolve().parents[1] / "fixtures" / "kernel_log" / "hgx_node07.log"
    # As README's by-hand mockup serves it: the log entries as old as when they were written.
    with serve_mockup(
        "faulted_subsystems", user="monitor", password=PASSWORD, logs_as_of_now=True
    ) as bmc:
        args = ("--bmc", bmc.url, "--bmc-user", "monitor", "--sources", "kernel_log,bmc")
        done, _ = _dlrig(tmp_path, *args, "--kernel-log", str(log))
    assert done.returncode == 1
    printed = done.stdout.replace("\r", "").splitlines()
    # The first line names the host and the time; the rest is the sheet, cut where README cuts.
    assert shown[0].startswith("health of ") and printed[0].startswith("health of ")
    assert [line.rstrip() for line in printed[1 : len(shown)]] == [
        line.rstrip() for line in shown[1:]
    ]
