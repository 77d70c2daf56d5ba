"""QLoRA's base weights as GPTQ or AWQ checkpoints store them, and the kernels that
dequantize them (dlrig.model.memory.quantized_bits_per_weight, compute.dequantize_*)."""

from __future__ import annotations

import pytest
from model_fixtures import make_workload

from dlrig.model import compute, memory
from dlrig.model.layers import layer_work
from dlrig.workloads.model import Workload


def _qlora(base: str | None = None, group: int | None = None) -> Workload:
    finetune: dict[str, object] = {"method": "qlora"}
    if base:
        finetune["base_format"] = base
    if group:
        finetune["group_size"] = group
    return make_workload("llama-3-70b-qlora", finetune=finetune)


def test_a_gptq_weight_takes_its_int4_and_a_scale_and_zero_per_group() -> None:
    """AutoGPTQ/AutoAWQ buffers: qweight int32 (in/8, out), qzeros int32 (in/g, out/8), scales
    fp16 (in/g, out): 4 + (16 + 4)/g bits a weight, 4.15625 at g = 128 and 4.625 at g = 32;
    bitsandbytes NF4 with double quantization stays 4.127 (Dettmers et al. 2023)."""
    assert memory.quantized_bits_per_weight(_qlora()) == 4.127
    assert memory.quantized_bits_per_weight(_qlora("gptq")) == 4.15625
    assert memory.quantized_bits_per_weight(_qlora("awq", 32)) == 4.625
    w = _qlora("gptq", 32)
    frozen = w.params * (1 - w.trainable_fraction)
    embeddings = 2 * 128256 * 8192  # kept in 16 bits, as under NF4
    expected = (frozen - embeddings) * 4.625 / 8 + embeddings * 2
    assert memory.frozen_weight_bytes(w, frozen, True) == pytest.approx(expected)


def test_a_gptq_base_dequantizes_in_one_kernel_where_nf4_takes_three() -> None:
    """Llama 3 70B's 80 layers x 7 linears, dequantized in the forward, the recompute and the
    backward (3 passes): NF4's double quantization takes 3 kernels a linear (bitsandbytes
    dequantize_4bit, quant_state.nested), a GPTQ or AWQ weight one (AutoAWQ
    dequantize_weights_cuda, ExLlamaV2's reconstruct): 5,040 against 1,680; each reads the
    packed weight and writes a 16-bit copy."""
    nf4, gptq = _qlora(), _qlora("gptq")
    assert compute.dequantize_kernels(layer_work(nf4), nf4) == 5040
    assert compute.dequantize_kernels(layer_work(gptq), gptq) == 1680
    quantized = memory.quantized_params(gptq, gptq.params)
    assert compute.dequantize_bytes(gptq, quantized) == pytest.approx(
        quantized * (4.15625 / 8 + 2) * 3
    )
