"""GPU memory is read in one unit (GiB, dlrig.units) at one point (memory.gpu_memory_bytes), for
the training and the serving model alike, and checked against what the cards report."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.memory import gpu_memory_bytes
from dlrig.model.serving import ServingEstimate, serving_estimate
from dlrig.units import MIB
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, WeightFormat

# Total memory nvidia-smi reports (MiB), with where it was printed. What CUDA can use is this
# less the driver's own reserve, so the card's capacity may sit at most 1% above it; the decimal
# reading of the label (80e9 bytes = 76,294 MiB for an 80 GB card) falls 6-7% below every one.
NVIDIA_SMI_MIB = [
    # github.com/NVIDIA/nccl issue 1264 (8x H100 SXM, driver 550.54.15)
    ("H100 SXM5 80GB", 81559),
    # github.com/modal-labs/modal-client pull 2797 (2025-01-23): the totals across its fleet
    ("A100 SXM4 80GB", 81920),
    ("A100 SXM4 40GB", 40960),
    # github.com/RLinf/RLinf issue 255 (2025-11-12, driver 550.163.01)
    ("GeForce RTX 4090", 24564),
    # github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference "LLaMA 3/Gaming GPUs/4080_v3.ipynb"
    ("GeForce RTX 4080", 16376),
    # github.com/noonghunna/club-3090 issues 1128 (RTX 3090) and 1261 (RTX 5090)
    ("GeForce RTX 3090", 24576),
    ("GeForce RTX 5090", 32607),
    # this repository's NVML recording of a lent H200 (tests/fixtures/nvml/h200_recorded_idle.json:
    # nvmlDeviceGetMemoryInfo v2 total 150,754,820,096 bytes)
    ("H200 SXM 141GB", 150_754_820_096 / MIB),
]


@pytest.mark.parametrize(("name", "reported_mib"), NVIDIA_SMI_MIB)
def test_a_card_holds_what_nvidia_smi_reports_for_it(name: str, reported_mib: float) -> None:
    gpu = load_catalog().find(GPU, name)
    capacity_mib = gpu_memory_bytes(gpu) / MIB
    assert reported_mib <= capacity_mib * 1.0005  # the label never undercounts the card
    assert capacity_mib <= reported_mib * 1.01


def test_memory_binds_at_the_smallest_card_of_a_mixed_build() -> None:
    """A 16 GB RTX 4080 beside a 24 GB RTX 3090: the slower card (the 3090) paces the step, the
    smaller one bounds what each holds, as `check`'s GPU.4 judges it."""
    cat = load_catalog()
    workload = load_workload("llama-3-8b-lora")
    workload = replace(workload, batch_size=1)
    alone = estimate(resolve_build({"gpus": [{"model": "RTX 3090", "count": 1}]}, "t", cat),
                     workload)  # fmt: skip
    mixed = resolve_build(
        {"gpus": [{"model": "RTX 3090", "count": 1}, {"model": "RTX 4080", "count": 1}]}, "t", cat
    )
    est = estimate(mixed, workload)
    assert alone.memory.gpu_available_gb == 24.0
    assert est.memory.gpu_available_gb == 16.0


def _local_8b_f16(output_tokens: int) -> ServingEstimate | None:
    cat = load_catalog()
    build = resolve_build({"gpus": [{"model": "RTX 4080", "count": 1}]}, "t", cat)
    w = load_workload("llama-3.1-8b-serve")
    assert w.serve is not None
    spec = replace(w.serve, engine=Engine.LOCAL, quantization=WeightFormat.BF16,
                   prompt_tokens=1, output_tokens=output_tokens, users=1)  # fmt: skip
    return serving_estimate(build, spec, w.name)


def test_llama_3_8b_in_16_bits_runs_whole_on_a_16_gb_card() -> None:
    """llama-bench ran Llama 3 8B F16 (14.96 GiB of weights) with all 33 layers on one RTX 4080
    16GB at 40.29 tokens/s (tg 1024) and 39.44 (tg 4096), and failed to allocate its context at
    8,192 tokens (XiongjieDai/GPU-Benchmarks-on-LLM-Inference README and LLaMA 3/Gaming GPUs/
    4080_v3.ipynb @aa72e0e: "cudaMalloc failed: out of memory"). Read as 16e9 bytes the card
    pushed 4% of the weights to system RAM at 1,024 tokens, and decode to a fraction of that."""
    short = _local_8b_f16(1024)
    assert short is not None
    assert short.offloaded_fraction == 0.0
    assert short.batch1_tokens_per_s == pytest.approx(40.29, rel=0.20)
    long = _local_8b_f16(8192)
    assert long is not None
    assert long.offloaded_fraction > 0.0
