"""GPU detectors on NVML traces replayed through the fake, one test per scenario."""

from __future__ import annotations

from typing import Any

from watch_helpers import fixture, replayed_samples

from dlrig.enums import Bottleneck, Modifier, Severity
from dlrig.watch.detectors import detect_all
from dlrig.watch.verdict import judge


def _by_rule(alarms: tuple[Any, ...], rule: str) -> list[Any]:
    return [a for a in alarms if a.rule == rule]


def test_gpu_heating_time_series_throttles_from_80_c_to_83_c() -> None:
    samples = replayed_samples("gpu_heating_time_series", 10)
    alarms = detect_all(samples)
    (thermal,) = _by_rule(alarms, "COOL.1")
    # The fixture sets the software thermal bit from its 5th sample (80 C, t = 5 s here) and
    # the hardware bit at 83 C with the SM clock at 1395 of 2100 MHz.
    assert (thermal.start_s, thermal.end_s) == (5.0, 10.0)
    assert thermal.evidence["temperature_c"] == 83
    assert thermal.evidence["clock_sm_mhz"] == 1395
    assert thermal.modifier is Modifier.THERMAL_THROTTLE
    # Power-capped (SW_POWER_CAP, 298 of 300 W) in the first six samples: information only.
    (cap,) = _by_rule(alarms, "WATCH.2")
    assert cap.severity is Severity.INFO and (cap.start_s, cap.end_s) == (1.0, 6.0)
    assert "298 W of its 300 W limit" in cap.message
    # HW_SLOWDOWN comes with the thermal bits here: explained, no fault raised.
    assert not _by_rule(alarms, "WATCH.1")
    verdict = judge(samples, alarms)
    assert verdict.bottleneck is Bottleneck.GPU_COMPUTE
    assert verdict.utilization is not None and abs(verdict.utilization - 0.98) < 1e-9
    assert verdict.modifiers == (Modifier.POWER_CAP, Modifier.THERMAL_THROTTLE)
    assert verdict.fix is not None and "blower" in verdict.fix


def test_gpu_heating_without_reason_bits_is_seen_by_its_falling_clock() -> None:
    # An old driver answers neither reason call: the clock falling at 83 C gives it away.
    data = fixture("gpu_heating_time_series")
    for sample in data["samples"]:
        for gpu in sample["gpus"]:
            gpu.pop("nvmlDeviceGetCurrentClocksEventReasons", None)
            gpu.pop("nvmlDeviceGetCurrentClocksThrottleReasons", None)
    for gpu in data["gpus"]:
        gpu.pop("nvmlDeviceGetCurrentClocksEventReasons", None)
        gpu.pop("nvmlDeviceGetCurrentClocksThrottleReasons", None)
    (thermal,) = _by_rule(detect_all(replayed_samples(data, 10)), "COOL.1")
    # 1395 MHz is under 90% of the run's 1950 MHz from the 7th sample, at the peak 83 C.
    assert (thermal.start_s, thermal.end_s) == (7.0, 10.0)
    assert "clock falling" in thermal.message


def test_gpu_throttling_for_heat_at_83_c() -> None:
    alarms = detect_all(replayed_samples("gpu_throttling_for_heat", 3))
    (thermal,) = _by_rule(alarms, "COOL.1")
    assert thermal.gpu == 0 and thermal.evidence["temperature_c"] == 83
    assert "1395 of 2100 MHz" in thermal.message


def test_link_trained_at_x4_under_load_and_its_gpu_straggles() -> None:
    samples = replayed_samples("link_trained_at_x4", 4)
    alarms = detect_all(samples)
    (link,) = _by_rule(alarms, "PCIE.3")
    assert link.gpu == 2 and link.modifier is Modifier.PCIE_DOWNGRADED
    assert "Gen3 x4" in link.message and "max Gen4 x16" in link.message
    (slow,) = _by_rule(alarms, "WATCH.3")
    # GPU 2 at 71% utilization against its peers' 98%: under 85% of the median.
    assert slow.gpu == 2 and slow.evidence == {
        "utilization_pct": 71.0,
        "peers_median_utilization_pct": 98.0,
    }
    assert Modifier.PCIE_DOWNGRADED in judge(samples, alarms).modifiers


def test_four_gpu_box_at_idle_links_at_gen1_are_not_a_fault() -> None:
    # Idle links train down to Gen1 to save power (ASPM): not an alarm without load.
    alarms = detect_all(replayed_samples("four_gpu_box", 3))
    assert not _by_rule(alarms, "PCIE.3")
    assert not _by_rule(alarms, "WATCH.3")  # all idle: nobody is slower under load


def test_power_brake_is_a_fault_with_its_start_time(power_brake_trace: dict[str, Any]) -> None:
    alarms = detect_all(replayed_samples(power_brake_trace, 6))
    (brake,) = _by_rule(alarms, "PSU.2")
    # The brake bit is set from the fixture's t = 3 s sample, the 4th tick (t = 4 s here).
    assert brake.severity is Severity.ERROR and (brake.start_s, brake.end_s) == (4.0, 6.0)
    assert not _by_rule(alarms, "COOL.1")


def test_lost_gpu_is_an_alarm_and_the_verdict_uses_the_gpu_that_answers() -> None:
    samples = replayed_samples("lost_gpu", 3)
    alarms = detect_all(samples)
    (lost,) = _by_rule(alarms, "WATCH.4")
    assert lost.gpu == 1 and lost.severity is Severity.ERROR
    assert "GPU is lost" in lost.message
    verdict = judge(samples, alarms)
    assert verdict.device_is_cpu is False
    assert verdict.utilization == 0.0  # GPU 0 idles at 0%; GPU 1 does not answer


def test_driver_lacking_a_call_still_reads_reasons_from_the_older_call() -> None:
    samples = replayed_samples("driver_lacking_a_call", 2)
    assert samples[0].gpus[0].clocks_event_reasons is not None
    assert not _by_rule(detect_all(samples), "COOL.1")


def test_h200_recorded_under_fp16_matmuls_holds_its_700_w_cap() -> None:
    """Recorded on a real H200 (tests/fixtures/nvml/h200_under_matmul_time_series.json, by
    scripts/gpu-check): back-to-back 8192^3 fp16 matmuls draw the card to its 700 W limit and
    NVML sets SW_POWER_CAP from the second sample, the SM clock at 1440-1500 of 1980 MHz, at
    56-60 C. A power cap at full load is information, not heat and not a fault."""
    samples = replayed_samples("h200_under_matmul_time_series", 10)
    alarms = detect_all(samples)
    (cap,) = _by_rule(alarms, "WATCH.2")
    assert cap.severity is Severity.INFO and cap.gpu == 0
    assert "701 W of its 700 W limit" in cap.message
    assert not _by_rule(alarms, "COOL.1") and not _by_rule(alarms, "WATCH.1")
    verdict = judge(samples, alarms)
    assert verdict.bottleneck is Bottleneck.GPU_COMPUTE
    assert verdict.modifiers == (Modifier.POWER_CAP,)


def test_a_cap_touched_in_bursts_is_not_read_as_a_lowered_limit() -> None:
    """The same H200 recording: at its second sample the matmuls had just started, NVML set
    SW_POWER_CAP while the sample's average draw was 448 W. "power-capped at 448 W of its
    700 W limit" read like a lowered limit (seen over real jobs: "at 253 W")."""
    (cap,) = _by_rule(detect_all(replayed_samples("h200_under_matmul_time_series", 2)), "WATCH.2")
    assert cap.message == (
        "GPU 0 is power-capped at its 700 W limit, in bursts (the sample's average draw: 448 W)"
    )
