"""Health during a watched run: the alarms the issue lists (a new Xid, an uncorrectable ECC
error, a pending remap, PSU redundancy lost, a fan failed, an inlet over its threshold) in the
run's alarms (its timeline), its verdict, its page and its Prometheus output, from the NVML
health fixtures and the Redfish mockups."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from watch_helpers import idle_host, light_job

from dlrig.errors import SourceUnreachableError
from dlrig.hardware.bmc import BmcReading
from dlrig.hardware.bmc.redfish import RedfishOptions, RedfishSource
from dlrig.hardware.kernel_log import KernelXids
from dlrig.hardware.nvml.health import GpuHealth, XidEvent
from dlrig.report.html.pages import watch_page
from dlrig.report.watch import summary_text
from dlrig.watch.detectors import detect_all
from dlrig.watch.host import HealthSampler
from dlrig.watch.prometheus import exposition
from dlrig.watch.samples import HealthSample, Sample, sample_from_dict, sample_to_dict
from dlrig.watch.summary import judge_stored_run
from dlrig.watch.verdict import judge
from support.nvml_fakes import replay_nvml
from support.redfish_mockup import serve_mockup

PASSWORD = "s3cret-Pa55"


def _bmc(mockup: str) -> BmcReading:
    with serve_mockup(mockup, user="U", password=PASSWORD) as served:
        return RedfishSource(RedfishOptions(served.url, "U"), PASSWORD).read()


def _gpus() -> tuple[GpuHealth, ...]:
    """Two healthy H100s (tests/fixtures/nvml/health_h100_healthy.json)."""
    return replay_nvml("health_h100_healthy").read_health()


def _faulted_gpu(gpu: GpuHealth, *, dbe: int, pending: bool) -> GpuHealth:
    return dataclasses.replace(
        gpu,
        ecc_volatile_uncorrected=dbe,
        ecc_aggregate_uncorrected=dbe,
        remapped_rows_uncorrectable=1 if pending else 0,
        remap_pending=pending,
    )


@pytest.fixture(scope="module")
def run() -> list[Sample]:
    """A minute of a run, health every 10 s: healthy at 0 s; at 10 s GPU 1 takes two
    uncorrectable ECC errors (Xid 48); at 20 s a row waits for remapping (Xid 63); at 30 s the
    BMC reports PSU2 failed with the redundancy lost, FAN3 stopped and the inlet at 47 C."""
    healthy, faulted = _bmc("healthy_subsystems"), _bmc("faulted_subsystems")
    gpus = _gpus()
    plan: list[tuple[float, tuple[GpuHealth, ...], tuple[XidEvent, ...], BmcReading | None]] = [
        (0.0, gpus, (), healthy),
        (
            10.0,
            (gpus[0], _faulted_gpu(gpus[1], dbe=2, pending=False)),
            (XidEvent(48, "nvml", gpu=1),),
            None,
        ),
        (
            20.0,
            (gpus[0], _faulted_gpu(gpus[1], dbe=2, pending=True)),
            (XidEvent(63, "nvml", gpu=1),),
            None,
        ),
        (30.0, (gpus[0], _faulted_gpu(gpus[1], dbe=2, pending=True)), (), faulted),
        (40.0, (gpus[0], _faulted_gpu(gpus[1], dbe=2, pending=True)), (), None),
    ]
    samples = []
    for t, health_gpus, xids, bmc in plan:
        for dt in (0.0, 5.0):  # a tick without health between the health ticks
            samples.append(
                Sample(
                    t_s=t + dt,
                    host=idle_host(),
                    job=light_job(),
                    health=HealthSample(gpus=health_gpus, xids=xids, bmc=bmc) if dt == 0 else None,
                )
            )
    return samples


def _alarms(samples: list[Sample]) -> dict[str, Any]:
    return {
        (a.name, a.evidence.get("part")): a
        for a in detect_all(samples)
        if a.rule.startswith("HEALTH.")
    }


def test_each_listed_fault_is_an_alarm_with_its_span(run: list[Sample]) -> None:
    alarms = _alarms(run)
    gpu1 = "GPU 1 (NVIDIA H100 80GB HBM3, 00000000:2A:00.0)"
    ecc = alarms[("gpu_ecc_uncorrected", gpu1)]
    assert (ecc.rule, ecc.start_s, ecc.end_s, ecc.gpu) == ("HEALTH.2", 10.0, 40.0, 1)
    xid = alarms[("gpu_xid", gpu1)]
    assert (xid.rule, xid.start_s, xid.end_s) == ("HEALTH.5", 10.0, 10.0)  # Xid 48, once
    pending = alarms[("gpu_row_remap_pending", gpu1)]
    assert (pending.start_s, pending.end_s, pending.severity.value) == (20.0, 40.0, "error")
    assert alarms[("power_supply_failed", "'PSU2'")].start_s == 30.0
    assert alarms[("power_supply_redundancy_lost", "'power-supply redundancy'")].end_s == 40.0
    assert alarms[("fan_failed", "'FAN3'")].message.endswith("stopped")
    inlet = alarms[("temperature_high", "'Inlet Temp'")]
    assert "over the BMC's upper critical threshold 45 C" in inlet.message
    # The faulted BMC's four SEL entries are new in this run (the healthy one had only #1);
    # three name a part whose present state is an alarm already: only "PS Redundancy" is.
    (entry,) = [a for (name, _), a in alarms.items() if name == "bmc_log_entry"]
    assert "PS Redundancy Redundancy Lost" in entry.message
    # Xid 63 is IGNORE in NVIDIA's catalog: no alarm (info findings are not alarms).
    assert all(a.evidence.get("xid") != 63 for a in alarms.values())


def test_the_verdict_names_the_hardware_faults(run: list[Sample]) -> None:
    alarms = detect_all(run)
    verdict = judge(run, alarms)
    assert verdict.summary.startswith("hardware faults during the run (GPU 1 (NVIDIA H100")
    assert {f["rule"] for f in verdict.evidence["health_faults"]} >= {
        "HEALTH.2",
        "HEALTH.3",
        "HEALTH.5",
        "HEALTH.13",
        "HEALTH.14",
        "HEALTH.15",
        "HEALTH.16",
    }


def test_alarms_survive_the_history_and_show_on_the_page(run: list[Sample]) -> None:
    stored = [sample_from_dict(json.loads(json.dumps(sample_to_dict(s)))) for s in run]
    assert stored == run
    summary = judge_stored_run("python train.py", 5.0, stored, db=None, run_id=1)
    rules = {a.rule for a in summary.alarms}
    assert {"HEALTH.2", "HEALTH.3", "HEALTH.5", "HEALTH.14", "HEALTH.15", "HEALTH.16"} <= rules
    text = summary_text(summary)
    assert "HEALTH.15 30.0-40.0 s: fan 'FAN3' at 0 RPM: stopped" in text
    page = watch_page(summary, stored)
    # Each listed alarm is on the page (its table and the timelines' marks), escaped.
    for alarm in summary.alarms:
        if alarm.rule in (
            "HEALTH.2",
            "HEALTH.3",
            "HEALTH.5",
            "HEALTH.14",
            "HEALTH.15",
            "HEALTH.16",
        ):
            assert alarm.message.replace("'", "&#39;") in page, alarm.message
    assert "fan &#39;FAN3&#39; at 0 RPM: stopped" in page


def _metrics(sample: Sample, prior: list[Sample]) -> dict[str, list[Any]]:
    from prometheus_client import CollectorRegistry, generate_latest

    from dlrig.watch.prometheus import WatchCollector

    registry = CollectorRegistry(auto_describe=False)
    collector = WatchCollector("node-a")
    registry.register(collector)
    for s in [*prior, sample]:
        collector.update(s)
    text = generate_latest(registry).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_prometheus_exports_dcgm_and_ipmi_names(run: list[Sample]) -> None:
    families = _metrics(run[-2], run[:-2])

    def value(family: str, **labels: str) -> float:
        (found,) = [
            s.value
            for s in families[family]
            if all(s.labels.get(k) == v for k, v in labels.items())
        ]
        return found

    assert value("DCGM_FI_DEV_XID_ERRORS", gpu="1") == 63  # the last Xid of GPU 1
    assert value("DCGM_FI_DEV_XID_ERRORS", gpu="0") == 0
    assert value("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", gpu="1") == 1
    assert value("DCGM_FI_DEV_ROW_REMAP_PENDING", gpu="1") == 1
    assert value("DCGM_FI_DEV_ROW_REMAP_FAILURE", gpu="1") == 0
    assert value("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", gpu="1") == 2
    assert value("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", gpu="0") == 0
    assert value("dlrig_gpu_xid_errors", gpu="1", xid="48") == 1  # a counter: ..._total
    assert value("dlrig_gpu_xid_errors_window", gpu="1", xid="63") == 1  # 20 s: within 60 s
    assert value("ipmi_fan_speed_rpm", name="FAN3") == 0
    assert value("ipmi_fan_speed_state", name="FAN3") == 2
    assert value("ipmi_temperature_celsius", name="Inlet Temp") == 47
    assert value("ipmi_temperature_state", name="Inlet Temp") == 2
    assert value("ipmi_sensor_state", name="PSU2", type="Power Supply") == 2
    assert value("ipmi_sensor_state", type="Redundancy", name="power-supply redundancy") == 2
    assert value("dlrig_health_findings", severity="error") >= 6
    assert all(s.labels["Hostname"] == "node-a" for s in families["ipmi_fan_speed_rpm"])


def test_without_health_samples_no_health_series() -> None:
    text = exposition(Sample(t_s=1.0, host=idle_host(), job=None))
    assert "DCGM_FI_DEV_XID_ERRORS" not in text and "ipmi_" not in text


class _Bmc:
    def __init__(self, readings: list[BmcReading]) -> None:
        self.readings = readings
        self.calls = 0

    def read(self) -> BmcReading:
        self.calls += 1
        return self.readings[min(self.calls, len(self.readings)) - 1]


def test_health_sampler_paces_and_delivers_new_xids_once() -> None:
    clock = [0.0]
    log_lines = [KernelXids((), True, boot_id="b", last_seq=5)]
    new_line = XidEvent(79, "kernel_log", pci_bus_id="0000:2a:00", seq=6, boot_id="b")
    nvml = replay_nvml("health_h100_dbe_pending_remap")
    bmc = _Bmc([_bmc("healthy_legacy")])
    sampler = HealthSampler(
        nvml,
        bmc=bmc,
        kernel_log=lambda: log_lines[-1],
        refresh_s=10.0,
        bmc_refresh_s=3600.0,
        clock=lambda: clock[0],
    )
    sampler.start()
    assert bmc.calls == 1  # read once before the job starts
    first = sampler.sample()
    assert first is not None and first.bmc is not None and len(first.gpus) == 2
    assert [x.xid for x in first.xids] == [48]  # the fixture's NVML event
    clock[0] = 5.0
    assert sampler.sample() is None  # between refreshes
    log_lines.append(KernelXids((new_line,), True, boot_id="b", last_seq=6))
    clock[0] = 10.0
    second = sampler.sample()
    assert second is not None and second.bmc is None  # no new BMC reading yet
    assert [x.xid for x in second.xids] == [79]
    clock[0] = 11.0
    third = sampler.sample(force=True)  # the run's last tick
    assert third is not None and third.xids == ()
    sampler.close()


def test_unreadable_bmc_stops_the_watch_before_the_job(tmp_path: Path) -> None:
    with serve_mockup("healthy_legacy", user="U", password=PASSWORD) as served:
        sampler = HealthSampler(None, bmc=RedfishSource(RedfishOptions(served.url, "U"), "bad"))
        with pytest.raises(SourceUnreachableError):
            sampler.start()
        marker = tmp_path / "ran"
        env = {**os.environ, "DLRIG_HOME": str(tmp_path), "DLRIG_BMC_PASSWORD": "bad"}
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "dlrig",
                "watch",
                "--bmc",
                served.url,
                "--bmc-user",
                "U",
                "--",
                "touch",
                str(marker),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 2 and "was refused (HTTP 401)" in done.stderr
    assert not marker.exists()


def test_watch_cli_with_a_faulted_bmc(tmp_path: Path) -> None:
    env = {**os.environ, "DLRIG_HOME": str(tmp_path), "DLRIG_BMC_PASSWORD": PASSWORD}
    with serve_mockup("faulted_legacy", user="U", password=PASSWORD) as served:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "dlrig",
                "watch",
                "--json",
                "--interval",
                "0.2",
                "--bmc",
                served.url,
                "--bmc-user",
                "U",
                "--",
                sys.executable,
                "-c",
                "import time; time.sleep(1)",
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=90,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr  # the job's exit code
    assert PASSWORD not in done.stdout + done.stderr
    summary = json.loads(done.stdout)
    names = {(a["name"], a["evidence"].get("part")) for a in summary["alarms"]}
    assert ("fan_failed", "'System Board Fan3A'") in names
    assert ("power_supply_redundancy_lost", "'System Board PS Redundancy'") in names
    assert ("temperature_high", "'System Board Inlet Temp'") in names
    assert summary["verdict"]["summary"].startswith("hardware faults during the run")


def test_live_view_keeps_the_standing_faults_between_health_samples(run: list[Sample]) -> None:
    from dlrig.commands.watch import _LiveView
    from dlrig.report.watch import health_line, plain_line

    assert run[6].health is not None and run[6].health.bmc is not None  # 30 s: the faulted BMC
    assert "health: BMC: PSU2, FAN3, Inlet Temp" in plain_line(run[6])
    view = _LiveView("python train.py")  # no terminal here: plain lines
    for sample in run:
        standing = view._standing(sample)
    # At 45 s the sample has no health; the BMC's faults of 30 s and no Xid of the last minute
    # but 63 (20 s) and 48 (10 s) are within it.
    said = health_line(standing)
    assert said is not None and "BMC: PSU2, FAN3, Inlet Temp" in said
    assert "Xid 63 on GPU 1" in said
