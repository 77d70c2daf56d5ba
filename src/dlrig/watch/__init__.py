"""`dlrig watch`: run a job, sample the machine under it, find what holds it back.

- `samples`: the values recorded each tick (host, job process tree, GPUs).
- `host`: the samplers (psutil for the host and the job, `dlrig.hardware.nvml` for GPUs; a
  task's scheduler time from `dlrig.hardware.host`).
- `detectors`: pure functions over a series raising alarms with times, one per guide rule.
- `verdict`: the bottleneck with evidence, fix and the accelerator's utilization.
- `runner`: spawn, forward signals, sample, judge. `prometheus`: the /metrics exposition.
- `summary`: the typed `WatchSummary` that `--json` prints and the history keeps, and the
  judging of a stored run that never finished.
"""
