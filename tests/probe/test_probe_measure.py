"""The measuring modules on this machine, kept tiny: they run, count right, and clean up."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dlrig.errors import HardwareError
from dlrig.hardware import disk as md
from dlrig.probe.measure_loader import decode, make_sample, measure_loader, worker_counts
from dlrig.probe.measure_memory import measure_memory_bandwidth, stream_array_bytes

MIB = 2**20


def _leftovers(parent: Path) -> list[Path]:
    return list(parent.glob(md.TEMP_PREFIX + "*"))


def test_disk_probe_measures_and_removes_its_temp_dir(tmp_path: Path) -> None:
    speed = md.measure_disk(tmp_path, 16 * MIB, time_limit_s=2.0, random_s=0.2)
    assert speed.file_bytes == 16 * MIB
    assert speed.cold_buffered_mb_s > 0 and speed.warm_mb_s > 0
    assert speed.cold_mb_s > 0
    assert _leftovers(tmp_path) == []


def test_disk_probe_removes_its_temp_dir_when_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object) -> float:
        assert len(_leftovers(tmp_path)) == 1  # the file exists while reading
        raise KeyboardInterrupt

    monkeypatch.setattr(md, "_sequential_read", interrupted)
    with pytest.raises(KeyboardInterrupt):
        md.measure_disk(tmp_path, 8 * MIB, time_limit_s=1.0, random_s=0.1)
    assert _leftovers(tmp_path) == []


def test_disk_probe_removes_its_temp_dir_on_sigterm(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from dlrig.hardware import disk as md
        md._random_reads = lambda *a: time.sleep(60)
        md.measure_disk(Path({str(tmp_path)!r}), 8 * 2**20, 1.0, 1.0)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while not _leftovers(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _leftovers(tmp_path), "the probe never started"
        time.sleep(0.3)
        proc.terminate()
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert _leftovers(tmp_path) == []


def test_disk_probe_refuses_a_nearly_full_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Usage:
        free = 4 * MIB

    monkeypatch.setattr(md.shutil, "disk_usage", lambda p: Usage())
    with pytest.raises(HardwareError, match="free"):
        md.measure_disk(tmp_path, 64 * MIB)
    assert _leftovers(tmp_path) == []


def test_stream_arrays_are_four_times_the_llc_within_bounds() -> None:
    llc = 32 * MIB
    assert stream_array_bytes(llc, 64 * 10**9, quick=False) == 4 * llc  # STREAM's rule
    assert stream_array_bytes(llc, 64 * 10**9, quick=True) == 2 * llc
    assert stream_array_bytes(llc, 800 * MIB, quick=False) == 100 * MIB  # an eighth of free RAM
    assert stream_array_bytes(1 * MIB, None, quick=True) == 64 * MIB  # never tiny


def test_memory_bandwidth_counts_stream_bytes() -> None:
    result = measure_memory_bandwidth(64 * MIB, threads=1, repeats=1)
    assert result.array_bytes == 64 * MIB
    assert result.copy_gb_s > 0.5 and result.triad_gb_s > 0.5
    assert result.repeats == 1


def test_worker_counts_double_up_to_the_cpu_count() -> None:
    assert worker_counts(1) == (1,)
    assert worker_counts(2) == (1, 2)
    assert worker_counts(6) == (1, 2, 4, 6)


def test_loader_decodes_synthetic_samples() -> None:
    payload = make_sample()
    assert 100_000 < len(payload) < 150_528  # compressed below the raw 224x224x3 bytes
    assert decode(payload) in (0, 1)
    scaling = measure_loader((1,), window_s=0.2)
    assert scaling.points[0].samples_per_s > 10
    assert scaling.ms_per_sample > 0
