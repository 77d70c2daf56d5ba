"""Prometheus text exposition of the latest sample, served on 127.0.0.1 only.

GPU metrics carry dcgm-exporter's names and labels (`DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID=...,
modelName=...}`), so existing Grafana dashboards for DCGM read them; host memory uses
node-exporter's names (`node_memory_MemTotal_bytes`); what neither exporter has (per-CPU busy
share over the interval, disk busy share, the job's process tree) is `dlrig_`-prefixed.
Units follow the exporters: MHz, W, C, MiB for frame buffer, KB/s for PCIe throughput.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dlrig.errors import DlrigError
from dlrig.hardware.nvml import GpuReading
from dlrig.units import MIB
from dlrig.watch.samples import Sample

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# (metric, help, value of a GpuReading); None values are left out of the exposition.
_GPU_METRICS: list[tuple[str, str, Any]] = [
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.utilization_gpu_pct),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "Memory utilization (in %).",
        lambda g: g.utilization_memory_pct,
    ),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temperature_c),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power_w),
    (
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "Enforced power limit (in W).",
        lambda g: g.power_limit_w,
    ),
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda g: g.clock_sm_mhz),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", lambda g: g.clock_memory_mhz),
    (
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB).",
        lambda g: None if g.memory_used_bytes is None else g.memory_used_bytes // MIB,
    ),
    (
        "DCGM_FI_DEV_FB_FREE",
        "Framebuffer memory free (in MiB).",
        lambda g: (
            None
            if g.memory_used_bytes is None or g.memory_total_bytes is None
            else (g.memory_total_bytes - g.memory_used_bytes) // MIB
        ),
    ),
    (
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "Current clock event (throttle) reasons (a bit mask).",
        lambda g: g.clocks_event_reasons,
    ),
    ("DCGM_FI_DEV_PCIE_LINK_GEN", "PCIe link generation.", lambda g: g.pcie_gen_current),
    ("DCGM_FI_DEV_PCIE_LINK_WIDTH", "PCIe link width (lanes).", lambda g: g.pcie_width_current),
    (
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
        "PCIe transmit throughput (in KB/s).",
        lambda g: g.pcie_tx_kb_s,
    ),
    (
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
        "PCIe receive throughput (in KB/s).",
        lambda g: g.pcie_rx_kb_s,
    ),
]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, object]]) -> str:
    inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in pairs if v is not None)
    return "{" + inner + "}" if inner else ""


def _gpu_labels(g: GpuReading) -> str:
    return _labels(
        [
            ("gpu", g.index),
            ("UUID", g.uuid),
            ("device", f"nvidia{g.index}"),
            ("modelName", g.name),
            ("pci_bus_id", g.pci_bus_id),
        ]
    )


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def exposition(sample: Sample | None) -> str:
    """The text format (version 0.0.4) of one sample: HELP and TYPE once per metric."""
    lines: list[str] = []

    def family(name: str, help_text: str, rows: list[tuple[str, float]]) -> None:
        if not rows:
            return
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} gauge")
        lines.extend(f"{name}{labels} {_number(value)}" for labels, value in rows)

    family("dlrig_up", "1 while dlrig watch runs.", [("", 1)])
    if sample is None:
        return "\n".join(lines) + "\n"
    for name, help_text, getter in _GPU_METRICS:
        rows = [(_gpu_labels(g), getter(g)) for g in sample.gpus if not g.lost]
        family(name, help_text, [(lb, v) for lb, v in rows if v is not None])
    family(
        "dlrig_gpu_lost",
        "1 when the GPU stopped answering NVML.",
        [(_gpu_labels(g), int(g.lost)) for g in sample.gpus],
    )
    host = sample.host
    family(
        "dlrig_cpu_busy_ratio",
        "Share of the last interval each CPU was busy.",
        [(_labels([("cpu", i)]), v) for i, v in enumerate(host.cpu_busy_ratio)],
    )
    family(
        "dlrig_cpu_iowait_ratio",
        "Share of CPU time idle waiting on I/O.",
        [("", host.iowait_ratio)],
    )
    family(
        "node_memory_MemTotal_bytes",
        "Memory information field MemTotal_bytes.",
        [("", host.memory_total_bytes)],
    )
    family(
        "node_memory_MemAvailable_bytes",
        "Memory information field MemAvailable_bytes.",
        [("", host.memory_available_bytes)],
    )
    family("dlrig_swap_used_bytes", "Swap in use.", [("", host.swap_used_bytes)])
    family(
        "dlrig_swap_mb_per_second",
        "Swap traffic (in + out) over the last interval, MB/s.",
        [("", host.swap_in_mb_s + host.swap_out_mb_s)],
    )
    disk_rows = [(d, _labels([("device", d.name)])) for d in host.disks]
    family(
        "dlrig_disk_read_mb_per_second",
        "Disk reads, MB/s.",
        [(lb, d.read_mb_s) for d, lb in disk_rows],
    )
    family(
        "dlrig_disk_write_mb_per_second",
        "Disk writes, MB/s.",
        [(lb, d.write_mb_s) for d, lb in disk_rows],
    )
    family(
        "dlrig_disk_busy_ratio",
        "Share of the last interval the disk had a request in flight (iostat %util / 100).",
        [(lb, d.busy_ratio) for d, lb in disk_rows],
    )
    job = sample.job
    if job is not None:
        family(
            "dlrig_job_cpu_cores", "CPU cores the job's process tree used.", [("", job.cpu_cores)]
        )
        family(
            "dlrig_job_rss_bytes", "Resident memory of the job's processes.", [("", job.rss_bytes)]
        )
        family("dlrig_job_threads", "Threads of the job's processes.", [("", job.threads)])
        family("dlrig_job_processes", "Processes in the job's tree.", [("", job.processes)])
        family(
            "dlrig_job_read_mb_per_second",
            "Bytes the job read from storage, MB/s.",
            [("", job.read_mb_s)],
        )
    return "\n".join(lines) + "\n"


class MetricsServer:
    """Serves `/metrics` on 127.0.0.1:`port` from a daemon thread (port 0: any free port)."""

    def __init__(self, port: int) -> None:
        self._text = exposition(None).encode()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "only /metrics is served")
                    return
                body = server.body()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the job's terminal is not a web server log."""

        try:
            self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        except OSError as exc:
            raise DlrigError(
                f"cannot serve metrics on 127.0.0.1:{port}: {exc.strerror or exc}",
                hint="pick another port with --prometheus PORT (0 picks a free one)",
            ) from exc
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        return int(self._httpd.server_address[1])

    def body(self) -> bytes:
        """The current exposition."""
        with self._lock:
            return self._text

    def update(self, sample: Sample) -> None:
        """Serve this sample from now on."""
        text = exposition(sample).encode()
        with self._lock:
            self._text = text

    def close(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
