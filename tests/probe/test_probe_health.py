"""The probe carries a health summary (issue 37), saved with it, shown by `check probe:latest`,
and the baseline the next `dlrig health` judges growth from."""

from __future__ import annotations

import functools
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlrig.cli import app
from dlrig.hardware import nvml
from dlrig.probe import run as run_mod
from support.nvml_fakes import replay_nvml

MIB = 2**20
SMALL = {"disk_bytes": 16 * MIB, "memory_array_bytes": 64 * MIB, "loader_window_s": 0.2}


@pytest.fixture
def probe_of(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Run `dlrig probe --quick` (small sizes) on a replayed NVML scenario."""
    monkeypatch.setattr(run_mod, "ProbeOptions", functools.partial(run_mod.ProbeOptions, **SMALL))

    def run(scenario: str, *extra: str) -> dict[str, object]:
        monkeypatch.setattr(nvml, "open_nvml", lambda: replay_nvml(scenario))
        args = ["probe", "--quick", "--no-torch", "--path", str(tmp_path), "--json", *extra]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        return json.loads(result.output)  # type: ignore[no-any-return]

    return run


def test_a_lost_gpu_is_in_the_probes_health(probe_of) -> None:  # type: ignore[no-untyped-def]
    data = probe_of("lost_gpu")
    health = data["health"]
    assert health["healthy"] is False
    (lost,) = [f for f in health["findings"] if f["name"] == "gpu_missing"]
    assert lost["gpu"] == 1 and lost["severity"] == "error"
    assert health["snapshot"]["gpu_count"] == 2


def test_saved_probe_health_in_check_and_as_the_baseline(probe_of) -> None:  # type: ignore[no-untyped-def]
    saved = probe_of("four_gpu_box", "--save")
    assert saved["health"]["healthy"] is True
    runner = CliRunner()
    checked = runner.invoke(app, ["check", "probe:latest", "--json"])
    assert checked.exit_code in (0, 1), checked.output
    assert json.loads(checked.output)["health"]["verdict"] == saved["health"]["verdict"]
    sheet = runner.invoke(app, ["check", "probe:latest"])
    assert f"health: {saved['health']['verdict']}" in sheet.output
    # The next `dlrig health` of this host judges growth since the probe.
    from dlrig.commands.health import _baseline
    from dlrig.commands.inputs import history_path

    baseline, expected = _baseline(history_path(), socket.gethostname())
    assert baseline is not None and baseline.source == "probe" and expected == 4
