"""The detectors' thresholds, each with why it is where it is; the verdict shares them."""

from __future__ import annotations

# The GPU is "busy" when NVML's utilization (the share of the sample period in which a kernel
# ran) is at least this; under it, the job waits for something else more than it computes.
GPU_BUSY_PCT = 50
# A load light enough that links may train down to save power (PCIe ASPM): below it, a
# slow link is not a fault.
GPU_LOADED_PCT = 10
# Saturation: a CPU, a loader worker or a disk busy at least this share of the interval.
SATURATED_RATIO = 0.9
# A host condition must last this many samples: one busy interval is a spike (a checkpoint
# written, an epoch starting), not the job's steady state. GPU reason bits count at once.
SUSTAINED_SAMPLES = 2
# Swap traffic above this is the machine paging the job's memory, not background noise.
SWAP_MB_S = 1.0
# COOL.1: "GPUs raise clocks and power until a temperature limit (usually 80 C)".
THROTTLE_TEMP_C = 80
# A clock this far under the GPU's highest of the run is a slowdown, not boost jitter.
CLOCK_DROP_RATIO = 0.10
# GPU memory at or above this share of the total: the next allocation may fail (GPU.2).
MEMORY_FULL_RATIO = 0.95
# A GPU this much below the median of its peers (utilization or SM clock) holds back every
# synchronous step of a data-parallel job.
STRAGGLER_RATIO = 0.85
