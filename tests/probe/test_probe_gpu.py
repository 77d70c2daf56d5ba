"""The probe on a real NVIDIA GPU (run by scripts/gpu-check on a lent machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.hardware.nvml import open_nvml
from dlrig.probe.run import ProbeOptions, run_probe

pytestmark = pytest.mark.gpu


def test_probe_reads_and_loads_every_gpu(tmp_path: Path) -> None:
    backend = open_nvml()
    if backend.device_count() == 0:
        pytest.skip("no NVIDIA GPU")
    options = ProbeOptions(quick=True, paths=(tmp_path,), disk_bytes=64 * 2**20)
    try:
        result = run_probe(options, backend, load_catalog())
    finally:
        backend.close()
    assert len(result.gpus) == backend.device_count()
    gpu = result.gpus[0]
    assert gpu.reading.name and gpu.reading.memory_total_bytes
    if result.cuda.available:
        assert gpu.loaded is not None and gpu.torch is not None
        # Under load the link must have trained up from its idle Gen1 (PCIe power management).
        assert gpu.loaded.pcie_gen_current is not None and gpu.loaded.pcie_gen_current >= 2
