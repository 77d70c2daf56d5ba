"""Saved probes in the history database: one row per probe, its JSON as `probe --json` prints it."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlrig.errors import HistoryError
from dlrig.history.db import history_error


@dataclass(frozen=True)
class ProbeRow:
    """A saved probe: its id, host, time, mode and the JSON document."""

    probe_id: int
    host: str
    taken_at: str
    quick: bool
    data: dict[str, Any]


def _path(conn: sqlite3.Connection) -> Path:
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else Path(":memory:")


def save_probe(conn: sqlite3.Connection, data: dict[str, Any]) -> int:
    """Store a probe's JSON document; its new id."""
    try:
        with conn:
            cursor = conn.execute(
                "INSERT INTO probes (host, taken_at, quick, data) VALUES (?, ?, ?, ?)",
                (
                    str(data.get("host", "")),
                    str(data.get("time_utc", "")),
                    int(bool(data.get("quick", False))),
                    json.dumps(data, ensure_ascii=False),
                ),
            )
    except sqlite3.Error as exc:
        raise history_error(_path(conn), exc) from exc
    return int(cursor.lastrowid or 0)


def _row(row: tuple[Any, ...]) -> ProbeRow:
    try:
        data = json.loads(row[4])
    except ValueError as exc:
        raise HistoryError(f"saved probe {row[0]} is not valid JSON: {exc}") from exc
    return ProbeRow(int(row[0]), str(row[1]), str(row[2]), bool(row[3]), data)


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
