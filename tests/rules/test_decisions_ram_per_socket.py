"""Issue 11, RAM.2 on two sockets: each CPU feeds its GPUs from its own memory channels.

GUIDE RAM.2: RAM >= the largest GPU's memory. The L40S has 48 GB (catalog, NVIDIA L40S
datasheet). On main, 8x L40S on two Xeons with 64 GB of RAM passed: 32 GB per socket.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

EXAMPLE = Path(__file__).parents[2] / "examples" / "builds" / "8x-l40s-pcie-server.yaml"


def ram2(tmp_path: Path, memory: object, cpu_count: int = 2) -> dict[str, object]:
    build = yaml.safe_load(EXAMPLE.read_text())
    build["memory"] = memory
    build["cpu"]["count"] = cpu_count
    path = tmp_path / "server.yaml"
    path.write_text(yaml.safe_dump(build))
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "check", str(path), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    (found,) = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "RAM.2"]
    return dict(found)


def test_8x_48gb_gpus_on_two_xeons_with_64gb_ram_fail_ram2_per_socket(tmp_path: Path) -> None:
    found = ram2(tmp_path, {"size_gb": 64, "type": "DDR5"})
    assert found["severity"] == "error"
    assert "32 GiB per socket" in str(found["message"])
    assert "96 GiB" in str(found["fix"])  # 48 GiB for each of the two sockets


def test_the_same_64gb_on_one_socket_passes_ram2(tmp_path: Path) -> None:
    found = ram2(tmp_path, {"size_gb": 64, "type": "DDR5"}, cpu_count=1)
    assert found["severity"] == "info"


def test_four_64gb_rdimms_on_two_sockets_pass_with_two_modules_each(tmp_path: Path) -> None:
    found = ram2(tmp_path, {"model": "4x Kingston Server Premier 64GB DDR5-4800 RDIMM"})
    assert found["severity"] == "info"
    assert "128 GiB per socket (2 modules per socket on 8 channels)" in str(found["message"])
