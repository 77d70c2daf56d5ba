"""The health checks: one small function per condition, registered with its id (HEALTH.n) and
a docstring quoting the source of its reasoning (`findings.check`). Each takes the readings and
the context (the baseline to judge growth against, the time, the Xid catalog) and returns
findings. The guide's server sheet (section 9) promises "health monitoring of every component
... fault alarms"; these are those alarms.

- `gpu_checks`: HEALTH.1-8 (a missing GPU, ECC, remapped rows, retired pages, Xids, NVLink and
  PCIe errors, throttling); `host_checks`: HEALTH.9-12 (AER, EDAC, drives, thermal zones);
  `bmc_checks`: HEALTH.13-18 (power supplies, redundancy, fans, temperatures, voltages, the
  event log). Importing this module registers them, in that order.
"""

from dlrig.health import bmc_checks, gpu_checks, host_checks
from dlrig.health.bmc_checks import sensor_state
from dlrig.health.findings import (
    CHECKS,
    Check,
    Context,
    Finding,
    RegisteredCheck,
    check,
    run_checks,
)

__all__ = [
    "CHECKS",
    "Check",
    "Context",
    "Finding",
    "RegisteredCheck",
    "bmc_checks",
    "check",
    "gpu_checks",
    "host_checks",
    "run_checks",
    "sensor_state",
]
