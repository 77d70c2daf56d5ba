"""The CLI starts and maps bad input to exit code 2 with one line on stderr."""

from __future__ import annotations

import subprocess
import sys


def run_dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


def test_help_lists_commands() -> None:
    result = run_dlrig("--help")
    assert result.returncode == 0
    assert "catalog" in result.stdout


def test_missing_catalog_file_is_one_line_exit_2() -> None:
    result = run_dlrig("catalog", "gpus", "--catalog", "/no/such/file.yaml")
    assert result.returncode == 2
    assert result.stderr.startswith("dlrig: error: /no/such/file.yaml: no such file")
    assert "Traceback" not in result.stderr


def test_version_prints_the_package_version() -> None:
    from dlrig import __version__

    result = run_dlrig("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"dlrig {__version__}"


def test_help_lists_every_command_of_the_design() -> None:
    """Every command of the table in design.md is listed."""
    out = run_dlrig("--help").stdout
    for command in (
        "plan",
        "check",
        "estimate",
        "upgrade",
        "probe",
        "watch",
        "catalog",
        "workloads",
    ):
        assert command in out, command
