"""`dlrig watch` end to end in real processes: exit codes, Ctrl-C, a crash, the history,
a database that refuses writes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from watch_helpers import replayed_samples

from dlrig.errors import HistoryError
from dlrig.history import db
from dlrig.watch.host import NvmlGpuSampler
from dlrig.watch.runner import run_watch
from support.nvml_fakes import replay_nvml

# dlrig.history.runs registers its tables with the history database when imported; the tests
# import it inside the test functions, so that collecting this module leaves the database's
# migration list as the other test folders expect it.

SLEEPER = [sys.executable, "-c", "import time; time.sleep(30)"]


def _dlrig(home: Path, *args: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DLRIG_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
        check=False,
    )


# dlrig started as a non-interactive shell starts a background job: SIGINT ignored, which
# exec keeps (a `dlrig watch -- ... &` in a script).
IGNORING_SIGINT = [
    sys.executable, "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.executable, [sys.executable, '-m', 'dlrig', *sys.argv[1:]])",
]  # fmt: skip


def _start(home: Path, *args: str, ignoring_sigint: bool = False) -> subprocess.Popen[str]:
    dlrig = IGNORING_SIGINT if ignoring_sigint else [sys.executable, "-m", "dlrig"]
    return subprocess.Popen(
        [*dlrig, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "DLRIG_HOME": str(home)},
        start_new_session=True,  # so that the test can clean up the whole tree
    )


def _rows(home: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(db.database_path(home)) as conn:
        return conn.execute(sql).fetchall()


def _wait_for_samples(home: Path, count: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if db.database_path(home).exists():
            try:
                if _rows(home, "SELECT COUNT(*) FROM watch_samples")[0][0] >= count:
                    return
            except sqlite3.OperationalError:
                pass  # the tables are being created
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} samples were stored in {timeout_s} s")


WATCH_KEYS = [
    "command", "argv", "exit_code", "duration_s", "samples", "interval_s", "db", "run_id",
    "interrupted", "verdict", "alarms", "warnings",
]  # fmt: skip
VERDICT_KEYS = [
    "bottleneck", "evidence", "fix", "modifiers", "utilization", "compute_device",
    "device_is_cpu", "summary",
]  # fmt: skip


def test_exit_code_and_json_summary_and_history(isolated_dlrig_home: Path) -> None:
    result = _dlrig(
        isolated_dlrig_home,
        "watch",
        "--interval",
        "0.2",
        "--json",
        "--",
        sys.executable,
        "-c",
        "import time, sys; time.sleep(0.7); sys.exit(7)",
    )
    assert result.returncode == 7, result.stderr
    summary = json.loads(result.stdout)
    # design.md's watch keys (and those added beside them), unchanged in name and order.
    assert list(summary) == WATCH_KEYS
    assert list(summary["verdict"]) == VERDICT_KEYS
    assert summary["exit_code"] == 7
    assert summary["db"] == str(db.database_path(isolated_dlrig_home))
    assert set(summary["verdict"]) >= {"bottleneck", "evidence"}
    # A sleeping job computes nothing and saturates nothing: no bottleneck is invented.
    assert summary["verdict"]["bottleneck"] is None
    listed = json.loads(_dlrig(isolated_dlrig_home, "watch", "--list", "--json").stdout)
    assert [r["run_id"] for r in listed] == [summary["run_id"]]
    shown = json.loads(
        _dlrig(isolated_dlrig_home, "watch", "--show", str(summary["run_id"]), "--json").stdout
    )
    assert shown == summary


def test_json_stdout_holds_the_summary_alone_and_the_job_prints_to_stderr(
    isolated_dlrig_home: Path,
) -> None:
    # Seen on a lent H200: `watch --json` over a training script that prints each job's timing
    # gave a stdout that no JSON parser read (scripts/gpu-check).
    result = _dlrig(
        isolated_dlrig_home, "watch", "--interval", "0.2", "--json", "--",
        sys.executable, "-c", "print('step 1: 0.044 s')",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["exit_code"] == 0
    assert "step 1: 0.044 s" in result.stderr


def test_command_options_after_the_command_belong_to_it(isolated_dlrig_home: Path) -> None:
    # `--json` after the command's first word is the command's, not dlrig's.
    result = _dlrig(isolated_dlrig_home, "watch", "--interval", "0.2", "--", "echo", "--json")
    assert result.returncode == 0
    assert result.stdout.startswith("--json\n")
    assert "dlrig watch: echo --json" in result.stdout


def test_command_that_cannot_start_exits_127_with_one_line(isolated_dlrig_home: Path) -> None:
    result = _dlrig(isolated_dlrig_home, "watch", "--", "no-such-command-h6")
    assert result.returncode == 127
    assert result.stderr.startswith("dlrig: error: cannot start 'no-such-command-h6'")
    assert "Traceback" not in result.stderr
    assert json.loads(_dlrig(isolated_dlrig_home, "watch", "--list", "--json").stdout) == []


@pytest.mark.parametrize("ignoring_sigint", [False, True])
def test_sigint_terminates_the_child_flushes_the_db_and_prints_the_summary(
    isolated_dlrig_home: Path, ignoring_sigint: bool
) -> None:
    """Also when dlrig itself was started with SIGINT ignored: its handler is in place before
    the child is spawned, so the child execs with SIGINT at its default and gets the one dlrig
    forwards."""
    proc = _start(
        isolated_dlrig_home, "watch", "--interval", "0.2", "--json", "--", *SLEEPER,
        ignoring_sigint=ignoring_sigint,
    )  # fmt: skip
    try:
        _wait_for_samples(isolated_dlrig_home, 1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # The child died of the forwarded SIGINT (KeyboardInterrupt): 128 + 2, as a shell says.
    assert proc.returncode == 130, err
    summary = json.loads(out)
    assert summary["interrupted"] is True and summary["exit_code"] == 130
    assert summary["duration_s"] < 10  # not the child's 30 s
    stored = _rows(isolated_dlrig_home, "SELECT COUNT(*) FROM watch_samples")[0][0]
    assert stored == summary["samples"] >= 3  # every sample taken was flushed


@pytest.mark.slow
def test_a_crash_of_dlrig_keeps_what_was_committed_and_show_judges_it(
    isolated_dlrig_home: Path,
) -> None:
    proc = _start(isolated_dlrig_home, "watch", "--interval", "0.1", "--", *SLEEPER)
    try:
        _wait_for_samples(isolated_dlrig_home, 1)
        seen_s = time.monotonic()  # the job had run at least first_t_s by now
        first_t_s = _rows(isolated_dlrig_home, "SELECT MAX(t_s) FROM watch_samples")[0][0]
        time.sleep(3.0)
        killed_s = time.monotonic()
        os.killpg(proc.pid, signal.SIGKILL)  # dlrig and the job, without any clean-up
        proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    ((run_id,),) = _rows(isolated_dlrig_home, "SELECT run_id FROM watch_runs")
    last_t_s = _rows(isolated_dlrig_home, "SELECT MAX(t_s) FROM watch_samples")[0][0]
    # The job ran at least first_t_s + (killed - seen) s; what the kill lost is the 1 s batch
    # plus one interval, and a little scheduling on a busy machine. Measured from the first
    # committed sample, dlrig's own start-up (imports: seconds on a loaded machine) is not in
    # it; a recorder that committed nothing until the end would lose the whole 3 s.
    lost_s = first_t_s + (killed_s - seen_s) - last_t_s
    assert lost_s <= 1.0 + 0.1 + 0.9
    shown = _dlrig(isolated_dlrig_home, "watch", "--show", str(run_id))
    assert shown.returncode == 0
    assert "did not finish" in shown.stdout


def test_recorder_commits_within_a_second(tmp_path: Path) -> None:
    from dlrig.history.runs import RunRecorder, load_samples, start_run

    path = tmp_path / "h.sqlite3"
    conn = db.connect(path)  # applies the watch tables' migration, registered by the import
    run_id = start_run(conn, ["job"], 0.5)
    recorder = RunRecorder(conn, run_id)  # FLUSH_INTERVAL_S = 1.0
    sample = replayed_samples("gpu_throttling_for_heat", 1)[0]
    recorder.add(sample)
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT COUNT(*) FROM watch_samples").fetchone()[0] == 0  # batched
    time.sleep(1.0)
    recorder.add(sample)  # a second later: both are committed, seen by another connection
    assert reader.execute("SELECT COUNT(*) FROM watch_samples").fetchone()[0] == 2
    assert load_samples(conn, run_id) == [sample, sample]  # the JSON form round-trips


def _unwritable_home(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        home = tmp_path / "readonly"
        home.mkdir()
        home.chmod(0o555)
        return home
    # root ignores permission bits; sysfs refuses new folders even to root.
    if os.access("/sys", os.W_OK) and not os.path.isdir("/sys/kernel"):
        pytest.skip("no folder this root user cannot write to")
    return Path("/sys/dlrig-h6-readonly-home")


def test_read_only_database_folder_warns_and_the_job_still_runs(tmp_path: Path) -> None:
    home = _unwritable_home(tmp_path)
    marker = tmp_path / "ran"
    result = _dlrig(
        home,
        "watch",
        "--interval",
        "0.2",
        "--",
        sys.executable,
        "-c",
        f"open({str(marker)!r}, 'w').write('ok')",
    )
    assert result.returncode == 0
    assert marker.read_text() == "ok"
    assert "dlrig: warning: " in result.stderr
    assert "the run is not recorded" in result.stderr
    assert "Traceback" not in result.stderr
    assert "dlrig watch:" in result.stdout


def test_full_database_stops_recording_and_the_job_runs_on(tmp_path: Path) -> None:
    from dlrig.history.runs import RunRecorder, load_samples, start_run

    conn = db.connect(tmp_path / "full.sqlite3")
    run_id = start_run(conn, ["job"], 0.1)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full" path
    recorder = RunRecorder(conn, run_id, flush_interval_s=0.0)
    warnings: list[str] = []
    result = run_watch(
        [sys.executable, "-c", "import time; time.sleep(1.0)"],
        gpus=NvmlGpuSampler(replay_nvml("laptop_without_gpu")),
        interval_s=0.1,
        sinks=[recorder],
        on_warning=warnings.append,
    )
    # ~10 samples of ~1 KB each: more than the free space of the pages the database has.
    assert result.exit_code == 0 and result.sample_count >= 5
    assert recorder.failed
    assert len(warnings) == 1 and "database or disk is full" in warnings[0]
    assert len(load_samples(conn, run_id)) < result.sample_count
    with pytest.raises(HistoryError):
        recorder.flush_interval_s = 0.0
        recorder.add(result.samples[0])
        recorder.flush()


def test_a_saved_probe_gives_the_disks_their_measured_limits(isolated_dlrig_home: Path) -> None:
    import socket

    from dlrig.history.probes import save_probe
    from dlrig.probe.report import ProbeReport
    from dlrig.watch.host import PsutilHostSampler

    disks = [d.name for d in PsutilHostSampler().sample().disks]
    if not disks:
        pytest.skip("no block devices visible")
    conn = db.connect(db.database_path(isolated_dlrig_home))
    probe = ProbeReport(
        host=socket.gethostname(),
        disks=({"disk": {"name": disks[0]}, "speed": {"cold_mb_s": 123.0}},),
    )
    save_probe(conn, probe)
    result = _dlrig(
        isolated_dlrig_home, "watch", "--interval", "0.2", "--json", "--", "sleep", "0.5"
    )
    run_id = json.loads(result.stdout)["run_id"]
    stored = [
        json.loads(data)
        for (data,) in _rows(
            isolated_dlrig_home, f"SELECT data FROM watch_samples WHERE run_id = {run_id}"
        )
    ]
    limits = {d["name"]: d["limit_read_mb_s"] for d in stored[-1]["host"]["disks"]}
    assert limits[disks[0]] == 123.0


def test_ctrl_c_at_a_terminal_reaches_the_job_once(isolated_dlrig_home: Path) -> None:
    # A real terminal: dlrig runs in a pseudo-terminal as its foreground process group and the
    # test types Ctrl-C (0x03), which the line discipline sends to the whole group. dlrig must
    # not forward a second SIGINT to the job, which is in that group already.
    import pty

    job = str(Path(__file__).parent / "jobs" / "count_sigint_job.py")
    pid, fd = pty.fork()
    if pid == 0:  # the child: becomes dlrig, with the pty as its controlling terminal
        os.environ["DLRIG_HOME"] = str(isolated_dlrig_home)
        os.execv(
            sys.executable,
            [
                sys.executable,
                "-m",
                "dlrig",
                "watch",
                "--interval",
                "0.2",
                "--json",
                "--",
                sys.executable,
                job,
            ],
        )
    output = b""
    deadline = time.monotonic() + 20
    try:
        while b"ready" not in output and time.monotonic() < deadline:
            output += os.read(fd, 4096)
        time.sleep(0.3)
        os.write(fd, b"\x03")
        while time.monotonic() < deadline:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the terminal closed, dlrig exited
                break
            if not chunk:
                break
            output += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 11, output.decode(errors="replace")


def test_show_of_an_unknown_run_is_one_line_exit_2(isolated_dlrig_home: Path) -> None:
    result = _dlrig(isolated_dlrig_home, "watch", "--show", "42")
    assert result.returncode == 2
    assert result.stderr.startswith("dlrig: error: no watched run 42")
    assert "hint: " in result.stderr and "Traceback" not in result.stderr


def _busy_four_gpu_box(busy: int) -> dict[str, object]:
    """The replayed 4x RTX 3090 box (fixture: built from a published nvidia-smi dump) with
    `busy` of its GPUs computing 97% of the time, as a data-parallel job keeps them."""
    from watch_helpers import fixture

    scenario = fixture("four_gpu_box")
    for gpu in scenario["gpus"][:busy]:  # type: ignore[index]
        gpu["nvmlDeviceGetUtilizationRates"] = {"gpu": 97, "memory": 40}
    return scenario


@pytest.mark.parametrize(
    ("busy", "disabled", "warned"), [(4, True, True), (1, True, False), (4, False, False)]
)
def test_a_multi_gpu_job_under_nccl_p2p_disable_is_warned(
    busy: int, disabled: bool, warned: bool
) -> None:
    """NCCL_P2P_DISABLE in the job's environment sends its collectives through host memory,
    NVLink included: a job that kept more than one GPU busy under it gets the warning; one GPU
    (nothing to exchange) or the variable unset does not."""
    from dlrig.watch.detectors.series import gpus_busy
    from dlrig.watch.runner import NCCL_P2P_DISABLED_WARNING

    scenario = _busy_four_gpu_box(busy)
    assert gpus_busy(replayed_samples(scenario, 3)) == busy
    warnings: list[str] = []
    result = run_watch(
        [sys.executable, "-c", "import time; time.sleep(0.3)"],
        gpus=NvmlGpuSampler(replay_nvml(scenario)),
        interval_s=0.1,
        on_warning=warnings.append,
        nccl_p2p_disabled=disabled,
    )
    assert (NCCL_P2P_DISABLED_WARNING in result.warnings) is warned
    assert (NCCL_P2P_DISABLED_WARNING in warnings) is warned
