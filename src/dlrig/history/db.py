"""The one history database: SQLite at `<home>/dlrig.sqlite3`, in WAL mode, with migrations.

- `database_path(home)`: the file under `home` (the CLI passes $DLRIG_HOME when set; core code
  never reads the environment), else under `platformdirs.user_data_path("dlrig")`.
- `connect(path, create=True, timeout_s=5.0)` opens it: WAL journal (readers never block the
  writer, a crash loses at most the last transaction), a busy timeout, foreign keys on, and every
  registered migration applied once. A corrupt file, a locked database or an unwritable folder
  raises HistoryError with what to do; dlrig never deletes, truncates or recreates an existing
  file, so earlier rows are never lost to a recovery attempt.
- Migrations: `MIGRATIONS` is an ordered list of `Migration(name, statements)`; `connect` applies
  the ones not yet recorded in the `schema_migrations` table, all in one IMMEDIATE transaction
  (retried while another process holds the lock), and sets `user_version` to their count. Another
  module adds its tables with `register_migration(name, statements)` at import time (names are
  unique and never renamed; `history/runs.py` keeps the watch tables this way or creates them
  idempotently itself). The probe's own table is migration `0001_probes` (see probes.py).
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from dlrig.errors import HistoryError

DATABASE_NAME = "dlrig.sqlite3"
_SQLITE_HEADER = b"SQLite format 3\x00"

T = TypeVar("T")


@dataclass(frozen=True)
class Migration:
    """One step of the schema: a unique name and the statements that take the schema there."""

    name: str
    statements: tuple[str, ...]


MIGRATIONS: list[Migration] = [
    Migration(
        "0001_probes",
        (
            """
            CREATE TABLE IF NOT EXISTS probes (
                probe_id INTEGER PRIMARY KEY AUTOINCREMENT,
                host TEXT NOT NULL,
                taken_at TEXT NOT NULL,
                quick INTEGER NOT NULL,
                data TEXT NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS probes_by_host ON probes (host, probe_id)",
        ),
    ),
]


def register_migration(name: str, statements: tuple[str, ...]) -> None:
    """Append a migration (idempotent for the same name and statements)."""
    for existing in MIGRATIONS:
        if existing.name == name:
            if existing.statements != statements:
                raise HistoryError(f"migration {name!r} registered twice with different statements")
            return
    MIGRATIONS.append(Migration(name, statements))


def default_home() -> Path:
    """The user's data directory for dlrig (platformdirs)."""
    import platformdirs

    return platformdirs.user_data_path("dlrig")


def database_path(home: Path | None = None) -> Path:
    """The database file under home (the CLI passes $DLRIG_HOME), else the default home."""
    return (home if home is not None else default_home()) / DATABASE_NAME


def _fail(path: Path, exc: sqlite3.Error) -> HistoryError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return HistoryError(
            f"history database {path} is locked by another dlrig (or sqlite) process",
            hint="wait for it to finish and retry; nothing was written",
        )
    if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
        return HistoryError(
            f"history database {path} is corrupt ({text})",
            hint="dlrig leaves it untouched: move it aside (or recover it with `sqlite3 .recover`) "
            "and dlrig starts a new one",
        )
    return HistoryError(
        f"history database {path}: {text}",
        hint="check that the folder is writable, or point DLRIG_HOME elsewhere",
    )


def _check_header(path: Path) -> None:
    try:
        with path.open("rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise HistoryError(f"cannot read history database {path}: {exc}") from exc
    if head and head != _SQLITE_HEADER:
        raise HistoryError(
            f"history database {path} is corrupt (not an SQLite file)",
            hint="dlrig leaves it untouched: move it aside and dlrig starts a new one",
        )


# A first-time migration racing another dlrig (eight watches started together on a fresh
# home) waits for the write lock with the busy timeout; these retries cover the cases where
# SQLite reports busy at once instead (a lock upgrade it cannot wait for).
_BUSY_ATTEMPTS = 8
_BUSY_BACKOFF_S = 0.05


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _applied(conn: sqlite3.Connection) -> set[str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
    )
    return {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}


def _migrate_once(conn: sqlite3.Connection) -> tuple[str, ...]:
    """Every pending migration in one IMMEDIATE transaction: the write lock is taken before the
    applied set is read, so two processes never both apply (nor both record) the same one."""
    known = [m.name for m in MIGRATIONS]
    tables = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_migrations'"
    ).fetchone()[0]
    if tables and set(known) <= _applied(conn):
        return ()
    conn.execute("BEGIN IMMEDIATE")
    try:
        done = _applied(conn)
        applied = []
        for migration in list(MIGRATIONS):
            if migration.name in done:
                continue
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                (migration.name, dt.datetime.now(dt.UTC).isoformat(timespec="seconds")),
            )
            applied.append(migration.name)
        # user_version: how many migrations the file has, readable by any SQLite tool.
        conn.execute(f"PRAGMA user_version = {len(done) + len(applied)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return tuple(applied)


def _retry_busy(conn: sqlite3.Connection, step: Callable[[sqlite3.Connection], T]) -> T:
    for attempt in range(_BUSY_ATTEMPTS):
        try:
            return step(conn)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc) or attempt == _BUSY_ATTEMPTS - 1:
                raise
            time.sleep(_BUSY_BACKOFF_S * (attempt + 1))
    raise AssertionError("unreachable: the last attempt returns or raises")


def migrate(conn: sqlite3.Connection) -> tuple[str, ...]:
    """Apply the migrations not yet recorded (one transaction, retried while another process
    holds the lock); the names applied now."""
    saved = conn.isolation_level
    conn.isolation_level = None  # explicit BEGIN/COMMIT: DDL and DML in the same transaction
    try:
        return _retry_busy(conn, _migrate_once)
    finally:
        conn.isolation_level = saved


def connect(path: Path, *, create: bool = True, timeout_s: float = 5.0) -> sqlite3.Connection:
    """Open (with create: or start) the history database; HistoryError when it cannot be used."""
    if path.exists():
        if path.is_dir():
            raise HistoryError(f"history database {path} is a directory")
        _check_header(path)
    elif not create:
        raise HistoryError(
            f"no history yet at {path}", hint="run `dlrig probe --save` to start one"
        )
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(
                f"cannot create the history folder {path.parent}: {exc}",
                hint="point DLRIG_HOME at a writable folder",
            ) from exc
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(path, timeout=timeout_s)
        conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
        _retry_busy(conn, lambda c: c.execute("PRAGMA journal_mode = WAL"))
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise _fail(path, exc) from exc
    return conn


def history_error(path: Path, exc: sqlite3.Error) -> HistoryError:
    """The HistoryError for a failed statement on the database at path (locked, corrupt, ...)."""
    return _fail(path, exc)


def check_writable(path: Path) -> None:
    """Raise HistoryError now if a probe or run could not be saved at path later: the file is
    corrupt (SQLite's quick_check) or cannot take a write (read-only file or folder, locked).
    Writes nothing; callers check before a long measurement rather than lose it after."""
    conn = connect(path)
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise HistoryError(
                f"history database {path} is corrupt ({problems[0]})",
                hint="dlrig leaves it untouched: move it aside (or recover it with `sqlite3 "
                ".recover`) and dlrig starts a new one",
            )
        conn.isolation_level = None
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        raise _fail(path, exc) from exc
    finally:
        conn.close()
