"""The probe end to end: the runner on a replayed NVML scenario, and `dlrig probe` itself,
with measurements shrunk (16 MiB disk file, 64 MiB arrays) so that each run takes seconds."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlrig.catalog import load_catalog
from dlrig.cli import app
from dlrig.hardware import nvml
from dlrig.probe import run as run_mod
from dlrig.probe.document import probe_build_document
from dlrig.probe.judge import judge
from dlrig.probe.report import probe_report
from support.nvml_fakes import replay_nvml

MIB = 2**20
SMALL = {"disk_bytes": 16 * MIB, "memory_array_bytes": 64 * MIB, "loader_window_s": 0.2}


@pytest.fixture
def small_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ProbeOptions the command builds gets the small sizes."""
    monkeypatch.setattr(run_mod, "ProbeOptions", functools.partial(run_mod.ProbeOptions, **SMALL))


def _replaying(monkeypatch: pytest.MonkeyPatch, scenario: str) -> None:
    """`dlrig probe` reads the recorded NVML scenario instead of this machine's NVML."""
    monkeypatch.setattr(nvml, "open_nvml", lambda: replay_nvml(scenario))


def test_runner_on_four_gpu_box_produces_design_json(tmp_path: Path) -> None:
    catalog = load_catalog()
    stages: list[str] = []
    options = run_mod.ProbeOptions(quick=True, paths=(tmp_path,), torch=False, **SMALL)  # type: ignore[arg-type]
    result = run_mod.run_probe(options, replay_nvml("four_gpu_box"), catalog, stages.append)
    assert stages[0] == "CPU, RAM, filesystems" and "GPUs (NVML)" in stages
    assert len(result.gpus) == 4 and len(result.topology) == 6
    assert result.disks[0].speed is not None
    doc = probe_build_document(result, catalog)
    data = probe_report(result, judge(result, catalog, doc["build"]), doc).model_dump(mode="json")
    assert {"cpu", "memory", "disks", "gpus", "links", "build"} <= set(data)  # design.md
    assert data["links"]["pcie"][0]["gen_current"] == 1
    assert data["build"]["gpus"] == [{"model": "GeForce RTX 3090", "count": 4}]
    json.dumps(data)  # plain JSON all the way down


@pytest.mark.slow
def test_probe_json_save_history_and_compare(
    tmp_path: Path, small_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    _replaying(monkeypatch, "gpu_throttling_for_heat")
    args = ["probe", "--quick", "--no-torch", "--path", str(tmp_path)]
    first = runner.invoke(app, [*args, "--json", "--save"])
    assert first.exit_code == 0, first.output
    data = json.loads(first.output)
    assert data["gpus"][0]["reading"]["temperature_c"] == 83
    assert any(v["rule"] == "COOL.1" for v in data["verdicts"])
    listed = runner.invoke(app, ["probe", "--history", "--json"])
    assert listed.exit_code == 0
    rows = json.loads(listed.output)
    assert [r["gpus"] for r in rows] == [1]
    compared = runner.invoke(app, [*args, "--compare", "--json"])
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.output)["before"] == rows[0]["id"]


# `probe --json` as it was before the probe's result became a typed ProbeReport (dlrig at
# 985c706): the top level exactly, in order; each part keeps at least these keys.
PROBE_KEYS = [
    "host", "time_utc", "quick", "elapsed_s", "stage_s", "cpu", "memory", "disks", "loader",
    "gpus", "links", "system", "verdicts", "notes", "build", "assumptions",
]  # fmt: skip
PART_KEYS = {
    "cpu": {"model", "sockets", "cores", "threads", "base_mhz", "max_mhz", "numa_nodes", "flags",
            "llc_bytes", "avx512", "amx"},
    "memory": {"total_bytes", "available_bytes", "bandwidth"},
    "disk": {"mountpoint", "device", "fstype", "total_bytes", "free_bytes", "disk", "speed",
             "error"},
    "speed": {"path", "file_bytes", "write_mb_s", "cold_direct_mb_s", "cold_buffered_mb_s",
              "warm_mb_s", "random_4k_iops", "direct_io", "elapsed_s", "method", "cold_mb_s"},
    "loader": {"points", "sample_bytes", "method", "ms_per_sample"},
    "gpu": {"index", "name", "catalog_name", "lost", "reading", "under_load", "torch"},
    "reading": {"memory_total_gb", "event_reason_names", "thermal_throttled", "power_capped",
                "pcie_gen_current", "pcie_width_current", "power_w", "temperature_c"},
    "links": {"pcie", "topology", "p2p_gb_s"},
    "pcie": {"gpu", "gen_current", "gen_max", "width_current", "width_max", "under_load",
             "nvlink_active"},
    "system": {"nvml", "cuda"},
    "verdict": {"rule", "severity", "message", "evidence", "fix"},
}  # fmt: skip


def test_probe_json_keys_are_unchanged(
    tmp_path: Path, small_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _replaying(monkeypatch, "four_gpu_box")
    args = ["probe", "--quick", "--no-torch", "--path", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    # Those keys first, in order; later keys extend them (issue 37: the health summary).
    assert list(data)[: len(PROBE_KEYS)] == PROBE_KEYS
    assert list(data)[len(PROBE_KEYS) :] == ["health"]
    parts = {
        "cpu": data["cpu"],
        "memory": data["memory"],
        "disk": data["disks"][0],
        "speed": data["disks"][0]["speed"],
        "loader": data["loader"],
        "gpu": data["gpus"][0],
        "reading": data["gpus"][0]["reading"],
        "links": data["links"],
        "pcie": data["links"]["pcie"][0],
        "system": data["system"],
        "verdict": data["verdicts"][0],
    }
    for part, keys in PART_KEYS.items():
        assert keys <= set(parts[part]), part


def test_probe_table_output_names_the_gpu_and_the_verdicts(
    tmp_path: Path, small_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _replaying(monkeypatch, "link_trained_at_x4")
    result = CliRunner().invoke(app, ["probe", "--quick", "--no-torch", "--path", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "NVIDIA GeForce RTX 3090" in result.output
    assert "PROBE.LINK" in result.output


def test_history_without_a_database_is_a_clean_error() -> None:
    result = CliRunner().invoke(app, ["probe", "--history"])
    assert result.exit_code != 0
    assert "no history yet" in str(result.exception)


def test_a_path_that_is_not_a_directory_is_bad_input(tmp_path: Path) -> None:
    from dlrig.errors import InputFileError

    options = run_mod.ProbeOptions(paths=(tmp_path / "missing",))
    with pytest.raises(InputFileError, match="not a directory"):
        run_mod.disk_targets((), options)


def test_distributed_flag_reads_local_rank_and_prints_rank_0s_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dlrig.probe import distributed

    seen: dict[str, object] = {}

    def fake(quick: bool, local_rank: int) -> dict[str, object] | None:
        seen.update(quick=quick, local_rank=local_rank)
        return {"ranks": [], "allreduce": [], "slow_ranks": []} if local_rank == 0 else None

    monkeypatch.setattr(distributed, "run_distributed", fake)
    monkeypatch.setenv("LOCAL_RANK", "1")
    quiet = CliRunner().invoke(app, ["probe", "--distributed", "--quick", "--json"])
    assert quiet.exit_code == 0 and quiet.output == ""  # only rank 0 prints
    assert seen == {"quick": True, "local_rank": 1}
    monkeypatch.setenv("LOCAL_RANK", "0")
    loud = CliRunner().invoke(app, ["probe", "--distributed", "--json"])
    assert json.loads(loud.output) == {"ranks": [], "allreduce": [], "slow_ranks": []}


def test_save_with_a_corrupt_history_fails_before_measuring(
    isolated_dlrig_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 12: `probe --save` measured for 12 s and then lost everything on a corrupt database.
    from dlrig.commands import probe as probe_cmd
    from dlrig.errors import HistoryError

    isolated_dlrig_home.mkdir(parents=True, exist_ok=True)
    database = isolated_dlrig_home / "dlrig.sqlite3"
    database.write_bytes(b"not a database at all\n")

    def measured(*_: object) -> None:
        raise AssertionError("measured before checking the database")

    monkeypatch.setattr(probe_cmd, "_measure", measured)
    result = CliRunner().invoke(app, ["probe", "--quick", "--no-torch", "--save"])
    assert isinstance(result.exception, HistoryError), result.exception
    assert "corrupt" in result.exception.message
    assert database.read_bytes() == b"not a database at all\n"  # left untouched


def test_save_failing_after_the_measurement_keeps_the_probe_in_a_new_file(
    isolated_dlrig_home: Path,
    tmp_path: Path,
    small_probe: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dlrig.errors import HistoryError
    from dlrig.history import probes

    def refused(*_: object) -> int:
        raise HistoryError("history database x is locked by another dlrig (or sqlite) process")

    _replaying(monkeypatch, "gpu_throttling_for_heat")
    monkeypatch.setattr(probes, "save_probe", refused)
    monkeypatch.chdir(tmp_path)
    args = ["probe", "--quick", "--no-torch", "--path", str(tmp_path), "--json", "--save"]
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, HistoryError), result.exception
    kept = Path(result.exception.message.split("the probe was written to ")[1])
    assert kept.parent == tmp_path and kept.name.startswith("dlrig-probe-")
    assert json.loads(kept.read_text())["gpus"][0]["reading"]["temperature_c"] == 83


@pytest.mark.slow
@pytest.mark.parametrize(("value", "disabled"), [("1", True), ("0", False), ("yes", False)])
def test_probe_reads_nccl_p2p_disable_from_its_environment(
    tmp_path: Path,
    small_probe: None,
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    disabled: bool,
) -> None:
    """NCCL reads NCCL_P2P_DISABLE as an integer, non-zero turning its P2P transport off; the
    replayed 4x RTX 3090 box probed under it says so in its links and notes, and its build
    records no peer-to-peer."""
    _replaying(monkeypatch, "four_gpu_box")
    monkeypatch.setenv("NCCL_P2P_DISABLE", value)
    out = CliRunner().invoke(
        app, ["probe", "--quick", "--no-torch", "--json", "--path", str(tmp_path)]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["links"]["nccl_p2p_disabled"] is disabled
    assert any("NCCL_P2P_DISABLE is set here" in n for n in data["notes"]) is disabled
    assert (data["build"]["measured"].get("peer_to_peer") is False) is disabled
