"""The closed loop (issue #12): the saved machine carries a `measured:` block, and `estimate`,
`check` and `upgrade` use its figures in place of datasheet and achievable rates."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from probe_helpers import disk, scenario_result

from dlrig.catalog import load_catalog
from dlrig.enums import Precision
from dlrig.hardware.torch_cuda import GpuBandwidth, MatmulResult
from dlrig.history import db
from dlrig.history.probes import save_probe
from dlrig.machine import resolve_build
from dlrig.machine.document import build_to_document
from dlrig.model.estimate import estimate
from dlrig.model.rates import achievable_matmul_tflops
from dlrig.probe.document import probe_build_document
from dlrig.probe.report import probe_report
from dlrig.probe.result import ProbeResult
from dlrig.workloads.loader import load_workload

CATALOG = load_catalog()
RTX_3090 = "GeForce RTX 3090"
# The RTX 3090's datasheet 16-bit tensor rate (FP32 accumulate) is 71 TFLOPS (catalog,
# NVIDIA's Ampere GA102 whitepaper): the probe "measures" half of it, 35.5.
HALF_DATASHEET_FP16 = 35.5


def _torch(index: int, fp16: float) -> GpuBandwidth:
    matmul = (
        MatmulResult(Precision.FP32, 30.0, 8192, 20, "test"),
        MatmulResult(Precision.FP16, fp16, 8192, 20, "test"),
        MatmulResult(Precision.FP8, None, 8192, 0, "no FP8"),
    )
    return GpuBandwidth(index, RTX_3090, 20.1, 9.5, 20.5, 9.0, 800.0, matmul, 2**28)


def _probed(fp16: float = HALF_DATASHEET_FP16) -> ProbeResult:
    """The replayed 4x RTX 3090 box with torch figures (GPU 2 the slowest at fp16) and an
    NVMe drive fast enough that the GPUs, not the disk, set the ResNet-50 step."""
    result = scenario_result("four_gpu_box", disks=(disk(7000.0, "nvme0n1", False),))
    gpus = tuple(
        dataclasses.replace(g, torch=_torch(g.index, fp16 + (0 if g.index == 2 else 5)))
        for g in result.gpus
    )
    return dataclasses.replace(result, gpus=gpus, p2p_gb_s=((None, 11.0), (12.5, None)))


def test_the_probe_build_carries_what_was_measured() -> None:
    build = probe_build_document(_probed(), CATALOG)["build"]
    measured = build["measured"]
    assert measured["taken"] == "2026-01-01T00:00:00+00:00"
    assert [g["index"] for g in measured["gpus"]] == [0, 1, 2, 3]
    assert measured["gpus"][2] == {
        "model": RTX_3090,
        "index": 2,
        "matmul_tflops": {"fp32": 30.0, "fp16": 35.5},  # FP8 not measured: left out
        "memory_bandwidth_gb_s": 800.0,
        "h2d_pinned_gb_s": 20.1,
        "h2d_pageable_gb_s": 9.5,
    }
    assert measured["p2p_gb_s"] == 11.0  # the slowest link of the matrix
    assert measured["storage"][0]["read_mb_s"] == 7000.0  # probe_helpers' disk, QD1 only
    assert measured["storage"][0]["read_queue_depth"] == 1
    assert "loader_ms_per_sample_per_core" not in measured  # the replayed probe ran no loader


def test_measured_block_round_trips_through_the_build_loader() -> None:
    doc = probe_build_document(_probed(), CATALOG)["build"]
    build = resolve_build(doc, "probe", CATALOG)
    assert build.measured is not None
    # the slowest of the four cards stands for the group
    assert build.measured.matmul_tflops(RTX_3090, Precision.FP16) == HALF_DATASHEET_FP16
    assert build_to_document(build, CATALOG) == doc
    assert resolve_build(build_to_document(build, CATALOG), "probe", CATALOG) == build


def test_measured_matmul_at_half_the_datasheet_slows_the_estimate_and_says_so() -> None:
    build = resolve_build(probe_build_document(_probed(), CATALOG)["build"], "probe", CATALOG)
    bare = dataclasses.replace(build, measured=None)
    workload = load_workload("resnet50")  # fp16 on the tensor cores
    with_probe, datasheet = estimate(build, workload), estimate(bare, workload)
    # achievable fp16 without the probe: 76.34 TFLOPS (a published torch.mm measurement in
    # model/data/achievable_rates.toml); the probe's 35.5 is 0.47 of it.
    assert achievable_matmul_tflops(build.gpus[0].gpu, Precision.FP16) == 76.34
    assert with_probe.step_time_s > datasheet.step_time_s
    compute = [e.stages_s[e.bottleneck.GPU_COMPUTE] for e in (with_probe, datasheet)]
    assert compute[0] > 1.5 * compute[1]
    assert (
        "matmul fp16 from probe measurement 2026-01-01: 35.5 TFLOPS (GeForce RTX 3090 datasheet 71)"
        in with_probe.assumptions
    )
    assert not any("probe measurement" in a for a in datasheet.assumptions)


def test_measured_rates_replace_the_model_s_own() -> None:
    build = resolve_build(probe_build_document(_probed(), CATALOG)["build"], "probe", CATALOG)
    est = estimate(build, load_workload("resnet50"))
    texts = " | ".join(est.assumptions)
    assert "GPU memory bandwidth from probe measurement 2026-01-01: 800 GB/s" in texts
    assert "host-to-device pinned copies from probe measurement 2026-01-01: 20.1 GB/s" in texts
    assert "disk read from probe measurement 2026-01-01: 7000 MB/s at queue depth 1" in texts
    assert "peer-to-peer measurement 2026-01-01: 11 GB/s" in texts  # caps the modelled busbw


def _run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "DLRIG_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, env=env, check=False
    )


def test_probe_save_then_estimate_probe_latest_uses_the_measurement(tmp_path: Path) -> None:
    result = _probed()
    document = probe_build_document(result, CATALOG)
    home = tmp_path / "home"
    conn = db.connect(db.database_path(home))
    try:
        save_probe(conn, probe_report(result, (), document))
    finally:
        conn.close()
    out = _run("estimate", "probe:latest", "--workload", "resnet50", "--json", home=home)
    assert out.returncode == 0, out.stderr
    measured = json.loads(out.stdout)
    assert any("matmul fp16 from probe measurement" in a for a in measured["assumptions"])
    bare = {k: v for k, v in document["build"].items() if k != "measured"}
    (tmp_path / "bare.yaml").write_text(yaml.safe_dump(bare))
    out = _run(
        "estimate", str(tmp_path / "bare.yaml"), "--workload", "resnet50", "--json", home=home
    )
    assert out.returncode == 0, out.stderr
    datasheet = json.loads(out.stdout)
    assert measured["step"]["time_s"] > datasheet["step"]["time_s"]
    check = _run("check", "probe:latest", home=home)
    assert check.returncode in (0, 1) and "Traceback" not in check.stderr


BUILD = {"gpus": [{"model": "RTX 3090", "count": 2}], "storage": ["Samsung 990 Pro 2TB"]}


@pytest.mark.parametrize(
    ("measured", "expected"),
    [
        (
            {
                "taken": "2026-12-03",
                "gpus": [{"model": "RTX 3090", "matmul_tflops": {"fp16": ".inf"}}],
            },
            "measured.gpus.0.matmul_tflops.fp16",
        ),
        (
            {"taken": "2026-12-03", "storage": [{"model": "Samsung 990 Pro 2TB", "read_mb_s": -5}]},
            "measured.storage.0.read_mb_s",
        ),
        (
            {"taken": "2026-12-03", "gpus": [{"model": "RTX 4090", "memory_bandwidth_gb_s": 900}]},
            "measured.gpus.0.model",
        ),
        ({"taken": "yesterday"}, "measured.taken"),
        ({"taken": "2026-12-03", "allreduce_busbw_gb_s": 10}, "allreduce_gpus"),
        ({"taken": "2026-12-03", "ram_bandwidth_gb_s": 1e9}, "measured.ram_bandwidth_gb_s"),
        ({"taken": "2026-12-03", "hbm": 3}, "measured.hbm"),
    ],
)
def test_a_bad_measured_block_is_one_line_naming_the_field(
    tmp_path: Path, measured: dict[str, object], expected: str
) -> None:
    path = tmp_path / "build.yaml"
    text = yaml.safe_dump({**BUILD, "measured": measured}).replace("'.inf'", ".inf")
    path.write_text(text)
    out = _run("check", str(path), home=tmp_path / "home")
    assert out.returncode == 2, out.stdout
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("dlrig: error: ") and expected in lines[0], out.stderr
    assert str(path) in lines[0] and "Traceback" not in out.stderr


def test_catalog_spelling_of_a_measured_part_is_accepted() -> None:
    gpus = [{"model": "rtx 3090", "matmul_tflops": {"fp16": 40}}]
    measured = {"taken": "2026-12-03", "gpus": gpus, "allreduce_busbw_gb_s": 9.0}
    doc = {**BUILD, "measured": {**measured, "allreduce_gpus": 2}}
    build = resolve_build(doc, "b.yaml", CATALOG)
    assert build.measured is not None
    assert build.measured.matmul_tflops(RTX_3090, Precision.FP16) == 40
    est = estimate(build, load_workload("resnet50"))
    assert any(
        a == "all-reduce bus bandwidth from probe measurement 2026-12-03: 9 GB/s across 2 GPUs"
        for a in est.assumptions
    )


def test_a_probe_that_finds_no_peer_access_says_so() -> None:
    """Where no pair of GPUs can access its peer (torch.cuda.can_device_access_peer false for
    every pair: a VM's passed-through GPUs, GeForce cards), the block says `peer_to_peer:
    false` in place of a P2P rate, and the build read back carries it to the model."""
    probed = dataclasses.replace(_probed(), p2p_gb_s=((None, None), (None, None)))
    doc = probe_build_document(probed, CATALOG)["build"]
    assert doc["measured"]["peer_to_peer"] is False
    assert "p2p_gb_s" not in doc["measured"]
    measured = resolve_build(doc, "probe", CATALOG).measured
    assert measured is not None and measured.peer_to_peer is False
    assert "peer_to_peer" not in probe_build_document(_probed(), CATALOG)["build"]["measured"]


def test_a_probe_under_nccl_p2p_disable_records_no_peer_to_peer() -> None:
    """The cards reach their peers (a P2P rate is measured), but NCCL_P2P_DISABLE=1 in the
    probe's environment turns NCCL's P2P transport off, NVLink included (NCCL environment
    variables docs): the block keeps the measured rate and says `peer_to_peer: false`, and the
    model stages the collectives through host memory. Lambda's 2022 runs under it kept 0.60 of
    one A100's GNMT rate a GPU on two NVSwitch-joined A100s (scripts/calibration_data.py)."""
    probed = dataclasses.replace(_probed(), nccl_p2p_disabled=True)
    measured_block = probe_build_document(probed, CATALOG)["build"]["measured"]
    assert measured_block["peer_to_peer"] is False
    assert measured_block["p2p_gb_s"] == 11.0  # the matrix's slowest pair, as without it
    build = resolve_build(probe_build_document(probed, CATALOG)["build"], "probe", CATALOG)
    assert build.measured is not None and build.measured.peer_to_peer is False
    [line] = [a for a in estimate(build, load_workload("gnmt")).assumptions if "NCCL" in a]
    assert "measured peer-to-peer but recorded it off for NCCL (NCCL_P2P_DISABLE)" in line
