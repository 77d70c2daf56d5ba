"""QLoRA over a GPTQ or AWQ checkpoint: `finetune.base_format` and `finetune.group_size`."""

from __future__ import annotations

import pytest

from dlrig.errors import ValidationError
from dlrig.workloads import resolve_workload
from dlrig.workloads.model import QuantizedBase


def test_qlora_defaults_to_bitsandbytes_nf4_and_takes_a_gptq_or_awq_base() -> None:
    nf4 = resolve_workload({"model": "llama-3-8b-qlora"}, "user.yaml")
    assert nf4.quantized_base is QuantizedBase.NF4
    gptq = resolve_workload(
        {"model": "llama-3-8b-qlora", "finetune": {"base_format": "gptq"}}, "user.yaml"
    )
    assert (gptq.quantized_base, gptq.quant_group_size, gptq.weight_bits) == (
        QuantizedBase.GPTQ, 128, 4,
    )  # fmt: skip
    awq = resolve_workload(
        {"model": "llama-3-8b-qlora", "finetune": {"base_format": "awq", "group_size": 64}},
        "user.yaml",
    )
    assert (awq.quantized_base, awq.quant_group_size) == (QuantizedBase.AWQ, 64)
    assert resolve_workload({"model": "llama-3-8b-lora"}, "user.yaml").quantized_base is None


def test_a_base_format_without_qlora_or_a_group_without_a_group_format_is_refused() -> None:
    with pytest.raises(ValidationError, match="base_format"):
        resolve_workload(
            {"model": "llama-3-8b-lora", "finetune": {"base_format": "gptq"}}, "user.yaml"
        )
    with pytest.raises(ValidationError, match="group_size"):
        resolve_workload(
            {"model": "llama-3-8b-qlora", "finetune": {"group_size": 128}}, "user.yaml"
        )
    with pytest.raises(ValidationError, match="base_format"):
        resolve_workload(
            {"model": "llama-3-8b-qlora", "finetune": {"base_format": "exl2"}}, "user.yaml"
        )
