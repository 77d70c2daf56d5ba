"""`probe --train`: how a workload stands in, and the real CLI training on this CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from probe_helpers import scenario_result

from dlrig.catalog import load_catalog
from dlrig.enums import Optimizer, Precision
from dlrig.hardware.torch_train import TrainTiming
from dlrig.machine import resolve_build
from dlrig.probe import train as tr
from dlrig.probe.document import probe_build_document
from dlrig.workloads import load_workload

TINY = """\
name: tiny-cnn
batch_size: 8
precision: fp16
optimizer: sgd
input: {shape: [3, 32, 32], dtype: float32}
model: {kind: vision, params: 200000, forward_flops_per_sample: 2.0e7,
        activation_bytes_per_sample: 1.0e6}
"""


def test_resnet50_stands_in_as_8_conv_layers_with_its_params_and_flops() -> None:
    # ResNet-50 (zoo: torchvision's 25,557,032 params, 4.09 GMACs = 8.18 GFLOPs per sample):
    # C = sqrt(25.56e6 / (9 x 8)) = 596 -> 592 channels (a multiple of 8, as tensor cores take
    # them), S = sqrt(8.18e9 / (2 x 25.56e6)) = 12.6 -> 13
    standin = tr.stand_in(load_workload("resnet50"), 256, on_cpu=False, max_params=1e12)
    spec = standin.spec
    assert (spec.kind, spec.layers, spec.width, spec.size) == ("conv", 8, 592, 13)
    assert spec.precision is Precision.FP16 and spec.batch == 256
    assert standin.params == pytest.approx(25.56e6, rel=0.03)
    assert standin.forward_flops_per_sample == pytest.approx(8.18e9, rel=0.06)  # 13^2 vs 12.6^2
    assert "592 channels at 13x13" in standin.description


def test_the_conv_stand_in_is_estimated_with_its_own_28_kernels() -> None:
    """On a lent H200 (bench/data/h200_gpu_check.json) the 596-channel stand-in's fp16 step took
    19.1 ms; estimated with ResNet-50's structure (176 forward kernels, width 407) dlrig said
    38.9 ms and `probe --train` called the step the most different stage. Its own structure:
    8 x (conv, batch norm, ReLU), pool, linear, log-softmax, NLL: 28 forward kernels, 84 a
    step; the estimate is 14.9 ms."""
    from dlrig.model import compute, layers

    standin = tr.stand_in(load_workload("resnet50"), 256, on_cpu=False, max_params=1e12)
    ran = tr.stand_in_workload(load_workload("resnet50"), standin, synthetic=True)
    assert layers.structure_of(ran) == layers.CLASSIC_STRUCTURE[layers.STAND_IN_CONV]
    assert 3 * tr.CONV_LAYERS + 4 == 28
    work = layers.layer_work(ran)
    assert compute.step_kernels(work, ran, 256) == 84
    from dlrig.model import estimate

    h200 = resolve_build({"name": "h200", "gpus": [{"model": "H200 SXM 141GB"}]}, "test")
    assert 0.7 < estimate(h200, ran).step_time_s / 0.0191 < 1.3  # 19.1 ms measured (596 wide)


def test_a_cpu_loop_trains_in_fp32() -> None:
    standin = tr.stand_in(load_workload("resnet50"), 8, on_cpu=True, max_params=1e12)
    assert standin.spec.precision is Precision.FP32


def test_an_8bit_optimizer_stands_in_as_torchs_adamw() -> None:
    """torch has no 8-bit AdamW (bitsandbytes and torchao are not dependencies): the loop
    trains AdamW, and the estimate beside it counts AdamW's state and step bytes too."""
    import dataclasses

    job = dataclasses.replace(
        load_workload("gpt2"), optimizer=Optimizer.ADAMW_8BIT, paged_optimizer=True
    )
    standin = tr.stand_in(job, 4, on_cpu=False, max_params=1e12)
    assert standin.spec.optimizer is Optimizer.ADAMW
    ran = tr.stand_in_workload(job, standin, synthetic=True)
    assert ran.optimizer is Optimizer.ADAMW and not ran.paged_optimizer


def test_a_graphed_job_stands_in_as_the_eager_loop_that_ran() -> None:
    """The probe's loop launches its kernels one by one: the estimate beside it is of an eager
    step, whatever the workload's `cuda_graphs` says."""
    import dataclasses

    job = dataclasses.replace(load_workload("gpt2"), cuda_graphs=True)
    standin = tr.stand_in(job, 4, on_cpu=False, max_params=1e12)
    assert not tr.stand_in_workload(job, standin, synthetic=True).cuda_graphs


def test_gpt2_stands_in_as_its_transformer_blocks() -> None:
    # GPT-2 small: 12 layers, width 768, 12 heads, 1024 tokens (zoo, from its HF config)
    standin = tr.stand_in(load_workload("gpt2"), 4, on_cpu=False, max_params=1e12)
    spec = standin.spec
    assert (spec.kind, spec.layers, spec.width, spec.heads, spec.size) == (
        "transformer", 12, 768, 12, 1024,
    )  # fmt: skip
    assert standin.params == 12 * (12 * 768**2 + 13 * 768)  # no embeddings or head


def test_a_model_larger_than_the_device_keeps_the_layers_that_fit() -> None:
    # Llama 3 8B: 32 layers of width 4096 (12 x 4096^2 + ... = 201.4 M params each); an
    # 80 GB card at 32 bytes a parameter takes 2.5 G params: 12 layers.
    standin = tr.stand_in(load_workload("llama-3-8b"), 1, on_cpu=False, max_params=80e9 / 32)
    assert standin.spec.layers == 12
    assert "12 of its 32 layers" in standin.description


def _dlrig(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )


@pytest.mark.slow  # two real training runs through the CLI: about 12 s on 2 cores
def test_probe_train_runs_a_tiny_workload_on_the_cpu(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    job = tmp_path / "tiny.yaml"
    job.write_text(TINY)
    out = _dlrig("probe", "--train", str(job), "--steps", "3", "--batch", "4", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["workload"] == "tiny-cnn" and data["batch"] == 4
    assert data["timing"]["steps"] == 3 and data["timing"]["device"].startswith("cpu")
    assert data["timing"]["precision"] == "fp32"  # fp16 workload, CPU loop
    step = data["rows"][0]
    assert step["measured_s"] > 0 and step["estimated_s"] > 0
    assert step["ratio"] == pytest.approx(step["measured_s"] / step["estimated_s"])
    assert data["most_different"] == step["stage"]
    assert data["compute_device"].startswith("CPU")
    assert "no GPU in the build: the device computing is the CPU" in data["assumptions"]
    table = _dlrig("probe", "--train", str(job), "--steps", "2", "--batch", "2")
    assert table.returncode == 0, table.stderr
    assert "measured vs estimated" in table.stdout and "differs most" in table.stdout


def test_probe_train_without_torch_is_one_line_exit_2(tmp_path: Path) -> None:
    # A `torch` that cannot be imported, first on the path: as on a machine without torch.
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "torch.py").write_text("raise ImportError('No module named torch')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), *sys.path])}
    out = _dlrig("probe", "--train", "resnet50", env=env)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'dlrig[torch]'" in lines[0]
    assert "Traceback" not in out.stderr


def test_probe_train_with_an_unknown_workload_is_one_line_exit_2() -> None:
    out = _dlrig("probe", "--train", "resnet5O")
    assert out.returncode == 2 and "resnet50" in out.stderr and "Traceback" not in out.stderr


def _timing(step_s: float, copy_s: float | None) -> TrainTiming:
    """A loop's timing as a CUDA run would give it (synthesised: no GPU here)."""
    return TrainTiming(
        "cuda: GeForce RTX 3090 (synthesised)", Precision.FP16, 26_000_000, 5, 30, step_s,
        step_s * 0.98, step_s * 1.05, 256 / step_s, copy_s, "synthesised", "test",
    )  # fmt: skip


def test_on_a_gpu_the_copy_is_a_second_stage_and_the_furthest_is_named() -> None:
    doc = probe_build_document(scenario_result("four_gpu_box"), load_catalog())["build"]
    build = tr.single_device_build(resolve_build(doc, "probe", load_catalog()), on_cpu=False)
    assert build.gpu_count == 1  # the loop uses one GPU: the estimate is of one GPU
    workload = load_workload("resnet50")
    standin = tr.stand_in(workload, 256, on_cpu=False, max_params=1e12)
    estimated = tr.compare(workload, standin, _timing(1.0, 1.0), build)
    step, copy = estimated.rows
    assert copy.stage == "pcie (one batch of inputs, pinned)" and copy.estimated_s > 0
    assert estimated.compute_device == "GeForce RTX 3090"
    # the step measured right at the estimate, the copy 4x slower: the copy differs most
    at = tr.compare(workload, standin, _timing(step.estimated_s, 4 * copy.estimated_s), build)
    assert at.rows[0].ratio == pytest.approx(1.0) and at.rows[1].ratio == pytest.approx(4.0)
    assert at.most_different == copy.stage
    data = tr.comparison_json(at)
    assert data["estimated_step_s"] == step.estimated_s and data["rows"][1]["ratio"] == 4.0
