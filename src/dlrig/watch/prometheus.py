"""Metrics of a watched run for Prometheus: a `prometheus_client` custom collector over the
latest sample, on its own registry, served by `prometheus_client`'s HTTP server on 127.0.0.1.

GPU metrics carry dcgm-exporter's names, types and labels (its `etc/default-counters.csv` and
`etc/dcp-metrics-included.csv`: gauges for clocks, temperature, power, utilization and frame
buffer in MiB; `DCGM_FI_DEV_PCIE_TX/RX_THROUGHPUT` a counter of KB; labels `gpu`, `UUID`,
`pci_bus_id`, `device`, `modelName`, `Hostname`), so dashboards written for dcgm-exporter read
them. `prometheus_client` writes a counter's sample with the `_total` suffix, so the PCIe series
is `DCGM_FI_DEV_PCIE_TX_THROUGHPUT_total`. Host memory keeps node-exporter's names
(`node_memory_MemTotal_bytes`); what neither exporter has (per-CPU busy share over the
interval, disks and the job's process tree as dlrig sees them, the bottleneck) is
`dlrig_`-prefixed. Every series carries `Hostname`, so one dashboard tells the nodes apart.

Counters (`*_total`) add up the rates of each sample over its interval since the watch started:
NVML and /proc give rates, and Prometheus' `rate()` wants running totals.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dlrig.enums import Bottleneck, Severity
from dlrig.errors import DlrigError
from dlrig.hardware.bmc import BmcHealth, BmcReading, BmcSensor, SensorKind
from dlrig.hardware.nvml import ClockEventReason, GpuReading
from dlrig.hardware.nvml.health import GpuHealth
from dlrig.health.checks import sensor_state
from dlrig.units import MB, MIB
from dlrig.watch.detectors.series import accelerator_busy
from dlrig.watch.samples import Sample
from dlrig.watch.verdict import judge, stage_pressures

BIND_ADDRESS = "127.0.0.1"
# The bottleneck and stage pressure a scrape shows are judged over the samples of this last
# stretch: long enough to hold several steps of a slow job, short enough to follow a change
# of phase (evaluation, checkpointing) within a minute.
STAGE_WINDOW_S = 60.0

GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname")


def _mib(value: int | None) -> int | None:
    return None if value is None else value // MIB


def _fb_free_mib(g: GpuReading) -> int | None:
    if g.memory_total_bytes is None or g.memory_used_bytes is None:
        return None
    reserved = g.memory_reserved_bytes or 0
    return (g.memory_total_bytes - g.memory_used_bytes - reserved) // MIB


# (dcgm-exporter name, its help text, the value of a reading) for its gauges.
_GPU_GAUGES: tuple[tuple[str, str, Callable[[GpuReading], float | None]], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", lambda g: g.clock_sm_mhz),
    ("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", lambda g: g.clock_memory_mhz),
    ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", lambda g: g.temperature_c),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", lambda g: g.power_w),
    (
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        "Power management limit (in W).",
        lambda g: g.power_limit_w,
    ),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", lambda g: g.utilization_gpu_pct),
    (
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "Memory utilization (in %).",
        lambda g: g.utilization_memory_pct,
    ),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", _fb_free_mib),
    (
        "DCGM_FI_DEV_FB_USED",
        "Framebuffer memory used (in MiB).",
        lambda g: _mib(g.memory_used_bytes),
    ),
    (
        "DCGM_FI_DEV_FB_RESERVED",
        "Framebuffer memory reserved (in MiB).",
        lambda g: _mib(g.memory_reserved_bytes),
    ),
    (
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "Current clock throttle reasons (a bit mask of nvmlClocksEventReason*).",
        lambda g: g.clocks_event_reasons,
    ),
    ("DCGM_FI_DEV_PCIE_LINK_GEN", "PCIe link generation.", lambda g: g.pcie_gen_current),
    ("DCGM_FI_DEV_PCIE_LINK_WIDTH", "PCIe link width (lanes).", lambda g: g.pcie_width_current),
    (
        "dlrig_gpu_nvlink_active_links",
        "NVLink links up (read every 30 s).",
        lambda g: g.nvlink_active_count,
    ),
)
_PCIE_COUNTERS = (
    (
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
        "Total number of bytes transmitted through PCIe TX (in KB) via NVML.",
        "pcie_tx_kb_s",
    ),
    (
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
        "Total number of bytes received through PCIe RX (in KB) via NVML.",
        "pcie_rx_kb_s",
    ),
)


def gpu_labels(g: GpuReading, hostname: str) -> list[str]:
    """dcgm-exporter's labels of one GPU, in `GPU_LABELS` order ("" when unknown)."""
    return [
        str(g.index),
        g.uuid or "",
        g.pci_bus_id or "",
        f"nvidia{g.index}",
        g.name or "",
        hostname,
    ]


@dataclass
class _Totals:
    """Running totals of the rates, from the first sample on."""

    pcie_kb: dict[tuple[int, str], float] = field(default_factory=dict)
    disk_bytes: dict[tuple[str, str], float] = field(default_factory=dict)
    job_read_bytes: float = 0.0
    samples: int = 0

    def add(self, sample: Sample, interval_s: float) -> None:
        self.samples += 1
        for g in sample.gpus:
            for _, _, attribute in _PCIE_COUNTERS:
                rate_kb_s = getattr(g, attribute)
                if rate_kb_s is not None and not g.lost:
                    key = (g.index, attribute)
                    self.pcie_kb[key] = self.pcie_kb.get(key, 0.0) + rate_kb_s * interval_s
        for d in sample.host.disks:
            for direction, rate_mb_s in (("read", d.read_mb_s), ("written", d.write_mb_s)):
                disk = (d.name, direction)
                self.disk_bytes[disk] = self.disk_bytes.get(disk, 0.0) + (
                    rate_mb_s * MB * interval_s
                )
        if sample.job is not None:
            self.job_read_bytes += sample.job.read_mb_s * MB * interval_s


class WatchCollector(Collector):
    """A custom collector: `update` with each sample, Prometheus scrapes `collect`."""

    def __init__(self, hostname: str) -> None:
        self.hostname = hostname
        self._lock = threading.Lock()
        self._latest: Sample | None = None
        self._window: deque[Sample] = deque()
        self._totals = _Totals()
        # Labels of the GPUs seen so far, so a lost GPU keeps its UUID and model name.
        self._gpu_labels: dict[int, list[str]] = {}
        self._health = HealthFamilies(hostname)

    def update(self, sample: Sample) -> None:
        """Take a new sample: the latest values, the totals, the stage window."""
        with self._lock:
            last_t_s = self._latest.t_s if self._latest is not None else 0.0
            self._totals.add(sample, max(0.0, sample.t_s - last_t_s))
            self._latest = sample
            self._window.append(sample)
            while self._window and sample.t_s - self._window[0].t_s > STAGE_WINDOW_S:
                self._window.popleft()
            for g in sample.gpus:
                if not g.lost:
                    self._gpu_labels[g.index] = gpu_labels(g, self.hostname)
            self._health.update(sample)

    def collect(self) -> Iterator[Metric]:
        """The families of the latest sample (only `dlrig_up` before the first)."""
        with self._lock:
            latest, window, totals = self._latest, list(self._window), self._totals
            labels = dict(self._gpu_labels)
            pcie_kb, disk_bytes = dict(totals.pcie_kb), dict(totals.disk_bytes)
            job_read_bytes, samples = totals.job_read_bytes, totals.samples
        host = [self.hostname]
        yield _gauge("dlrig_up", "1 while dlrig watch runs.", ["Hostname"], [(host, 1)])
        if latest is None:
            return
        yield _counter(
            "dlrig_watch_samples", "Samples taken since the watch started.", host, samples
        )
        yield from self._gpu_families(latest, labels, pcie_kb)
        yield from self._host_families(latest, disk_bytes)
        yield from self._job_families(latest, job_read_bytes)
        yield from self._stage_families(latest, window)
        with self._lock:
            health = list(self._health.families(labels))
        yield from health

    def _gpu_families(
        self,
        sample: Sample,
        labels: dict[int, list[str]],
        pcie_kb: dict[tuple[int, str], float],
    ) -> Iterator[Metric]:
        answering = [g for g in sample.gpus if not g.lost]
        for name, help_text, value_of in _GPU_GAUGES:
            rows = [(labels[g.index], value_of(g)) for g in answering]
            yield _gauge(name, help_text, GPU_LABELS, [(lb, v) for lb, v in rows if v is not None])
        for name, help_text, attribute in _PCIE_COUNTERS:
            family = CounterMetricFamily(name, help_text, labels=GPU_LABELS)
            for g in answering:
                if (g.index, attribute) in pcie_kb:
                    family.add_metric(labels[g.index], pcie_kb[(g.index, attribute)])
            yield family
        reasons = GaugeMetricFamily(
            "dlrig_gpu_clock_event_reason",
            "1 while this clock event (throttle) reason is active (NVML's bits, one series each).",
            labels=(*GPU_LABELS, "reason"),
        )
        for g in answering:
            active = g.event_reasons
            if active is None:
                continue
            for reason in ClockEventReason:
                reasons.add_metric(
                    [*labels[g.index], str(reason.name).lower()], int(reason in active)
                )
        yield reasons
        lost_rows = [
            (labels.get(g.index) or gpu_labels(g, self.hostname), int(g.lost)) for g in sample.gpus
        ]
        yield _gauge(
            "dlrig_gpu_lost", "1 when the GPU stopped answering NVML.", GPU_LABELS, lost_rows
        )

    def _host_families(
        self, sample: Sample, disk_bytes: dict[tuple[str, str], float]
    ) -> Iterator[Metric]:
        h, host = sample.host, self.hostname
        yield _gauge(
            "dlrig_cpu_busy_ratio",
            "Share of the last interval each CPU was busy.",
            ["cpu", "Hostname"],
            [([str(i), host], v) for i, v in enumerate(h.cpu_busy_ratio)],
        )
        for name, help_text, value in (
            ("dlrig_cpu_iowait_ratio", "Share of CPU time idle waiting on I/O.", h.iowait_ratio),
            (
                "node_memory_MemTotal_bytes",
                "Memory information field MemTotal_bytes.",
                h.memory_total_bytes,
            ),
            (
                "node_memory_MemAvailable_bytes",
                "Memory information field MemAvailable_bytes.",
                h.memory_available_bytes,
            ),
            ("dlrig_swap_used_bytes", "Swap in use.", h.swap_used_bytes),
            (
                "dlrig_swap_mb_per_second",
                "Swap traffic (in + out) over the last interval, MB/s.",
                h.swap_in_mb_s + h.swap_out_mb_s,
            ),
        ):
            yield _gauge(name, help_text, ["Hostname"], [([host], value)])
        disks = [([d.name, host], d) for d in h.disks]
        yield _gauge(
            "dlrig_disk_read_mb_per_second",
            "Disk reads, MB/s.",
            ["device", "Hostname"],
            [(lb, d.read_mb_s) for lb, d in disks],
        )
        yield _gauge(
            "dlrig_disk_write_mb_per_second",
            "Disk writes, MB/s.",
            ["device", "Hostname"],
            [(lb, d.write_mb_s) for lb, d in disks],
        )
        yield _gauge(
            "dlrig_disk_busy_ratio",
            "Share of the last interval the disk had a request in flight (iostat %util / 100).",
            ["device", "Hostname"],
            [(lb, d.busy_ratio) for lb, d in disks],
        )
        for direction in ("read", "written"):
            family = CounterMetricFamily(
                f"dlrig_disk_{direction}_bytes",
                f"Bytes {direction} on the disk since the watch started.",
                labels=["device", "Hostname"],
            )
            for (name, kind), total in sorted(disk_bytes.items()):
                if kind == direction:
                    family.add_metric([name, host], total)
            yield family

    def _job_families(self, sample: Sample, job_read_bytes: float) -> Iterator[Metric]:
        job, host = sample.job, [self.hostname]
        if job is None:
            return
        for name, help_text, value in (
            ("dlrig_job_cpu_cores", "CPU cores the job's process tree used.", job.cpu_cores),
            (
                "dlrig_job_workers_cpu_cores",
                "CPU cores the job's worker processes (DataLoader workers and the like) used.",
                job.workers_cpu_cores,
            ),
            ("dlrig_job_workers", "Worker processes under the training process.", job.workers),
            ("dlrig_job_rss_bytes", "Resident memory of the job's processes.", job.rss_bytes),
            ("dlrig_job_threads", "Threads of the job's processes.", job.threads),
            ("dlrig_job_processes", "Processes in the job's tree.", job.processes),
            (
                "dlrig_job_read_mb_per_second",
                "Bytes the job read from storage, MB/s.",
                job.read_mb_s,
            ),
        ):
            yield _gauge(name, help_text, ["Hostname"], [(host, value)])
        yield _counter(
            "dlrig_job_read_bytes",
            "Bytes the job read from storage since the watch started.",
            host,
            job_read_bytes,
        )

    def _stage_families(self, latest: Sample, window: list[Sample]) -> Iterator[Metric]:
        host = [self.hostname]
        busy = accelerator_busy(latest)
        yield _gauge(
            "dlrig_accelerator_busy_ratio",
            "Share of the last interval the GPUs (or, without GPUs, the training process) "
            "computed.",
            ["Hostname"],
            [] if busy is None else [(host, busy)],
        )
        yield _gauge(
            "dlrig_stage_pressure_ratio",
            f"Each input stage's mean load over the last {STAGE_WINDOW_S:g} s (1 = saturated).",
            ["stage", "Hostname"],
            [([stage, self.hostname], v) for stage, v in stage_pressures(window).items()],
        )
        verdict = judge(window, ())
        yield _gauge(
            "dlrig_bottleneck",
            f"1 for the stage holding the job back over the last {STAGE_WINDOW_S:g} s (dlrig "
            "watch's verdict without the alarms), 0 for the others; all 0 when none is.",
            ["stage", "Hostname"],
            [
                ([stage.value, self.hostname], int(stage is verdict.bottleneck))
                for stage in Bottleneck
            ],
        )


def _gauge(
    name: str,
    help_text: str,
    labels: Iterable[str],
    rows: Iterable[tuple[list[str], float]],
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, help_text, labels=list(labels))
    for label_values, value in rows:
        family.add_metric(label_values, value)
    return family


def _counter(name: str, help_text: str, host: list[str], value: float) -> CounterMetricFamily:
    family = CounterMetricFamily(name, help_text, labels=["Hostname"])
    family.add_metric(host, value)
    return family


def exposition(sample: Sample | None, hostname: str = "localhost") -> str:
    """The text format of one sample, as a scrape right after it would read."""
    registry = CollectorRegistry(auto_describe=False)
    collector = WatchCollector(hostname)
    registry.register(collector)
    if sample is not None:
        collector.update(sample)
    return generate_latest(registry).decode()


class MetricsServer:
    """Serves `/metrics` on `address`:`port` (127.0.0.1 unless asked) from prometheus_client's
    HTTP server thread, over a registry of its own (never the process-wide default one)."""

    def __init__(self, port: int, hostname: str = "localhost", address: str = BIND_ADDRESS) -> None:
        self.collector = WatchCollector(hostname)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        try:
            self._httpd, self._thread = start_http_server(
                port, addr=address, registry=self.registry
            )
        except OSError as exc:
            raise DlrigError(
                f"cannot serve metrics on {address}:{port}: {exc.strerror or exc}",
                hint="pick another port with --prometheus PORT, or an address of this machine "
                "with --prometheus-address",
            ) from exc

    @property
    def port(self) -> int:
        """The port actually bound."""
        return int(self._httpd.server_address[1])

    @property
    def address(self) -> str:
        """The address bound."""
        return str(self._httpd.server_address[0])

    def update(self, sample: Sample) -> None:
        """Serve this sample from now on."""
        self.collector.update(sample)

    def close(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


# dcgm-exporter's health fields (its etc/default-counters.csv and dcp-metrics-included.csv),
# exported as gauges so that their names are dcgm-exporter's exactly (prometheus_client would
# append `_total` to a counter); each is the NVML figure of the latest health sample.
_HEALTH_GAUGES: tuple[tuple[str, str, Callable[[GpuHealth], float | None]], ...] = (
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "Total number of single-bit volatile ECC errors.",
        lambda g: g.ecc_volatile_corrected,
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "Total number of double-bit volatile ECC errors.",
        lambda g: g.ecc_volatile_uncorrected,
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "Total number of single-bit persistent ECC errors.",
        lambda g: g.ecc_aggregate_corrected,
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "Total number of double-bit persistent ECC errors.",
        lambda g: g.ecc_aggregate_uncorrected,
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for correctable errors.",
        lambda g: g.remapped_rows_correctable,
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors.",
        lambda g: g.remapped_rows_uncorrectable,
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "Whether remapping of rows has failed.",
        lambda g: None if g.remap_failure is None else int(g.remap_failure),
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "Whether a row remapping waits for a GPU reset.",
        lambda g: None if g.remap_pending is None else int(g.remap_pending),
    ),
    (
        "DCGM_FI_DEV_RETIRED_SBE",
        "Total number of retired pages due to single-bit errors.",
        lambda g: g.retired_pages_sbe,
    ),
    (
        "DCGM_FI_DEV_RETIRED_DBE",
        "Total number of retired pages due to double-bit errors.",
        lambda g: g.retired_pages_dbe,
    ),
    (
        "DCGM_FI_DEV_RETIRED_PENDING",
        "Whether a page retirement waits for a driver reload.",
        lambda g: None if g.retired_pages_pending is None else int(g.retired_pages_pending),
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "Total number of PCIe retries.",
        lambda g: g.pcie_replay_count,
    ),
    (
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "Total number of NVLink flow-control CRC errors.",
        lambda g: g.nvlink_total("crc_flit"),
    ),
    (
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "Total number of NVLink data CRC errors.",
        lambda g: g.nvlink_total("crc_data"),
    ),
    (
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "Total number of NVLink retries.",
        lambda g: g.nvlink_total("replay"),
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "Total number of NVLink recovery errors.",
        lambda g: g.nvlink_total("recovery"),
    ),
)

# ipmi_exporter's families (its `collector_ipmi.go`): a reading and its `_state` (0 nominal,
# 1 warning, 2 critical) by sensor kind, labels `id` and `name`.
_IPMI_FAMILIES = {
    SensorKind.FAN: (
        "ipmi_fan_speed_rpm",
        "Fan speed in rotations per minute.",
        "ipmi_fan_speed_state",
    ),
    SensorKind.TEMPERATURE: (
        "ipmi_temperature_celsius",
        "Temperature reading in degree Celsius.",
        "ipmi_temperature_state",
    ),
    SensorKind.POWER: ("ipmi_power_watts", "Power reading in Watts.", "ipmi_power_state"),
    SensorKind.VOLTAGE: ("ipmi_voltage_volts", "Voltage reading in Volts.", "ipmi_voltage_state"),
}
_STATE_VALUE = {Severity.WARNING: 1, Severity.ERROR: 2}
BMC_LABELS = ("id", "name", "Hostname")


def _health_labels(g: GpuHealth, known: dict[int, list[str]], hostname: str) -> list[str]:
    """A GPU's dcgm-exporter labels: those its last reading gave, else from its health."""
    if g.index in known:
        return known[g.index]
    return [
        str(g.index),
        g.uuid or "",
        g.pci_bus_id or "",
        f"nvidia{g.index}",
        g.name or "",
        hostname,
    ]


def _state(sensor: BmcSensor) -> int:
    found = sensor_state(sensor)
    return 0 if found is None else _STATE_VALUE.get(found[0], 0)


class HealthFamilies:
    """The health series of a watch: dcgm-exporter's ECC, remap, retirement, PCIe replay and
    NVLink error fields and its last Xid, an Xid count per window and since the start, the
    BMC's readings under ipmi_exporter's names, and the health alarms standing now."""

    def __init__(self, hostname: str) -> None:
        self.hostname = hostname
        self._first: Sample | None = None
        self._latest: Sample | None = None
        self._bmc: BmcReading | None = None
        self._bmc_up: int | None = None
        self._xids: deque[tuple[float, int, int]] = deque()  # (t_s, gpu, xid), the last window
        self._xid_totals: dict[tuple[int, int], int] = {}
        self._last_xid: dict[int, int] = {}

    def update(self, sample: Sample) -> None:
        """Take a sample's health (most ticks have none)."""
        h = sample.health
        if h is None:
            return
        if self._first is None:
            self._first = sample
        self._latest = sample
        if h.bmc is not None:
            self._bmc, self._bmc_up = h.bmc, 1
        elif h.bmc_error is not None:
            self._bmc_up = 0
        for x in h.xids:
            gpu = x.gpu if x.gpu is not None else self._gpu_of(x.pci_bus_id, h.gpus)
            if gpu is None:
                continue
            self._xids.append((sample.t_s, gpu, x.xid))
            self._xid_totals[(gpu, x.xid)] = self._xid_totals.get((gpu, x.xid), 0) + 1
            self._last_xid[gpu] = x.xid
        while self._xids and sample.t_s - self._xids[0][0] > STAGE_WINDOW_S:
            self._xids.popleft()

    @staticmethod
    def _gpu_of(bus: str | None, gpus: tuple[GpuHealth, ...]) -> int | None:
        if not bus:
            return None
        tail = bus.lower().split(":", 1)[-1]
        for g in gpus:
            if g.pci_bus_id and g.pci_bus_id.lower().split(":", 1)[-1].startswith(tail):
                return g.index
        return None

    def families(self, labels: dict[int, list[str]]) -> Iterator[Metric]:
        """The health families of the latest health sample (none before the first)."""
        latest = self._latest
        if latest is None or latest.health is None:
            return
        gpus = [g for g in latest.health.gpus if not g.lost]
        rows = {g.index: _health_labels(g, labels, self.hostname) for g in gpus}
        for name, help_text, value_of in _HEALTH_GAUGES:
            values = [(rows[g.index], value_of(g)) for g in gpus]
            yield _gauge(
                name, help_text, GPU_LABELS, [(lb, v) for lb, v in values if v is not None]
            )
        yield _gauge(
            "DCGM_FI_DEV_XID_ERRORS",
            "Value of the last XID error encountered.",
            GPU_LABELS,
            [(rows[g.index], self._last_xid.get(g.index, 0)) for g in gpus],
        )
        window: dict[tuple[int, int], int] = {}
        for _, gpu, xid in self._xids:
            window[(gpu, xid)] = window.get((gpu, xid), 0) + 1
        yield _gauge(
            "dlrig_gpu_xid_errors_window",
            f"Xid events of each code over the last {STAGE_WINDOW_S:g} s.",
            (*GPU_LABELS, "xid"),
            [([*rows[g], str(x)], n) for (g, x), n in sorted(window.items()) if g in rows],
        )
        totals = CounterMetricFamily(
            "dlrig_gpu_xid_errors",
            "Xid events of each code since the watch started.",
            labels=(*GPU_LABELS, "xid"),
        )
        for (g, x), n in sorted(self._xid_totals.items()):
            if g in rows:
                totals.add_metric([*rows[g], str(x)], n)
        yield totals
        yield from self._bmc_families()
        yield from self._finding_families()

    def _bmc_families(self) -> Iterator[Metric]:
        if self._bmc_up is not None:
            yield _gauge(
                "dlrig_bmc_up",
                "1 when the BMC's last reading succeeded.",
                ["Hostname"],
                [([self.hostname], self._bmc_up)],
            )
        bmc = self._bmc
        if bmc is None:
            return
        sensors = [s for s in bmc.sensors if s.present]
        for kind, (name, help_text, state_name) in _IPMI_FAMILIES.items():
            mine = [s for s in sensors if s.kind is kind and s.units != "%"]
            ids = [[s.source_id or s.name, s.name, self.hostname] for s in mine]
            yield _gauge(
                name,
                help_text,
                BMC_LABELS,
                [(lb, s.reading) for lb, s in zip(ids, mine, strict=True) if s.reading is not None],
            )
            yield _gauge(
                state_name,
                f"Reported state of a {kind.value.replace('_', ' ')} sensor (0=nominal, "
                "1=warning, 2=critical).",
                BMC_LABELS,
                [(lb, _state(s)) for lb, s in zip(ids, mine, strict=True)],
            )
        rows = [
            ([s.source_id or s.name, s.name, "Power Supply", self.hostname], _state(s))
            for s in sensors
            if s.kind is SensorKind.POWER_SUPPLY
        ]
        rows += [
            (
                [r.name, r.name, "Redundancy", self.hostname],
                2 if r.health is BmcHealth.CRITICAL else 1 if r.health is BmcHealth.WARNING else 0,
            )
            for r in bmc.redundancy
        ]
        yield _gauge(
            "ipmi_sensor_state",
            "Indicated state of the sensor (0=nominal, 1=warning, 2=critical).",
            ("id", "name", "type", "Hostname"),
            rows,
        )

    def _finding_families(self) -> Iterator[Metric]:
        from dlrig.watch.detectors.health import run_findings

        first, latest = self._first, self._latest
        if first is None or latest is None:
            return
        pair = [first] if first is latest else [first, latest]
        # The BMC reading stands on the latest health sample for judging.
        if latest.health is not None and latest.health.bmc is None and self._bmc is not None:
            pair[-1] = replace(latest, health=replace(latest.health, bmc=self._bmc))
        findings = run_findings(pair)[-1][1]
        yield _gauge(
            "dlrig_health_findings",
            "Health findings standing at the latest health reading, by severity (an error "
            "needs an action on the machine).",
            ["severity", "Hostname"],
            [([s.value, self.hostname], sum(f.severity is s for f in findings)) for s in Severity],
        )
