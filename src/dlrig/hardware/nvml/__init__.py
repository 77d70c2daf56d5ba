"""NVIDIA GPUs through NVML (nvidia-ml-py): `library` is the only module of dlrig that imports
`pynvml`; `readings` holds what NVML reports, `backend` assembles readings from a calls layer.

The API (stable; `dlrig.watch` samples GPUs through it):

- `open_nvml() -> Nvml` opens the real library. It never raises: a host without the library,
  without a driver, or without GPUs gives a backend whose `system().available` is False (or whose
  `device_count()` is 0) with the reason in `system().error`.
- `Nvml` (the one `NvmlBackend` implementation, over a calls layer: pynvml here; the tests'
  replay of a recorded fixture, `tests/support/nvml_fakes.py`, which also documents the fixture
  format that `scripts/gpu-check` records):
    - `system() -> NvmlSystem`: available, error, driver_version, cuda_driver_version, device_count.
    - `device_count() -> int` (0 when NVML is unavailable).
    - `read_gpu(index) -> GpuReading` and `read_gpus() -> tuple[GpuReading, ...]`. Static
      fields (name, UUID, serial, max clocks, thresholds, power-limit range, PCIe max, ECC
      mode, which NVLinks exist) are read once per GPU; NVLink state every
      `NVLINK_REFRESH_S` (30 s) and PCIe throughput, a 20 ms window per call, every
      `PCIE_THROUGHPUT_REFRESH_S` (1 s, all GPUs' windows at once on threads); memory through
      `nvmlDeviceGetMemoryInfo` v2 where the driver has it (its `used` leaves out `reserved`).
    - `topology() -> tuple[GpuPair, ...]`: for each pair of GPUs, the nearest common PCIe
      ancestor (`TopologyLevel`) and the NVLink links joining them.
    - `close()`.
- `read_gpu(calls, index)`: one GPU read afresh through a calls layer, nothing cached (what
  `scripts/gpu-check` records).
- `GpuReading` is a frozen dataclass; every measured field may be None, which means the driver
  does not support it (its name is then in `unsupported`) or the call failed (its name and error
  are in `failed`). A GPU that fell off the bus is an entry with `lost=True` and `error` set.
  Units are in the field names (bytes, W, C, MHz, KB/s as NVML reports PCIe throughput, percent).
- `ClockEventReason` names the bits of `nvmlDeviceGetCurrentClocksEventReasons` (the older
  `...ThrottleReasons` call returns the same bits and is used when the newer one is missing).
"""

from dlrig.hardware.nvml.backend import Nvml, cuda_version_text, read_gpu
from dlrig.hardware.nvml.library import PynvmlCalls, open_nvml
from dlrig.hardware.nvml.readings import (
    NVLINK_MAX_LINKS,
    POWER_REASONS,
    THERMAL_REASONS,
    ClockEventReason,
    GpuPair,
    GpuReading,
    NvmlBackend,
    NvmlCallError,
    NvmlCalls,
    NvmlSystem,
    TopologyLevel,
)

__all__ = [
    "NVLINK_MAX_LINKS",
    "POWER_REASONS",
    "THERMAL_REASONS",
    "ClockEventReason",
    "GpuPair",
    "GpuReading",
    "Nvml",
    "NvmlBackend",
    "NvmlCallError",
    "NvmlCalls",
    "NvmlSystem",
    "PynvmlCalls",
    "TopologyLevel",
    "cuda_version_text",
    "open_nvml",
    "read_gpu",
]
