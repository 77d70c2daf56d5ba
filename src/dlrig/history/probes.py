"""Saved probes in the history database: one row per probe, its `ProbeReport` as JSON
(`model_dump_json`, the document `probe --json` prints), loaded back typed."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError as SchemaError

from dlrig.errors import HistoryError
from dlrig.history.db import connect, history_error
from dlrig.probe.report import ProbeReport


@dataclass(frozen=True)
class ProbeRow:
    """A saved probe: its id, host, time, mode and the report."""

    probe_id: int
    host: str
    taken_at: str
    quick: bool
    report: ProbeReport


def _path(conn: sqlite3.Connection) -> Path:
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else Path(":memory:")


def save_probe(conn: sqlite3.Connection, report: ProbeReport) -> int:
    """Store a probe's report; its new id."""
    try:
        with conn:
            cursor = conn.execute(
                "INSERT INTO probes (host, taken_at, quick, data) VALUES (?, ?, ?, ?)",
                (report.host, report.time_utc, int(report.quick), report.model_dump_json()),
            )
    except sqlite3.Error as exc:
        raise history_error(_path(conn), exc) from exc
    return int(cursor.lastrowid or 0)


def _row(row: tuple[Any, ...]) -> ProbeRow:
    try:
        report = ProbeReport.model_validate_json(row[4])
    except SchemaError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise HistoryError(
            f"saved probe {row[0]} is not a probe report: {where}: {first['msg']}"
        ) from exc
    return ProbeRow(int(row[0]), str(row[1]), str(row[2]), bool(row[3]), report)


def list_probes(
    conn: sqlite3.Connection, host: str | None = None, limit: int = 50
) -> tuple[ProbeRow, ...]:
    """Saved probes, newest first (of one host when given)."""
    query = "SELECT probe_id, host, taken_at, quick, data FROM probes"
    args: tuple[Any, ...] = ()
    if host is not None:
        query += " WHERE host = ?"
        args = (host,)
    query += " ORDER BY probe_id DESC LIMIT ?"
    try:
        rows = conn.execute(query, (*args, limit)).fetchall()
    except sqlite3.Error as exc:
        raise history_error(_path(conn), exc) from exc
    return tuple(_row(r) for r in rows)


def latest_probe(conn: sqlite3.Connection, host: str | None = None) -> ProbeRow | None:
    """The newest saved probe (of one host when given), None when there is none."""
    rows = list_probes(conn, host, limit=1)
    return rows[0] if rows else None


def latest_build_document(db: sqlite3.Connection | Path, host: str | None = None) -> dict[str, Any]:
    """The build file (design.md format) of the newest saved probe, of `host` when given: what
    `probe:latest` names.

    `db` is an open history connection or the database file's path. HistoryError when nothing
    was saved yet (the hint says how to save one)."""
    conn = db if isinstance(db, sqlite3.Connection) else connect(db, create=False)
    try:
        row = latest_probe(conn, host)
    finally:
        if not isinstance(db, sqlite3.Connection):
            conn.close()
    if row is None or not row.report.build:
        raise HistoryError(
            "no saved probe to use as probe:latest", hint="run `dlrig probe --save` first"
        )
    return dict(row.report.build)


def probe_build_document(db: Path, probe_id: int) -> dict[str, Any]:
    """The build file of saved probe `probe_id` (`probe:ID`, as `dlrig probe --history` lists
    them); HistoryError when there is no such probe."""
    conn = connect(db, create=False)
    try:
        try:
            found = (
                conn.execute(
                    "SELECT probe_id, host, taken_at, quick, data FROM probes WHERE probe_id = ?",
                    (probe_id,),
                ).fetchone()
                if -(2**63) <= probe_id < 2**63
                else None
            )
        except sqlite3.Error as exc:
            raise history_error(_path(conn), exc) from exc
    finally:
        conn.close()
    row = _row(found) if found is not None else None
    if row is None or not row.report.build:
        raise HistoryError(
            f"no saved probe {probe_id} in {db}", hint="dlrig probe --history lists them"
        )
    return dict(row.report.build)
