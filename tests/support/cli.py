"""Running the CLI in a test: in-process through `main` (as the `dlrig` script does) or as a
subprocess, with a guard that fails a run that hangs instead of waiting for ever."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dlrig.cli import main

# Far above any input-edge case (each answers in well under a second on an idle machine):
# only a run that would block for ever reaches it, also on a loaded CI machine.
HANG_S = 60


@contextlib.contextmanager
def hang_guard(seconds: int = HANG_S) -> Iterator[None]:
    """Fail (instead of waiting for ever) when the block takes longer than `seconds`."""

    def on_alarm(signum: int, frame: object) -> None:
        raise AssertionError(f"dlrig ran longer than {seconds} s: it hangs")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_in_process(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `dlrig ARGS` run through `main` in this process. stdout
    and stderr are real files, as a shell gives them (a watched job writes to their
    descriptors)."""
    argv, stdin_before = sys.argv, sys.stdin
    sys.argv = ["dlrig", *args]
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            with hang_guard(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            sys.argv, sys.stdin = argv, stdin_before
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def run_subprocess(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, stdin: bytes = b""
) -> subprocess.CompletedProcess[str]:
    """`python -m dlrig ARGS` as a separate process (its own stdout, locale and signals)."""
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args],
        input=stdin.decode(),
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=HANG_S,
        check=False,
    )


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    """Exit 2, one line `dlrig: error: ...` (and a hint line at most), no traceback, and each
    needle in the first line."""
    assert code == 2, err
    lines = err.rstrip("\n").split("\n")
    assert lines[0].startswith("dlrig: error: "), err
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("  hint: ")), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, err)
