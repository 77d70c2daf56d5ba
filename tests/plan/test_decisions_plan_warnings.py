"""Issue 11: a plan shows every warning its builds carry, the ones `dlrig check` gives the saved
build. On main a plan put cards in a Z790 board's chipset slots and PCIE.3's warning showed
only when the saved build was checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_plan_shows_the_warnings_check_gives_each_planned_build(tmp_path: Path) -> None:
    args = ("plan", "--workload", "resnet50", "--budget", "8000")
    builds = json.loads(dlrig(*args, "--json").stdout)["builds"]
    text = " ".join(dlrig(*args).stdout.split())
    assert builds
    for b in builds:
        path = tmp_path / f"plan-{b['rank']}.yaml"
        path.write_text(yaml.safe_dump(b["build"]))
        checked = json.loads(dlrig("check", str(path), "--workload", "resnet50", "--json").stdout)
        want = [
            (f["rule"], f["message"]) for f in checked["findings"] if f["severity"] == "warning"
        ]
        assert [(w["rule"], w["message"]) for w in b["warnings"]] == want
        for rule, message in want:
            assert f"warning {rule}: {' '.join(message.split())}" in text
