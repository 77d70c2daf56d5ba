"""The disk's deep-queue sequential read: fio's JSON (a recorded run), the threaded O_DIRECT
fallback on a real temp file, and measure_disk keeping the QD1 figure beside it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from dlrig.hardware import disk as md

MIB = 2**20
RECORDED = Path(__file__).with_name("fio_seqread_recorded.json")


def _direct_io_works(folder: Path) -> bool:
    probe = folder / "direct-check.bin"
    probe.write_bytes(os.urandom(MIB))
    fd = md._open_direct(probe)
    if fd is None:
        return False
    try:
        import mmap

        buffer = mmap.mmap(-1, MIB)
        try:
            os.preadv(fd, [buffer], 0)
        finally:
            buffer.close()
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        probe.unlink()


def test_recorded_fio_json_gives_its_bandwidth_and_depth() -> None:
    # Recorded with fio-3.33 on this repository's dev VM (see the file's dlrig_provenance):
    # jobs[0].read.bw_bytes = 690065439 B/s = 690.07 MB/s at iodepth 32.
    text = RECORDED.read_text()
    assert "recorded" in json.loads(text)["dlrig_provenance"]
    found = md.parse_fio_json(text)
    assert found is not None
    assert found.mb_s == pytest.approx(690.065439)
    assert found.queue_depth == 32
    assert "fio-3.33" in found.method and "iodepth 32" in found.method


def test_fio_warnings_before_the_json_are_skipped() -> None:
    text = "fio: this platform does not support io_uring\n" + RECORDED.read_text()
    found = md.parse_fio_json(text)
    assert found is not None and found.queue_depth == 32


@pytest.mark.parametrize(
    "text",
    ["", "fio: failed to open file\n", '{"jobs": []}', '{"jobs": [{"read": {"bw_bytes": 0}}]}'],
)
def test_fio_output_without_a_read_is_no_figure(text: str) -> None:
    assert md.parse_fio_json(text) is None


def test_fio_command_asks_for_direct_deep_sequential_json() -> None:
    cmd = md.fio_command("fio", Path("/x/probe.bin"), 256 * MIB, 3.0)
    for flag in ("--rw=read", "--bs=1M", "--direct=1", "--iodepth=32", "--output-format=json"):
        assert flag in cmd
    assert "--readonly" in cmd and f"--size={256 * MIB}" in cmd


def test_threaded_read_of_a_real_file_reads_at_depth_8(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(os.urandom(32 * MIB))
    found = md.threaded_direct_read(path, 32 * MIB, time_limit_s=5.0)
    if not _direct_io_works(tmp_path):
        assert found is None  # tmpfs and some network filesystems refuse O_DIRECT
        return
    assert found is not None
    assert found.queue_depth == md.READ_THREADS == 8
    assert found.mb_s > 0
    assert "8 threads" in found.method and "queue depth 8" in found.method


def test_threaded_read_needs_a_block_per_thread(tmp_path: Path) -> None:
    path = tmp_path / "small.bin"
    path.write_bytes(os.urandom(4 * MIB))
    assert md.threaded_direct_read(path, 4 * MIB, time_limit_s=1.0) is None


def test_measure_disk_keeps_qd1_and_states_the_deep_depth(tmp_path: Path) -> None:
    if not _direct_io_works(tmp_path):
        pytest.skip("O_DIRECT refused on the temp filesystem")
    speed = md.measure_disk(tmp_path, 32 * MIB, time_limit_s=3.0, random_s=0.1, use_fio=False)
    assert speed.cold_direct_mb_s is not None and speed.cold_direct_mb_s > 0  # the QD1 figure
    assert speed.deep_read_mb_s is not None and speed.deep_queue_depth == 8
    assert speed.read_mb_s == speed.deep_read_mb_s and speed.read_queue_depth == 8
    assert "queue depth 1" in speed.method and "queue depth 8" in speed.method


def test_a_failing_fio_falls_back_to_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _direct_io_works(tmp_path):
        pytest.skip("O_DIRECT refused on the temp filesystem")
    false = shutil.which("false")
    assert false is not None
    monkeypatch.setattr(md.shutil, "which", lambda name: false)  # "fio" that exits 1
    speed = md.measure_disk(tmp_path, 32 * MIB, time_limit_s=3.0, random_s=0.1)
    assert speed.deep_queue_depth == 8 and "threads" in speed.method


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed here")
def test_measure_disk_with_fio_reads_at_depth_32(tmp_path: Path) -> None:
    if not _direct_io_works(tmp_path):
        pytest.skip("O_DIRECT refused on the temp filesystem")
    speed = md.measure_disk(tmp_path, 32 * MIB, time_limit_s=3.0, random_s=0.1)
    assert speed.deep_queue_depth == 32 and "iodepth 32" in speed.method
    assert speed.deep_read_mb_s is not None and speed.deep_read_mb_s > 0


def test_without_direct_io_the_figure_is_qd1() -> None:
    speed = md.DiskSpeed("/x", MIB, 1.0, None, 500.0, 9000.0, None, False, 1.0, "m")
    assert speed.read_mb_s == 500.0 and speed.read_queue_depth == 1
