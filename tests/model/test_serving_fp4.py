"""4-bit float weights (NVFP4, MXFP4) in the serving model: their bits with the block scales,
their matmuls on FP4 tensor cores or dequantized where a card has none."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.errors import ValidationError
from dlrig.machine import resolve_build
from dlrig.model import serving_memory as mem
from dlrig.model.serving import (
    achievable_matmul_flops_s,
    compute_precision,
    fp4_matmul_tflops,
    fp4_per_fp8_rate,
    graphics_blackwell,
    serving_estimate,
)
from dlrig.workloads import load_workload, resolve_workload
from dlrig.workloads.serving import ServeSpec, WeightFormat


def _spec(**changes: object) -> ServeSpec:
    spec = load_workload("llama-3.1-8b-serve").serve
    assert spec is not None
    return replace(spec, **changes)  # type: ignore[arg-type]


def _gpu(name: str) -> GPU:
    return load_catalog(None).find(GPU, name)


def test_fp4_weights_carry_their_block_scales() -> None:
    """NVFP4: E2M1 values with an FP8 (E4M3) scale per 16, 4.5 bits (NVIDIA technical blog,
    "Introducing NVFP4 ...", 2025-06-24); MXFP4: an E8M0 scale per 32, 4.25 bits (OCP MX
    specification v1.0). Llama 3.1 8B's layers then take 4.5/16 and 4.25/16 of their bf16
    bytes; the embedding and head stay 16-bit in a batched server."""
    nvfp4, mxfp4 = _spec(quantization=WeightFormat.NVFP4), _spec(quantization=WeightFormat.MXFP4)
    assert mem.weight_bits(nvfp4) == 4.5
    assert mem.weight_bits(mxfp4) == 4.25
    bf16 = _spec(quantization=WeightFormat.BF16)
    layers_bf16 = mem.weight_bytes(bf16) - mem.embedding_params(bf16) * 2
    layers_nvfp4 = mem.weight_bytes(nvfp4) - mem.embedding_params(nvfp4) * 2
    assert layers_nvfp4 == pytest.approx(layers_bf16 * 4.5 / 16)


def test_fp4_matmuls_run_at_what_b200_kernels_reach_and_at_16_bits_on_hopper() -> None:
    """Blackwell's tensor cores multiply FP4 at twice FP8 on the datasheet (B200: 4.5 and 9
    PFLOPS dense, DGX B200 datasheet), but NVFP4 GEMMs on a B200 ran 1.24x FP8 ones on the same
    shape (2,895 against 2,341 TFLOPS at M = 1,024: vllm-project/vllm#20646, #19566), and
    that is the gain taken. Hopper's cores have no FP4, so NVFP4 weights are dequantized to 16
    bits there, the rate of bf16 weights."""
    b200, h100 = _gpu("B200 SXM 180GB"), _gpu("H100 SXM5 80GB")
    nvfp4, fp8, bf16 = (_spec(quantization=WeightFormat(q)) for q in ("nvfp4", "fp8", "bf16"))
    assert fp4_per_fp8_rate(b200) == 2.0
    assert achievable_matmul_flops_s(b200, nvfp4) == pytest.approx(
        1.24 * achievable_matmul_flops_s(b200, fp8)
    )
    assert achievable_matmul_flops_s(h100, nvfp4) == achievable_matmul_flops_s(h100, bf16)


def test_fp4_on_blackwell_graphics_dies_runs_at_what_an_rtx_5090_reaches() -> None:
    """Blackwell's graphics dies (sm_120) multiply block-scaled FP4 at full rate, GeForce
    included, and cuBLASLt's NVFP4 GEMMs reached 1,310 of an RTX 5090's 1,676 dense TFLOPS at
    4096^3 (Dao-AILab/quack#153): 0.78 of the dense FP4 peak, twice the full-rate FP8. The
    5090's catalog FP8 (419) is the FP32-accumulate rate, half its full rate: 4 x 419 x 0.78 =
    1,307. The RTX PRO 6000 Server Edition's FP8 (936) is full rate: 2 x 936 x 0.78 = 1,460.
    The B200 keeps its own kernels' 1.24x FP8 (vllm-project/vllm#20646, #19566)."""
    assert graphics_blackwell(_gpu("GeForce RTX 5090"))
    assert not graphics_blackwell(_gpu("B200 SXM 180GB"))
    assert fp4_matmul_tflops(_gpu("GeForce RTX 5090")) == pytest.approx(4 * 419 * 0.78)
    assert fp4_matmul_tflops(_gpu("RTX PRO 6000 Server")) == pytest.approx(2 * 936 * 0.78)
    assert fp4_matmul_tflops(_gpu("H100 SXM5 80GB")) is None


def test_fp4_decode_is_faster_than_fp8_by_about_the_bytes_it_saves() -> None:
    """Batch-1 decode reads every weight once a token: on one RTX 5090, NVFP4 Llama 3.1 8B
    reads about 4.5/8 of FP8's layer bytes, so it decodes faster, by less than 8/4.5 (the
    16-bit head, the KV cache and per-layer launches do not shrink)."""
    build = resolve_build(
        {"name": "5090", "gpus": [{"model": "GeForce RTX 5090", "count": 1}]}, "t", None
    )
    fast = serving_estimate(build, _spec(quantization=WeightFormat.NVFP4), "8b")
    slow = serving_estimate(build, _spec(quantization=WeightFormat.FP8), "8b")
    assert fast is not None and slow is not None
    ratio = fast.batch1_tokens_per_s / slow.batch1_tokens_per_s
    assert 1.2 < ratio < 8 / 4.5
    assert any("FP4 GEMMs reach 1,307 TFLOPS" in n for n in fast.notes)


def test_nvfp4_on_the_local_engine_is_refused_with_the_formats_it_has() -> None:
    """llama.cpp's GGUF types include MXFP4 but no NVFP4."""
    doc = {
        "name": "local nvfp4",
        "model": "llama-3.1-8b-serve",
        "serve": {**_serve_block(), "engine": "local", "quantization": "nvfp4"},
    }
    with pytest.raises(ValidationError) as err:
        resolve_workload(doc, "job.yaml")
    assert "mxfp4" in str(err.value)


def _serve_block() -> dict[str, object]:
    spec = _spec()
    return {
        "layers": spec.layers, "hidden_size": spec.hidden_size, "heads": spec.heads,
        "kv_heads": spec.kv_heads, "head_dim": spec.head_dim, "vocab_size": spec.vocab_size,
    }  # fmt: skip


def test_llama_cpp_prefill_runs_at_the_fp16_accumulate_rate() -> None:
    """llama.cpp multiplies prompt-sized matmuls with cuBLAS at CUBLAS_COMPUTE_16F
    (ggml-cuda.cu): a GeForce card does that at twice its FP32-accumulate rate (RTX 4090:
    330.3 against 165.2 TFLOPS, NVIDIA Ada GeForce whitepaper), an A100 at the same rate. The
    local engine's 0.335 share of that rate gives the 4090 the 0.67 of its 16-bit rate the
    llama-bench rows were fitted at, and the A100 half of that."""
    from dlrig.model.rates import achievable_matmul_tflops
    from dlrig.model.serving import fp16_accumulate_speedup
    from dlrig.workloads.serving import Engine

    local = _spec(engine=Engine.LOCAL, quantization=WeightFormat.INT4)
    rtx, a100 = _gpu("GeForce RTX 4090"), _gpu("A100 SXM4 80GB")
    assert fp16_accumulate_speedup(rtx) == pytest.approx(2.0, rel=1e-3)
    assert fp16_accumulate_speedup(a100) == 1.0
    for gpu, share in ((rtx, 0.67), (a100, 0.335)):
        rate = achievable_matmul_tflops(gpu, local_precision := compute_precision(local)) * 1e12
        assert local_precision.value == "bf16"
        assert achievable_matmul_flops_s(gpu, local) == pytest.approx(rate * share, rel=1e-3)
