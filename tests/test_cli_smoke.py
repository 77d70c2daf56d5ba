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


def test_usage_hint_names_the_command_not_how_python_started_it() -> None:
    """Started as `python -m dlrig`, a usage error points at `dlrig estimate -h`, not at
    `dlrig -m dlrig estimate -h`."""
    result = run_dlrig("estimate", "examples/builds/budget-1gpu-3090.yaml")
    assert result.returncode == 2
    assert "hint: dlrig estimate -h shows the usage" in result.stderr


def test_version_prints_the_package_version() -> None:
    from dlrig import __version__

    result = run_dlrig("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"dlrig {__version__}"


# design.md's command table, less `compare` (not built yet: issue tracker).
DESIGN_COMMANDS = ("plan", "check", "estimate", "upgrade", "probe", "watch", "catalog",
                   "workloads", "schema")  # fmt: skip


def test_every_command_of_the_design_is_registered_and_has_help() -> None:
    """Asked of the registered commands (not of help text that lists itself): each one of
    design.md's table exists, and `dlrig CMD -h` shows that command's own usage."""
    import typer
    from typer.testing import CliRunner

    from dlrig.cli import app

    registered = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert set(DESIGN_COMMANDS) <= registered
    for command in DESIGN_COMMANDS:
        result = CliRunner().invoke(app, [command, "-h"])
        assert result.exit_code == 0, (command, result.output)
        usage = next(line for line in result.output.splitlines() if "Usage:" in line)
        assert f" {command} " in usage, (command, usage)


def test_a_usage_error_is_one_line_exit_2() -> None:
    for args in (("bogus",), ("schema", "bogus"), ("check",), ("catalog", "gpus", "--bogus")):
        result = run_dlrig(*args)
        assert result.returncode == 2, args
        lines = result.stderr.rstrip("\n").split("\n")
        assert lines[0].startswith("dlrig: error: "), result.stderr
        assert len(lines) == 2 and lines[1].startswith("  hint: dlrig "), result.stderr
