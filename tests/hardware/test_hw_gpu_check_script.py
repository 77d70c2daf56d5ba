"""scripts/gpu-check on a machine without a GPU: it runs, and records the "no GPU" reading in
the fixture format the replay reads."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.nvml_fakes import replay_nvml

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu-check"


def test_gpu_check_records_a_replayable_no_gpu_reading(tmp_path: Path) -> None:
    # probe_train would train ResNet-50's stand-in on these 2 cores (tests/probe covers it)
    skip = "probe,pytest_gpu,probe_train"
    env = {**os.environ, "OUT": str(tmp_path), "GPU_CHECK_SKIP": skip, "GPU_CHECK_DISK_MIB": "32"}
    done = subprocess.run([str(SCRIPT)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert all(step["ok"] for step in summary["steps"].values()), summary
    recorded = tmp_path / "nvml" / "recorded_idle.json"
    fixture = json.loads(recorded.read_text())
    assert fixture["provenance"].startswith("recorded by dlrig scripts/gpu-check")
    backend = replay_nvml(recorded)
    if not backend.system().available:  # this machine: no NVML library
        assert fixture["system"]["nvmlInit"]["nvml_error"] == "LibraryNotFound"
        assert backend.read_gpus() == ()
    torch_report = json.loads((tmp_path / "torch_cuda.json").read_text())
    assert "report" in torch_report
    disk = json.loads((tmp_path / "disk.json").read_text())
    assert disk["threads"]["deep_queue_depth"] in (8, None)  # None: O_DIRECT refused here
    assert not list(tmp_path.glob("dlrig-probe-*"))  # the disk step's temp files are gone
