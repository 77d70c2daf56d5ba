"""Server and GPU health, judged from readings: pure functions from what NVML, the kernel log,
sysfs, smartctl and the BMC reported (`inputs.HealthInputs`) to findings (`checks`), each
registered with its id (HEALTH.n), and the report (`report.HealthReport`).

- `inputs`: the readings, the flat counters and the `Baseline` an earlier reading leaves, so a
  counter's growth since the last probe or saved reading is judged, not its lifetime total.
- `xid`: NVIDIA's Xid catalog as data (`data/xid_catalog.toml`, source and date inside), each
  resolution bucket read as an action and a severity.
- `checks`: the checks (`gpu_checks`, `host_checks`, `bmc_checks`, each on `findings`'
  registry); `report`: `judge_health(...) -> HealthReport` and the summary that `probe` and
  `check probe:latest` carry.
"""

from dlrig.health.checks import CHECKS, Context, Finding, run_checks
from dlrig.health.inputs import (
    Baseline,
    HealthInputs,
    baseline_from,
    baseline_from_dict,
    baseline_to_dict,
    counters,
)
from dlrig.health.report import HealthReport, health_summary, judge_health, verdict_line
from dlrig.health.xid import XidCatalog, load_xid_catalog

__all__ = [
    "CHECKS",
    "Baseline",
    "Context",
    "Finding",
    "HealthInputs",
    "HealthReport",
    "XidCatalog",
    "baseline_from",
    "baseline_from_dict",
    "baseline_to_dict",
    "counters",
    "health_summary",
    "judge_health",
    "load_xid_catalog",
    "run_checks",
    "verdict_line",
]
