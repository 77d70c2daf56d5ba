"""Saved health readings in the history database: one row per `dlrig health --save`, its
`HealthReport` as JSON; and the baseline a new reading is judged against: the newest of this
host's saved health readings and saved probes (a probe carries a health summary).

Importing this module registers the table as migration `0003_health_readings`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pydantic import ValidationError as SchemaError

from dlrig.errors import HistoryError
from dlrig.health import Baseline, HealthReport, baseline_from_dict
from dlrig.history.db import history_error, register_migration

HEALTH_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS health_readings (
        reading_id INTEGER PRIMARY KEY AUTOINCREMENT,
        host TEXT NOT NULL,
        taken_at TEXT NOT NULL,
        healthy INTEGER NOT NULL,
        data TEXT NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS health_by_host ON health_readings (host, reading_id)",
)

register_migration("0003_health_readings", HEALTH_SCHEMA)


def _path(conn: sqlite3.Connection) -> Path:
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else Path(":memory:")


def save_health(conn: sqlite3.Connection, report: HealthReport) -> int:
    """Store a judged reading; its new id."""
    try:
        with conn:
            cursor = conn.execute(
                "INSERT INTO health_readings (host, taken_at, healthy, data) VALUES (?, ?, ?, ?)",
                (report.host, report.taken_utc, int(report.healthy), report.model_dump_json()),
            )
    except sqlite3.Error as exc:
        raise history_error(_path(conn), exc) from exc
    return int(cursor.lastrowid or 0)


def latest_health(conn: sqlite3.Connection, host: str) -> HealthReport | None:
    """This host's newest saved health reading, None when there is none."""
    try:
        row = conn.execute(
            "SELECT reading_id, data FROM health_readings WHERE host = ? "
            "ORDER BY reading_id DESC LIMIT 1",
            (host,),
        ).fetchone()
    except sqlite3.Error as exc:
        raise history_error(_path(conn), exc) from exc
    if row is None:
        return None
    try:
        return HealthReport.model_validate_json(row[1])
    except SchemaError as exc:
        raise HistoryError(f"saved health reading {row[0]} is not a health report") from exc


def _snapshot_baseline(snapshot: dict[str, Any], source: str) -> Baseline | None:
    if not snapshot or not snapshot.get("taken_utc"):
        return None
    return baseline_from_dict({**snapshot, "source": source})


def health_baseline(conn: sqlite3.Connection, host: str) -> tuple[Baseline | None, int | None]:
    """The baseline for a new reading of `host` (the newer of its last saved health reading and
    its last saved probe's health summary), and the GPU count its last probe saw (None: no
    probe saved)."""
    candidates: list[Baseline] = []
    saved = latest_health(conn, host)
    if saved is not None:
        found = _snapshot_baseline(saved.snapshot, "health reading")
        if found is not None:
            candidates.append(found)
    probe = _latest_probe_document(conn, host)
    expected = None
    if probe is not None:
        expected = len(probe.get("gpus") or ())
        found = _snapshot_baseline((probe.get("health") or {}).get("snapshot") or {}, "probe")
        if found is not None:
            candidates.append(found)
    baseline = max(candidates, key=lambda b: b.taken_utc) if candidates else None
    return baseline, expected


def _latest_probe_document(conn: sqlite3.Connection, host: str) -> dict[str, Any] | None:
    """This host's newest saved probe as plain JSON (its GPUs and health summary are all a
    baseline needs; reading it typed would load the probe's and the model's modules)."""
    import json

    try:
        row = conn.execute(
            "SELECT data FROM probes WHERE host = ? ORDER BY probe_id DESC LIMIT 1", (host,)
        ).fetchone()
    except sqlite3.Error as exc:
        raise history_error(_path(conn), exc) from exc
    if row is None:
        return None
    try:
        data = json.loads(row[0])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
