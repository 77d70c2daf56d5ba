"""The history database: WAL, migrations, and the failures that must never lose rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from dlrig.errors import HistoryError
from dlrig.history import db
from dlrig.history.probes import latest_build_document, latest_probe, list_probes, save_probe
from dlrig.probe.report import ProbeReport


def _probe(host: str = "box", n: int = 1) -> ProbeReport:
    return ProbeReport(host=host, time_utc=f"2026-01-0{n}T00:00:00", quick=True,
                       build={"name": f"{host} #{n}", "memory": {"size_gb": 64}})  # fmt: skip


def test_path_is_under_the_given_home(tmp_path: Path) -> None:
    assert db.database_path(tmp_path) == tmp_path / "dlrig.sqlite3"
    assert db.database_path(None).name == "dlrig.sqlite3"  # platformdirs' user data dir


def test_new_database_is_wal_with_migrations_applied_once(tmp_path: Path) -> None:
    path = tmp_path / "home" / "dlrig.sqlite3"
    conn = db.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
    # 0001 is the history's own; importing dlrig.history.runs (as the watch tests do) adds 0002.
    assert names[0] == "0001_probes" and names == [m.name for m in db.MIGRATIONS]
    conn.close()
    again = db.connect(path)
    assert db.migrate(again) == ()  # nothing left to apply
    again.close()


def test_registered_migration_is_applied_to_an_existing_database(tmp_path: Path) -> None:
    path = tmp_path / "dlrig.sqlite3"
    db.connect(path).close()
    statements = ("CREATE TABLE IF NOT EXISTS test_extra (x INTEGER)",)
    db.register_migration("9999_test_extra", statements)
    try:
        db.register_migration("9999_test_extra", statements)  # idempotent
        with pytest.raises(HistoryError, match="twice"):
            db.register_migration("9999_test_extra", ("CREATE TABLE other (y)",))
        conn = db.connect(path)
        conn.execute("INSERT INTO test_extra VALUES (1)")
        conn.close()
    finally:
        db.MIGRATIONS[:] = [m for m in db.MIGRATIONS if m.name != "9999_test_extra"]


def test_save_list_latest_and_probe_latest(tmp_path: Path) -> None:
    path = tmp_path / "dlrig.sqlite3"
    conn = db.connect(path)
    first = save_probe(conn, _probe("box", 1))
    second = save_probe(conn, _probe("box", 2))
    save_probe(conn, _probe("other", 3))
    assert [r.probe_id for r in list_probes(conn, "box")] == [second, first]
    latest = latest_probe(conn, "box")
    assert latest is not None and latest.report == _probe("box", 2)
    conn.close()
    assert latest_build_document(path)["name"] == "other #3"
    assert latest_build_document(path, host="box")["name"] == "box #2"


def test_probe_latest_without_saved_probes_says_how_to_save(tmp_path: Path) -> None:
    path = tmp_path / "dlrig.sqlite3"
    db.connect(path).close()
    with pytest.raises(HistoryError) as info:
        latest_build_document(path)
    assert info.value.hint == "run `dlrig probe --save` first"


def test_missing_database_when_not_creating(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no history yet"):
        db.connect(tmp_path / "dlrig.sqlite3", create=False)
    assert not (tmp_path / "dlrig.sqlite3").exists()


def test_a_file_that_is_not_sqlite_is_corrupt_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "dlrig.sqlite3"
    garbage = b"this is not a database\n" * 100
    path.write_bytes(garbage)
    with pytest.raises(HistoryError, match="corrupt") as info:
        db.connect(path)
    assert info.value.hint is not None and "untouched" in info.value.hint
    assert path.read_bytes() == garbage


def test_a_damaged_sqlite_file_is_corrupt_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "dlrig.sqlite3"
    conn = db.connect(path)
    for _ in range(200):
        save_probe(conn, _probe("box", 1).model_copy(update={"notes": ("x" * 2000,)}))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(path.read_bytes())
    # Keep the 100-byte header, wreck the schema page and what follows.
    data[100:8192] = b"\xff" * (8192 - 100)
    path.write_bytes(bytes(data))
    with pytest.raises(HistoryError, match=r"corrupt|malformed"):
        conn = db.connect(path)
        list_probes(conn)
    assert path.read_bytes() == bytes(data)


def test_a_locked_database_is_a_clear_error_and_earlier_rows_survive(tmp_path: Path) -> None:
    path = tmp_path / "dlrig.sqlite3"
    conn = db.connect(path)
    save_probe(conn, _probe("box", 1))
    conn.close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        writer = db.connect(path, timeout_s=0.2)
        with pytest.raises(HistoryError, match="locked") as info:
            save_probe(writer, _probe("box", 2))
        assert info.value.hint is not None and "retry" in info.value.hint
        writer.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    conn = db.connect(path)
    assert [r.report.time_utc for r in list_probes(conn)] == ["2026-01-01T00:00:00"]
    conn.close()


def test_a_stored_probe_that_is_not_a_report_is_a_history_error_naming_the_field(
    tmp_path: Path,
) -> None:
    conn = db.connect(tmp_path / "dlrig.sqlite3")
    conn.execute(
        "INSERT INTO probes (host, taken_at, quick, data) VALUES ('box', '', 0, ?)",
        ('{"host": "box", "quick": "sometimes"}',),
    )
    conn.commit()
    with pytest.raises(HistoryError, match=r"saved probe 1 is not a probe report: quick: "):
        list_probes(conn)
    conn.close()


def test_a_directory_in_the_way_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "dlrig.sqlite3").mkdir()
    with pytest.raises(HistoryError, match="is a directory"):
        db.connect(tmp_path / "dlrig.sqlite3")


def test_cli_reports_a_corrupt_history_in_one_line(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "dlrig.sqlite3").write_bytes(b"garbage" * 10)
    env = {**os.environ, "DLRIG_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "dlrig", "probe", "--history"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    first = done.stderr.splitlines()[0]
    assert first.startswith("dlrig: error: history database") and "corrupt" in first
    assert "Traceback" not in done.stderr


def test_user_version_counts_the_applied_migrations(tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "dlrig.sqlite3")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(db.MIGRATIONS)
    conn.close()


@pytest.mark.slow
def test_eight_first_time_watches_on_a_fresh_home_record_eight_runs(tmp_path: Path) -> None:
    # Issue 12: two first-time runs raced on the migration and one in five was lost with a
    # message that called the database corrupt (six at once: three lost).
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    env = {**os.environ, "DLRIG_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dlrig",
                "watch",
                "--interval",
                "0.1",
                "--json",
                "--",
                sys.executable,
                "-c",
                "pass",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        for _ in range(8)
    ]
    results = [proc.communicate(timeout=120) for proc in procs]
    errors = [err for proc, (_, err) in zip(procs, results, strict=True) if proc.returncode != 0]
    assert errors == []
    with sqlite3.connect(home / db.DATABASE_NAME) as conn:
        assert conn.execute("SELECT COUNT(*) FROM watch_runs").fetchone()[0] == 8


def _connect_after(barrier: Any, path: str, failures: Any) -> None:
    import dlrig.history.runs  # noqa: F401  (registers the watch tables, as `watch` does)

    barrier.wait()
    try:
        db.connect(Path(path)).close()
    except HistoryError as exc:
        failures.put(str(exc))


def test_eight_processes_migrating_a_fresh_database_at_once_all_succeed(tmp_path: Path) -> None:
    # The race itself, without start-up stagger: eight processes released together into connect.
    import multiprocessing as mp

    context = mp.get_context("fork")
    barrier = context.Barrier(8)
    failures = context.Queue()
    path = tmp_path / "dlrig.sqlite3"
    procs = [
        context.Process(target=_connect_after, args=(barrier, str(path), failures))
        for _ in range(8)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=60)
    assert [proc.exitcode for proc in procs] == [0] * 8
    assert failures.empty(), failures.get()
    with sqlite3.connect(path) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
    assert sorted(names) == sorted(set(names)) and "0002_watch_runs" in names
