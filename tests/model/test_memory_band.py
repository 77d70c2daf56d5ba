"""The interval a training job's memory carries (memory.MEMORY_RATIO_BAND) is the one the memory
calibration sources give (bench/held_out.memory_band, scripts/interval_band.py's method: the
10th/90th percentile of measured / predicted tensors over the H200 jobs' and torchtune's peaks,
each source weighing 1, widened until the sources, each left out in turn, have 80% of their
rows inside the others' band); an
estimate shows it around its need, and the GPT-2 jobs' peaks are what transformers' code
keeps."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine import resolve_build
from dlrig.machine.model import Build, GPUGroup
from dlrig.model import estimate
from dlrig.model.memory import (
    AUTOCAST_NEW_GELU_SAVED_BYTES,
    MEMORY_RATIO_BAND,
    transformer_layer_activation_bytes,
)
from dlrig.units import GIB
from dlrig.workloads import load_workload

REPO = Path(__file__).resolve().parents[2]


def _bench() -> None:
    for folder in ("scripts", "bench"):
        if str(REPO / folder) not in sys.path:
            sys.path.insert(0, str(REPO / folder))


def test_the_shipped_memory_band_is_what_the_calibration_peaks_give() -> None:
    _bench()
    import held_out

    assert held_out.memory_calibration_sources() == (
        "h200_memory",
        "torchtune_memory",
        "torchtitan_memory",
        "fsdp_qlora_memory",
        "litgpt_memory",
    )
    assert held_out.memory_band() == MEMORY_RATIO_BAND == (0.952, 1.23)


def test_each_memory_calibration_source_is_judged_by_the_others_band() -> None:
    """Each calibration source is judged by the band the other four give, never by the
    shipped band its own rows helped set: five sources, five different bands."""
    _bench()
    import held_out

    bands = held_out.memory_left_out_bands(held_out.memory())
    assert set(bands) == {
        "h200_memory",
        "torchtune_memory",
        "fsdp_qlora_memory",
        "torchtitan_memory",
        "litgpt_memory",
    }
    assert bands["torchtune_memory"] != MEMORY_RATIO_BAND
    assert len(set(bands.values())) == 5


def test_a_training_estimate_carries_the_band_around_its_tensors() -> None:
    """GPT-2 at batch 12 on one RTX 4090: the need is tensors x 1.05 (allocator share,
    calibration.toml) + 0.8 GiB of CUDA context; the interval scales the tensors by 0.952 and
    1.23 (MEMORY_RATIO_BAND) and keeps the context."""
    build = resolve_build(
        {"name": "1x 4090", "gpus": [{"model": "GeForce RTX 4090", "count": 1}]}, "t",
        load_catalog(None),
    )  # fmt: skip
    m = estimate(build, load_workload("gpt2")).memory
    tensors = m.model_states_gb + m.activations_gb
    assert m.gpu_required_gb == pytest.approx(tensors * 1.05 + 0.8)
    assert m.gpu_required_gb_low == pytest.approx(tensors * 0.952 * 1.05 + 0.8)
    assert m.gpu_required_gb_high == pytest.approx(tensors * 1.23 * 1.05 + 0.8)


def test_a_serving_estimate_carries_no_memory_band() -> None:
    build = resolve_build(
        {"name": "1x H100", "gpus": [{"model": "H100 SXM5 80GB", "count": 1}]}, "t",
        load_catalog(None),
    )  # fmt: skip
    m = estimate(build, load_workload("llama-3.1-8b-serve")).memory
    assert m.gpu_required_gb_low is None and m.gpu_required_gb_high is None


def test_autocast_new_gelu_keeps_fp32_copies() -> None:
    """transformers' NewGELU under autocast keeps pow's fp32 input copy, tanh's fp32 output,
    0.5 x at 16 bits and 1 + tanh in fp32: 14 bytes per f-wide element where one GELU kernel
    keeps 2, so a GPT-2 layer (s 1024, h 768, f 3072) keeps 12 x 1024 x 3072 = 37,748,736
    bytes more per sample."""
    plain = transformer_layer_activation_bytes(1024, 768, 12, selective_recompute=True)
    new_gelu = transformer_layer_activation_bytes(
        1024, 768, 12, selective_recompute=True,
        activation_saved_bytes=AUTOCAST_NEW_GELU_SAVED_BYTES,
    )  # fmt: skip
    assert new_gelu - plain == 12 * 1024 * 3072 == 37_748_736


def test_gpt2_h200_peaks_within_ten_percent() -> None:
    """transformers' GPT-2 (fp32 weights, bf16 autocast, batch 12 x 1024) peaked at
    20,726,034,944 bytes allocated (19.30 GiB; dropout 0: 20,497,183,232, 19.09 GiB) on the
    lent H200 (bench/data/h200_gpu_check.json); dlrig counted 12.4 GiB before NewGELU's fp32
    tensors, 17.5 and 17.2 GiB with them, 17.7 and 17.5 GiB with the fp32 residual stream and
    norm inputs autocast keeps (memory.RESIDUAL_BYTES_FP32) and the gradients the backward
    makes as it frees the activations (memory.MemoryNeed.peak_tensor_bytes): within 10%,
    still low."""
    _bench()
    import bench_h200 as bench

    data = json.loads(bench.DATA.read_text())
    gpu = load_catalog().find(GPU, bench.GPU_NAME)
    build = Build(name="1x H200", gpus=(GPUGroup(gpu, 1),))
    for job, peak_bytes in (("gpt2", 20_726_034_944), ("gpt2-no-dropout", 20_497_183_232)):
        result = bench.compare(job, data["jobs"][job], build)
        assert result.measured_gb == pytest.approx(peak_bytes / GIB)
        assert -0.10 < result.predicted_gb / result.measured_gb - 1.0 < -0.05
