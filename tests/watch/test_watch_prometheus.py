"""The Prometheus metrics: a prometheus_client collector with dcgm-exporter's names, types and
labels, served on 127.0.0.1 only; every check scrapes or renders the text format and parses it
back with prometheus_client's own parser."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample as PromSample
from watch_helpers import fixture, idle_host, light_job, replayed_samples

from dlrig.watch.prometheus import MetricsServer, exposition
from dlrig.watch.samples import DiskSample, Sample

# dcgm-exporter's metric types, from its etc/default-counters.csv and
# etc/dcp-metrics-included.csv (github.com/NVIDIA/dcgm-exporter, read 2026-12-03).
DCGM_EXPORTER_TYPES = {
    "DCGM_FI_DEV_SM_CLOCK": "gauge",
    "DCGM_FI_DEV_MEM_CLOCK": "gauge",
    "DCGM_FI_DEV_GPU_TEMP": "gauge",
    "DCGM_FI_DEV_POWER_USAGE": "gauge",
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT": "counter",
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT": "counter",
    "DCGM_FI_DEV_GPU_UTIL": "gauge",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge",
    "DCGM_FI_DEV_FB_FREE": "gauge",
    "DCGM_FI_DEV_FB_USED": "gauge",
    "DCGM_FI_DEV_FB_RESERVED": "gauge",
}
DCGM_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _samples(text: str, name: str) -> list[PromSample]:
    return [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == name]


def _value(text: str, name: str, **labels: str) -> float:
    (match,) = [
        s for s in _samples(text, name) if all(s.labels.get(k) == v for k, v in labels.items())
    ]
    return float(match.value)


def _get(port: int, path: str = "/metrics") -> tuple[int, str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return response.status, response.headers["Content-Type"], response.read().decode()


def test_the_heat_trace_in_dcgm_exporter_names_units_and_labels() -> None:
    sample = replayed_samples("gpu_throttling_for_heat", 1)[0]
    text = exposition(sample, hostname="node-a")
    (util,) = _samples(text, "DCGM_FI_DEV_GPU_UTIL")
    assert util.labels == {
        "gpu": "0",
        "UUID": "GPU-817285e3-758e-25e4-3b80-d38475e31dd6",
        "pci_bus_id": "00000000:01:00.0",
        "device": "nvidia0",
        "modelName": "NVIDIA GeForce RTX 3090",
        "Hostname": "node-a",
    }
    # The fixture's RTX 3090 under heat: 98 %, 83 C, 231 W, 1395 MHz, 22403874816 B used.
    assert util.value == 98
    assert _value(text, "DCGM_FI_DEV_GPU_TEMP") == 83
    assert _value(text, "DCGM_FI_DEV_POWER_USAGE") == 231.0
    assert _value(text, "DCGM_FI_DEV_SM_CLOCK") == 1395
    # Frame buffer in MiB, as dcgm-exporter reports it: 22403874816 / 2**20 = 21366.
    assert _value(text, "DCGM_FI_DEV_FB_USED") == 21366
    assert _value(text, "node_memory_MemTotal_bytes", Hostname="node-a") == 64e9
    # The thermal bits of the trace (0x20 | 0x40 per the NVML API reference) one series each.
    assert _value(text, "dlrig_gpu_clock_event_reason", reason="hw_thermal_slowdown") == 1
    assert _value(text, "dlrig_gpu_clock_event_reason", reason="sw_power_cap") == 0


def test_types_follow_dcgm_exporter_and_counters_end_in_total() -> None:
    text = exposition(replayed_samples("eight_gpu_box", 2)[-1])
    families = _families(text)
    for name, kind in DCGM_EXPORTER_TYPES.items():
        assert families[name].type == kind, name
        sample_names = {s.name for s in families[name].samples}
        assert sample_names == ({f"{name}_total"} if kind == "counter" else {name}), name
        assert all(set(s.labels) == DCGM_LABELS for s in families[name].samples), name
    # Every counter's samples are `_total`, the byte counters among them.
    counters = [f for f in families.values() if f.type == "counter"]
    assert {"dlrig_disk_read_bytes", "dlrig_job_read_bytes"} <= {f.name for f in counters}
    assert all(s.name.endswith("_total") for f in counters for s in f.samples)
    # Memory info v2 of the 8-GPU fixture: 512 MiB reserved, apart from used.
    assert _value(text, "DCGM_FI_DEV_FB_RESERVED", gpu="3") == 512
    assert _value(text, "DCGM_FI_DEV_FB_USED", gpu="3") == (925892608 - 536870912) // 2**20


def _pcie_trace(tx_kb_s: list[int]) -> dict[str, Any]:
    data = fixture("gpu_throttling_for_heat")
    data["samples"] = [
        {"t_s": float(t), "gpus": [{"nvmlDeviceGetPcieThroughput:TX_BYTES": kb_s}]}
        for t, kb_s in enumerate(tx_kb_s)
    ]
    return data


def test_pcie_counter_adds_each_interval_s_throughput() -> None:
    # 1000, 3000, 2000 KB/s over three 1 s intervals: 6000 KB transmitted in all.
    samples = replayed_samples(_pcie_trace([1000, 3000, 2000]), 3, interval_s=1.0)
    server = MetricsServer(0)
    try:
        for sample in samples:
            server.update(sample)
        text = _get(server.port)[2]
    finally:
        server.close()
    assert _value(text, "DCGM_FI_DEV_PCIE_TX_THROUGHPUT_total") == 6000
    assert _value(text, "dlrig_watch_samples_total") == 3


def test_disk_and_job_byte_counters_add_rates_times_intervals() -> None:
    disk = DiskSample(name="nvme0n1", read_mb_s=500.0, write_mb_s=20.0, busy_ratio=0.5)
    host = replace(idle_host(), disks=(disk,))
    samples = [Sample(t_s=0.5 * (i + 1), host=host, job=light_job()) for i in range(4)]
    server = MetricsServer(0, hostname="node-b")
    try:
        for sample in samples:
            server.update(sample)
        text = _get(server.port)[2]
    finally:
        server.close()
    # 500 MB/s for 4 x 0.5 s = 1e9 bytes read; 20 MB/s -> 4e7 bytes written.
    assert _value(text, "dlrig_disk_read_bytes_total", device="nvme0n1") == pytest.approx(1e9)
    assert _value(text, "dlrig_disk_written_bytes_total", device="nvme0n1") == pytest.approx(4e7)
    assert _value(text, "dlrig_job_read_bytes_total", Hostname="node-b") == 0


def test_lost_gpu_is_a_metric_not_a_gap() -> None:
    text = exposition(replayed_samples("lost_gpu", 1)[0])
    assert _value(text, "dlrig_gpu_lost", gpu="1", device="nvidia1") == 1
    assert _value(text, "dlrig_gpu_lost", gpu="0") == 0
    assert len(_samples(text, "DCGM_FI_DEV_GPU_UTIL")) == 1  # only the GPU that answers


def test_bottleneck_and_stage_pressure_of_the_last_minute() -> None:
    # A GPU at 98 % (the heat trace) is compute-bound: the verdict's stage over the window.
    text = exposition(replayed_samples("gpu_throttling_for_heat", 1)[0])
    assert _value(text, "dlrig_bottleneck", stage="gpu_compute") == 1
    assert sum(s.value for s in _samples(text, "dlrig_bottleneck")) == 1
    assert _value(text, "dlrig_accelerator_busy_ratio") == pytest.approx(0.98)
    # idle_host's CPUs at 5 % and light_job: the CPU stage's load is what the verdict computes.
    assert {s.labels["stage"] for s in _samples(text, "dlrig_stage_pressure_ratio")} >= {
        "storage",
        "cpu_preprocessing",
    }


def test_server_answers_a_real_get_on_127_0_0_1_from_its_own_registry() -> None:
    server = MetricsServer(0, hostname="node-c")
    try:
        status, content_type, body = _get(server.port)
        assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
        assert _value(body, "dlrig_up", Hostname="node-c") == 1
        server.update(replayed_samples("link_trained_at_x4", 1)[0])
        body = _get(server.port)[2]
        widths = {s.labels["gpu"]: s.value for s in _samples(body, "DCGM_FI_DEV_PCIE_LINK_WIDTH")}
        assert widths == {"0": 16, "1": 16, "2": 4, "3": 16}  # GPU 2 trained at x4
        assert server.address == "127.0.0.1"
        # Not the process-wide default registry: another exporter in the process is untouched.
        assert (
            prometheus_client.REGISTRY.get_sample_value("dlrig_up", {"Hostname": "node-c"}) is None
        )
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
            "import time; time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "DLRIG_HOME": str(isolated_dlrig_home)},
        start_new_session=True,  # so that the test can end the job with dlrig
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        # The first sample follows the history's opening and the job's start: poll for it
        # rather than guess how long a loaded machine takes to get there (the job outlasts it).
        deadline = time.monotonic() + 30.0
        body = _get(port)[2]
        while not _samples(body, "dlrig_job_processes") and time.monotonic() < deadline:
            time.sleep(0.1)
            body = _get(port)[2]
        assert _value(body, "dlrig_job_processes") == 1
        assert _samples(body, "dlrig_cpu_busy_ratio")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
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


@pytest.mark.parametrize("address", ["gpu-node-01", "300.1.1.1", ""])
def test_an_address_that_is_not_an_ip_is_bad_input_before_the_job_starts(
    isolated_dlrig_home: Path, tmp_path: Path, address: str
) -> None:
    marker = tmp_path / "ran"
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "watch", "--prometheus", "9400",
         "--prometheus-address", address, "--",
         sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
        capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "DLRIG_HOME": str(isolated_dlrig_home)},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(
        f"dlrig: error: --prometheus-address {address}: expected an IP address of this machine"
    ), result.stderr
    assert "Traceback" not in result.stderr
    assert not marker.exists()
