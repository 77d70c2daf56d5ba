"""dlrig against the real training jobs timed on a lent H200 (bench/data/h200_gpu_check.json,
recorded by scripts/gpu-check; bench/bench_h200.py reports them all). No H200 row is in any
calibration: these pin the model to held-out measurements on a card it was not fitted on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_h200 as bench

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine.model import Build, GPUGroup

DATA = json.loads(bench.DATA.read_text())
H200 = load_catalog().find(GPU, bench.GPU_NAME)
BUILD = Build(name="1x H200", gpus=(GPUGroup(H200, 1),))


def test_every_recorded_job_is_predicted_at_its_own_settings() -> None:
    assert set(bench.JOBS) <= set(DATA["jobs"])
    for job in bench.JOBS:
        workload = bench.workload_of(job)
        assert workload.batch_size == DATA["jobs"][job]["batch"]
    assert bench.workload_of("bert-large-squad").flash_attention
    assert not bench.workload_of("bert-large-squad-eager").flash_attention
    assert bench.workload_of("llama-3-8b-lora").fp32_adapters  # peft's default, as it ran


@pytest.mark.parametrize(
    "job",
    [
        "resnet50",
        # its median repeat (86.8 ms) lies just under the interval (87.3-119.9 ms); counted by
        # any repeat it was inside (bench/results/h200.md counts the median)
        pytest.param("bert-large-squad", marks=pytest.mark.xfail(strict=True)),
        "llama-3-8b-lora",
    ],
)
def test_measured_step_lies_in_the_estimates_interval(job: str) -> None:
    """ResNet-50 fp16 b256: 43.8 / 44.1 / 45.5 ms measured; BERT-large SDPA b32: 80.5 / 95.4 /
    86.8 ms; Llama-3-8B LoRA (peft, fp32 adapters) b2 x 2048: 641.4 / 649.9 / 651.4 ms. The
    error against the runs' median is held to 15%, or to the runs' own spread where they differ
    more (BERT-large's runs lie up to 18.5% apart: no prediction can be held closer than the
    job repeats)."""
    result = bench.compare(job, DATA["jobs"][job], BUILD)
    assert result.within, (result.low_s, result.measured_s, result.high_s)
    spread = max(result.measured_s) / min(result.measured_s) - 1.0
    assert abs(result.error) < max(0.15, spread)


def test_gemm_time_of_llama_lora_is_the_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The newest run's profile: GEMM kernels took 320.8 ms of the LoRA step (323.5 ms in the
    first run); the model's matmul seconds at its fitted efficiency (245.9 ms / 0.776 = 317 ms)
    are within 5% of it. What the model
    had missed there was the fp32 adapters' casts and adds, not the matmuls."""
    from dlrig.model import compute, estimate
    from dlrig.model.calibration import default_calibration

    seen: list[compute.ClassTimes] = []
    class_times = compute.class_times

    def record(*args: object, **kwargs: object) -> compute.ClassTimes:
        seen.append(class_times(*args, **kwargs))  # type: ignore[arg-type]
        return seen[-1]

    monkeypatch.setattr(compute, "class_times", record)
    estimate(BUILD, bench.workload_of("llama-3-8b-lora"))
    efficiency = default_calibration().compute.matmul_efficiency["tensor_16bit"]
    modelled = seen[-1].gemm_s / efficiency
    measured = DATA["jobs"]["llama-3-8b-lora"]["profile"]["kernel_s_per_step_by_class"]["gemm"]
    assert measured == pytest.approx(0.3208, abs=5e-4)
    assert modelled == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize(
    ("job", "measured_gib", "bound"),
    [
        ("llama-3-8b-lora", 23.40, 0.06),
        ("llama-3-8b-lora-b1", 19.45, 0.03),
        ("llama-3-8b-lora-bf16-adapters", 23.17, 0.06),
        ("qwen2.5-7b-lora", 23.71, 0.06),
        ("llama-3-8b-lora-b4-no-checkpointing", 101.33, 0.12),
        ("qwen2.5-7b-lora-b4-no-checkpointing", 99.60, 0.12),
    ],
)
def test_llm_jobs_peak_tensors_are_the_measured(
    job: str, measured_gib: float, bound: float
) -> None:
    """torch.cuda.max_memory_allocated of the LoRA jobs (newest run, bytes / 2**30) against the
    model states and activations dlrig predicts. The Llama 3 8B job at batch 2 set the loss's
    gradient term (memory.LOSS_GRADIENT_COPIES); batch 1, bf16 adapters and Qwen 2.5 7B (its
    own vocabulary and shapes), measured after it was set, check it. The peak is the live
    tensors' (memory_need allocated): the loss's tensors or the recomputed layer, not both. At
    batch 1 it is the weights, adapter states, what autograd saved and the loss's 6 B gradients
    per logit (16.65 + 2.67 + 1.57 = 20.89e9 bytes against 20.88e9 measured, within 3%); the
    batch-2 jobs peak about 1.05e9 bytes above that sum, which dlrig does not count, so they
    are held to 6%, predicted low. Without checkpointing peft's fp32 adapter inputs dominate
    (memory.FP32_ADAPTER_INPUT_BYTES); transformers' fp32 RMSNorm inputs are not counted, so
    those jobs are held to 12%, predicted low."""
    result = bench.compare(job, DATA["jobs"][job], BUILD)
    assert result.measured_gb == pytest.approx(measured_gib, abs=0.01)
    assert result.predicted_gb == pytest.approx(measured_gib, rel=bound)


def test_fp32_adapters_cost_what_the_h200_measured() -> None:
    """peft's default fp32 adapters against bf16 ones (autocast_adapter_dtype=False), Llama 3
    8B LoRA at 2 x 2048 tokens with checkpointing: 651.4 ms against 476.7 ms a step on the
    H200 (newest runs), 1.37x. dlrig's casts and fp32 updates (compute.adapter_fp32_bytes)
    give 718 ms against 565 ms, 1.27x: within 10% of the measured ratio. Both runs scale and
    add each update eagerly (the bf16 run's profile: 640 bf16 scalar multiplies, 15.7 ms, and
    416 more bf16 adds than the fp32 run's: layers.eager_adapter_elems); what the fp32 run adds
    beside them, 868 copies (58 ms), 416 fp32 adds (43 ms) and fp32 SIMT GEMMs, is counted
    short."""
    fp32 = bench.compare("llama-3-8b-lora", DATA["jobs"]["llama-3-8b-lora"], BUILD)
    bf16 = bench.compare(
        "llama-3-8b-lora-bf16-adapters", DATA["jobs"]["llama-3-8b-lora-bf16-adapters"], BUILD
    )
    measured = fp32.measured_s[-1] / bf16.measured_s[-1]
    assert measured == pytest.approx(1.37, abs=0.01)
    assert fp32.predicted_s / bf16.predicted_s == pytest.approx(measured, rel=0.10)


def test_step_split_reads_the_profile_by_class() -> None:
    """bench_h200's split of the BERT-large SDPA b32 step, measured side, is the newest run's
    profile (bench/data/h200_gpu_check.json): matmuls = gemm 29.9 + attention 7.5 + conv 1.2
    = 38.6 ms, other kernels = other 32.1 + optimizer 3.9 = 36.0 ms, idle = the 86.8 ms median
    step less the 74.7 ms the GPU was busy = 12.1 ms, over 2,088 kernels; dlrig's side is its
    estimate cut at its fitted cost per kernel (kernels x gpu_kernel_s)."""
    cal = bench.default_calibration().compute
    split = {s.job: s for s in bench.step_splits(DATA, BUILD, cal)}["bert-large-squad"]
    assert split.matmuls[0] == pytest.approx(38.6e-3, abs=0.1e-3)
    assert split.other[0] == pytest.approx(36.0e-3, abs=0.1e-3)
    assert split.idle == pytest.approx(12.1e-3, abs=0.1e-3)
    assert split.kernels[0] == 2088
    assert split.per_kernel == pytest.approx(split.kernels[1] * cal.gpu_kernel_s)
    assert split.matmuls[1] + split.per_kernel + split.other[1] == pytest.approx(
        split.step[1], rel=0.01
    )
