"""`dlrig watch`: run a job, sample the machine under it, find what holds it back.

- `samples`: the values recorded each tick (host, job process tree, GPUs).
- `host`: the samplers (psutil for the host and the job, `dlrig.hardware.nvml` for GPUs);
  `procstat`: the scheduler's run and wait time of a task, from /proc.
- `detectors`: pure functions over a series raising alarms with times, one per guide rule.
- `verdict`: the bottleneck with evidence, fix and the accelerator's utilization.
- `runner`: spawn, forward signals, sample, judge. `prometheus`: the /metrics exposition.
- `summary`: the JSON form that `--json` prints and the history keeps.
"""
