"""`dlrig probe`: measure this machine and judge it against its datasheets.

Measuring lives in `measure_*.py` and `run.py` (and dlrig.hardware); everything else here is
pure: verdicts, the build document, comparisons. `latest_build_document(db)` resolves
`probe:latest` for check, estimate and upgrade.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from dlrig.errors import HistoryError

LATEST_REF = "probe:latest"
"""The BUILD argument that names the newest saved probe of this machine."""


def latest_build_document(db: sqlite3.Connection | Path, host: str | None = None) -> dict[str, Any]:
    """The build file (design.md format) of the newest saved probe, of `host` when given.

    `db` is an open history connection or the database file's path. HistoryError when nothing
    was saved yet (the hint says how to save one)."""
    from dlrig.history import db as history_db
    from dlrig.history.probes import latest_probe

    conn = db if isinstance(db, sqlite3.Connection) else history_db.connect(db, create=False)
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
