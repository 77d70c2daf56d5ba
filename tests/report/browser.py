"""Headless Chromium for the page tests: load a page from a file, return its DOM after
rendering, the messages Chromium logged, and a screenshot."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (scripts/ensure-chromium installs it)"
)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run")


@dataclass(frozen=True)
class Rendered:
    dom: str
    log: str
    screenshot: Path


def render(page: Path, screenshot: Path, *, width: int = 1100, height: int = 1600) -> Rendered:
    """The page's DOM as Chromium built it, with console messages (logged to stderr at
    verbosity 0) and a PNG of the first `height` pixels."""
    assert CHROMIUM is not None
    url = page.resolve().as_uri()
    dump = subprocess.run(
        [CHROMIUM, *FLAGS, "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    shot = subprocess.run(
        [CHROMIUM, *FLAGS, f"--window-size={width},{height}", f"--screenshot={screenshot}", url],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return Rendered(dump.stdout, dump.stderr + shot.stderr, screenshot)


def console_errors(log: str) -> list[str]:
    """Lines in which the page (not the browser's own plumbing: D-Bus, GPU) reported an error:
    a script error, or a request the page's policy refused."""
    markers = ("CONSOLE", "Uncaught", "Refused to", "Failed to load resource")
    return [line for line in log.splitlines() if any(m in line for m in markers)]
