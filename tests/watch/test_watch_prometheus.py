"""The Prometheus exposition: dcgm-exporter names for GPUs, served on 127.0.0.1 only."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from watch_helpers import replayed_samples

from dlrig.watch.prometheus import MetricsServer, exposition


def _get(port: int, path: str = "/metrics") -> tuple[int, str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return response.status, response.headers["Content-Type"], response.read().decode()


def test_exposition_of_the_heat_trace_uses_dcgm_names_and_units() -> None:
    sample = replayed_samples("gpu_throttling_for_heat", 1)[0]
    text = exposition(sample)
    labels = '{gpu="0",UUID="GPU-817285e3-758e-25e4-3b80-d38475e31dd6",device="nvidia0",'
    # Values of H5's recorded RTX 3090 fixture: 98 %, 83 C, 231 W, 1395 MHz, 22403874816 B used.
    assert f"DCGM_FI_DEV_GPU_UTIL{labels}" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("DCGM_FI_DEV_GPU_UTIL{"))
    assert line.endswith(" 98")
    assert any(
        ln.startswith("DCGM_FI_DEV_GPU_TEMP{") and ln.endswith(" 83") for ln in text.splitlines()
    )
    assert any(
        ln.startswith("DCGM_FI_DEV_POWER_USAGE{") and ln.endswith(" 231.0")
        for ln in text.splitlines()
    )
    assert any(
        ln.startswith("DCGM_FI_DEV_SM_CLOCK{") and ln.endswith(" 1395") for ln in text.splitlines()
    )
    # Frame buffer in MiB, as dcgm-exporter reports it: 22403874816 / 2**20 = 21366.
    assert any(
        ln.startswith("DCGM_FI_DEV_FB_USED{") and ln.endswith(" 21366") for ln in text.splitlines()
    )
    assert "# TYPE DCGM_FI_DEV_GPU_UTIL gauge" in text
    assert "node_memory_MemTotal_bytes 64000000000" in text
    assert text.count("# HELP DCGM_FI_DEV_GPU_TEMP ") == 1


def test_lost_gpu_is_a_metric_not_a_gap() -> None:
    text = exposition(replayed_samples("lost_gpu", 1)[0])
    assert 'dlrig_gpu_lost{gpu="1",device="nvidia1"} 1' in text
    assert text.count("DCGM_FI_DEV_GPU_UTIL{") == 1  # only the GPU that answers


def test_server_answers_a_real_get_on_127_0_0_1() -> None:
    server = MetricsServer(0)
    try:
        status, content_type, body = _get(server.port)
        assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
        assert "dlrig_up 1" in body
        server.update(replayed_samples("link_trained_at_x4", 1)[0])
        body = _get(server.port)[2]
        assert body.count("DCGM_FI_DEV_PCIE_LINK_WIDTH{") == 4
        with pytest.raises(urllib.error.HTTPError) as info:
            _get(server.port, "/other")
        assert info.value.code == 404
        assert server._httpd.server_address[0] == "127.0.0.1"
    finally:
        server.close()


def _free_port() -> int:
    """A port nothing listens on now (the OS picks it; dlrig refuses port 0 itself)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_watch_serves_the_running_job(isolated_dlrig_home: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dlrig",
            "watch",
            "--interval",
            "0.2",
            "--prometheus",
            str(_free_port()),
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(3)",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "DLRIG_HOME": str(isolated_dlrig_home)},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        # The first sample follows the history's opening and the job's start: poll for it (up to
        # the job's 3 s) rather than guess how long a loaded machine takes to get there.
        deadline = time.monotonic() + 3.0
        body = _get(port)[2]
        while "dlrig_job_processes" not in body and time.monotonic() < deadline:
            time.sleep(0.1)
            body = _get(port)[2]
        assert "dlrig_job_processes 1" in body
        assert 'dlrig_cpu_busy_ratio{cpu="0"}' in body
    finally:
        proc.kill()
        proc.communicate()


def test_a_port_in_use_is_a_clear_error_before_the_job_starts(
    isolated_dlrig_home: Path, tmp_path: Path
) -> None:
    import socket

    marker = tmp_path / "ran"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "dlrig", "watch", "--prometheus", str(port), "--",
             sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
            env={**os.environ, "DLRIG_HOME": str(isolated_dlrig_home)},
        )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(f"dlrig: error: cannot serve metrics on 127.0.0.1:{port}")
    assert not marker.exists()


@pytest.mark.parametrize("port", ["70000", "-5", "0"])
def test_a_port_out_of_range_is_bad_input_before_the_job_starts(
    isolated_dlrig_home: Path, tmp_path: Path, port: str
) -> None:
    # Issue 12: `--prometheus 70000` (or -5) ended in a traceback; TCP ports are 1-65535.
    marker = tmp_path / "ran"
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "watch", "--prometheus", port, "--",
         sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "DLRIG_HOME": str(isolated_dlrig_home)},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"dlrig: error: --prometheus {port}: expected a TCP port from 1 to 65535"
    ), result.stderr
    assert "Traceback" not in result.stderr
    assert not marker.exists()
