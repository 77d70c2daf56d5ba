"""Fixtures of the watch tests (helpers in watch_helpers.py)."""

from __future__ import annotations

from typing import Any

import pytest
from watch_helpers import fixture


@pytest.fixture
def power_brake_trace() -> dict[str, Any]:
    """The heat trace's RTX 3090 (H5's fixture) with a power brake from the 4th second: the
    HW_POWER_BRAKE_SLOWDOWN bit 0x80 (NVML API reference) and the clock cut to 540 MHz."""
    data = fixture("gpu_throttling_for_heat")
    base = {
        "nvmlDeviceGetTemperature:GPU": 70,
        "nvmlDeviceGetCurrentClocksEventReasons": 0,
        "nvmlDeviceGetCurrentClocksThrottleReasons": 0,
        "nvmlDeviceGetClockInfo:SM": 1905,
    }
    brake = {
        **base,
        "nvmlDeviceGetCurrentClocksEventReasons": 0x80,
        "nvmlDeviceGetCurrentClocksThrottleReasons": 0x80,
        "nvmlDeviceGetClockInfo:SM": 540,
    }
    data["samples"] = [{"t_s": float(t), "gpus": [brake if t >= 3 else base]} for t in range(6)]
    data["scenario"] = "power_brake"
    return data
