"""`watch --html` and `watch --show N --html` through the real CLI: the live run and its replay
draw the same series (the replay loads the stored samples beside the stored summary)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def dlrig(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DLRIG_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False, env=env
    )


def _lines(page: Path) -> int:
    return len(re.findall(r'<polyline class="line', page.read_text()))


def test_watch_and_its_replay_write_pages_with_the_same_series(tmp_path: Path) -> None:
    live, replay = tmp_path / "run.html", tmp_path / "run1.html"
    job = "import time; time.sleep(1)"
    out = dlrig(
        tmp_path, "watch", "--interval", "0.2", "--html", str(live), "--", sys.executable, "-c", job
    )
    assert out.returncode == 0, out.stderr
    assert f"page written: {live}" in out.stderr
    assert "time.sleep(1)" in live.read_text()  # the watched command, as text
    assert _lines(live) >= 2  # host CPU busy and I/O wait at least
    shown = dlrig(tmp_path, "watch", "--show", "1", "--html", str(replay))
    assert shown.returncode == 0, shown.stderr
    assert _lines(replay) == _lines(live)


def test_watch_html_into_a_folder_is_one_line_exit_2(tmp_path: Path) -> None:
    dlrig(tmp_path, "watch", "--interval", "0.2", "--", sys.executable, "-c", "pass")
    out = dlrig(tmp_path, "watch", "--show", "1", "--html", str(tmp_path))
    assert out.returncode == 2 and "is a folder" in out.stderr and "Traceback" not in out.stderr
