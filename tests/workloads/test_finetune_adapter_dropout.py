"""LoRA dropout on the adapters' inputs: `finetune.adapter_dropout`."""

from __future__ import annotations

import pytest

from dlrig.errors import ValidationError
from dlrig.workloads import resolve_workload


def test_adapter_dropout_defaults_to_peft_s_zero_and_takes_a_probability() -> None:
    """peft's LoraConfig defaults lora_dropout to 0.0; Answer.AI's fsdp_qlora train.py to 0.1."""
    plain = resolve_workload({"model": "llama-3-8b-lora"}, "user.yaml")
    assert plain.adapter_dropout == 0.0
    dropped = resolve_workload(
        {"model": "llama-3-8b-qlora", "finetune": {"method": "qlora", "adapter_dropout": 0.1}},
        "user.yaml",
    )
    assert dropped.adapter_dropout == 0.1


def test_adapter_dropout_out_of_range_or_without_adapters_is_refused() -> None:
    with pytest.raises(ValidationError, match="adapter_dropout"):
        resolve_workload(
            {"model": "llama-3-8b-lora", "finetune": {"method": "lora", "adapter_dropout": 1.0}},
            "user.yaml",
        )
    with pytest.raises(ValidationError, match="adapter_dropout"):
        resolve_workload(
            {"model": "llama-3-8b", "finetune": {"method": "full", "adapter_dropout": 0.1}},
            "user.yaml",
        )
