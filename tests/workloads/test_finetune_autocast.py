"""Whether fp32 LoRA adapters run under torch.autocast: `finetune.autocast`."""

from __future__ import annotations

import pytest

from dlrig.errors import ValidationError
from dlrig.workloads import resolve_workload


def test_fp32_adapters_run_under_autocast_unless_told() -> None:
    """Hugging Face's Trainer with bf16 (accelerate's mixed precision) runs the step under
    torch.autocast: the default; a plain loop over a 16-bit model says `autocast: false`."""
    plain = resolve_workload({"model": "llama-3-8b-lora"}, "user.yaml")
    assert plain.fp32_adapters and plain.adapter_autocast
    loop = resolve_workload(
        {"model": "llama-3-8b-lora", "finetune": {"method": "lora", "autocast": False}},
        "user.yaml",
    )
    assert loop.fp32_adapters and not loop.adapter_autocast


def test_autocast_false_without_fp32_adapters_is_refused() -> None:
    """Without fp32 adapters autocast changes nothing dlrig counts: saying it is an error."""
    for finetune in (
        {"method": "lora", "adapter_precision": "16bit", "autocast": False},
        {"method": "full", "autocast": False},
    ):
        with pytest.raises(ValidationError, match="autocast"):
            resolve_workload({"model": "llama-3-8b-lora", "finetune": finetune}, "user.yaml")
