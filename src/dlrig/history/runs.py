"""Watched runs in the history database: one row per run, one row per sample.

Importing this module registers the watch tables as migration `0002_watch_runs` of
`dlrig.history.db`, which `db.connect` applies.

Samples are written in batches, one transaction a second (WAL mode makes each cheap), so a
crash of dlrig loses at most the last second and a Ctrl-C nothing (the batch is flushed when the
job exits). A database that stops taking writes (a full or read-only disk) raises HistoryError
once; the monitor then stops recording and the job runs on.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError as SchemaError

from dlrig.errors import HistoryError, ValidationError
from dlrig.history.db import register_migration
from dlrig.watch.samples import Sample, sample_from_dict, sample_to_dict
from dlrig.watch.summary import WatchSummary

# Samples are committed at least this often: what a crash can lose.
FLUSH_INTERVAL_S = 1.0

WATCH_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS watch_runs (
        run_id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at TEXT NOT NULL,
        command TEXT NOT NULL,
        interval_s REAL NOT NULL,
        ended_at TEXT,
        exit_code INTEGER,
        duration_s REAL,
        samples INTEGER,
        summary TEXT
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS watch_samples (
        run_id INTEGER NOT NULL REFERENCES watch_runs(run_id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        t_s REAL NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    )
    """,
)


register_migration("0002_watch_runs", WATCH_SCHEMA)


def _history_error(action: str, exc: sqlite3.Error) -> HistoryError:
    return HistoryError(
        f"history database: cannot {action}: {exc}",
        hint="free disk space or point DLRIG_HOME at a writable folder; the job is not affected",
    )


def start_run(conn: sqlite3.Connection, command: Sequence[str], interval_s: float) -> int:
    """A new run row; its id."""
    try:
        with conn:
            cursor = conn.execute(
                "INSERT INTO watch_runs (started_at, command, interval_s) VALUES (?, ?, ?)",
                (_now(), shlex.join(command), interval_s),
            )
    except sqlite3.Error as exc:
        raise _history_error("record the run", exc) from exc
    return int(cursor.lastrowid or 0)


def discard_run(conn: sqlite3.Connection, run_id: int) -> None:
    """Remove a run that never started (its command could not be spawned)."""
    try:
        with conn:
            conn.execute("DELETE FROM watch_samples WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM watch_runs WHERE run_id = ?", (run_id,))
    except sqlite3.Error as exc:
        raise _history_error("remove the run", exc) from exc


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class RunRecorder:
    """A sample sink writing a run's samples in batches of at most a second."""

    def __init__(
        self, conn: sqlite3.Connection, run_id: int, *, flush_interval_s: float = FLUSH_INTERVAL_S
    ) -> None:
        self.conn = conn
        self.run_id = run_id
        self.flush_interval_s = flush_interval_s
        self.written = 0
        self.failed = False
        self._pending: list[tuple[int, int, float, str]] = []
        self._seq = 0
        self._flushed_at = time.monotonic()

    def add(self, sample: Sample) -> None:
        """Queue a sample; commit the queue when a second has passed since the last commit."""
        self._pending.append(
            (self.run_id, self._seq, sample.t_s, json.dumps(sample_to_dict(sample)))
        )
        self._seq += 1
        if time.monotonic() - self._flushed_at >= self.flush_interval_s:
            self.flush()

    def flush(self) -> None:
        """Commit the queued samples (HistoryError if the database refuses them)."""
        self._flushed_at = time.monotonic()
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        try:
            with self.conn:
                self.conn.executemany(
                    "INSERT INTO watch_samples (run_id, seq, t_s, data) VALUES (?, ?, ?, ?)", rows
                )
        except sqlite3.Error as exc:
            self.failed = True
            raise _history_error("write samples", exc) from exc
        self.written += len(rows)

    def close(self) -> None:
        """Commit what is left."""
        self.flush()


def finish_run(conn: sqlite3.Connection, run_id: int, summary: WatchSummary) -> None:
    """Store the run's summary (what `--show` replays)."""
    try:
        with conn:
            conn.execute(
                "UPDATE watch_runs SET ended_at = ?, exit_code = ?, duration_s = ?, samples = ?, "
                "summary = ? WHERE run_id = ?",
                (
                    _now(),
                    summary.exit_code,
                    summary.duration_s,
                    summary.samples,
                    summary.model_dump_json(),
                    run_id,
                ),
            )
    except sqlite3.Error as exc:
        raise _history_error("store the summary", exc) from exc


def list_runs(conn: sqlite3.Connection, limit: int = 50) -> list[dict[str, Any]]:
    """The latest runs, newest first: id, start, command, exit code, duration, samples,
    bottleneck (None for a run still going or one that crashed)."""
    rows = conn.execute(
        "SELECT r.run_id, r.started_at, r.command, r.exit_code, r.duration_s, r.summary, "
        "(SELECT COUNT(*) FROM watch_samples s WHERE s.run_id = r.run_id) "
        "FROM watch_runs r ORDER BY r.run_id DESC LIMIT ?",
        (limit,),
    ).fetchall()
    runs = []
    for run_id, started, command, exit_code, duration_s, summary, count in rows:
        stored = _summary(run_id, summary) if summary else None
        runs.append(
            {
                "run_id": run_id,
                "started_at": started,
                "command": command,
                "exit_code": exit_code,
                "duration_s": duration_s,
                "samples": count,
                "bottleneck": None if stored is None else stored.verdict.bottleneck,
            }
        )
    return runs


def load_samples(conn: sqlite3.Connection, run_id: int) -> list[Sample]:
    """A run's samples in order."""
    rows = conn.execute(
        "SELECT data FROM watch_samples WHERE run_id = ? ORDER BY seq", (run_id,)
    ).fetchall()
    return [sample_from_dict(json.loads(data)) for (data,) in rows]


@dataclass(frozen=True)
class StoredRun:
    """A run as the history keeps it: its summary, or (for a run whose dlrig was stopped before
    writing one) its samples, for `dlrig.watch.summary.judge_stored_run` to judge."""

    run_id: int
    command: str
    interval_s: float
    summary: WatchSummary | None
    samples: tuple[Sample, ...]


def _summary(run_id: int, stored: str) -> WatchSummary:
    try:
        return WatchSummary.model_validate_json(stored)
    except SchemaError as exc:
        raise HistoryError(
            f"watched run {run_id}: its stored summary is not a watch summary: "
            f"{exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}"
        ) from exc


SQLITE_INTEGER_MIN = -(2**63)
SQLITE_INTEGER_MAX = 2**63 - 1


def load_run(conn: sqlite3.Connection, run_id: int, *, db: str | None) -> StoredRun:
    """A stored run: its summary when it finished, else its samples (ValidationError naming
    `db` when there is no such run)."""
    # SQLite's integers are 64-bit: a larger id (`--show 99999999999999999999999`) names no run.
    in_range = SQLITE_INTEGER_MIN <= run_id <= SQLITE_INTEGER_MAX
    row = (
        conn.execute(
            "SELECT command, interval_s, summary FROM watch_runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if in_range
        else None
    )
    if row is None:
        raise ValidationError(
            f"no watched run {run_id} in {db}", hint="dlrig watch --list shows the stored runs"
        )
    command, interval_s, summary = row
    if summary:
        return StoredRun(run_id, command, interval_s, _summary(run_id, summary), ())
    return StoredRun(run_id, command, interval_s, None, tuple(load_samples(conn, run_id)))
