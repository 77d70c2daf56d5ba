"""What FSDP gathers of a QLoRA base: the packed NF4 weights, not their constants."""

from __future__ import annotations

import pytest
from model_fixtures import make_workload

from dlrig.model.interconnect import gathered_param_bytes, unsharded_nf4_constant_bytes


def test_fsdp_gathers_the_packed_nf4_weights_without_their_constants() -> None:
    """Llama 3 70B QLoRA (the zoo's: 70,553,706,496 parameters, a 128,256 x 8,192 embedding
    and head kept 16-bit, 0.2935% trainable). bitsandbytes' Params4bit is the parameter FSDP
    flattens and gathers, 4 bits a weight; its absmax constants (0.127 bits a weight with
    double quantization: Dettmers et al. 2023, sec. 3) sit in its quant_state, which "FSDP
    only syncs parameters and buffers, so the quant_state isn't copied" (AnswerDotAI/
    fsdp_qlora@05ed9f2 train.py): each rank holds them whole and none travel. So a ZeRO-3
    gather moves 68.25e9 x 0.5 + 2.10e9 x 2 + 0.207e9 x 2 bytes = 38.73 GB, 1.08 GB less
    than the 39.81 GB the weights occupy with their constants."""
    job = make_workload("llama-3-70b-qlora")
    trainable = job.params * job.trainable_fraction
    embeddings = 2 * 128_256 * 8_192
    quantized = job.params - trainable - embeddings
    gathered = gathered_param_bytes(job, 3, trainable, sixteen_bit=True)
    assert gathered == pytest.approx(quantized * 0.5 + embeddings * 2 + trainable * 2)
    assert gathered == pytest.approx(38.73e9, rel=1e-3)
    frozen = job.params - trainable
    assert unsharded_nf4_constant_bytes(job, frozen) == pytest.approx(1.083e9, rel=1e-3)


def test_a_16_bit_base_gathers_every_frozen_weight_at_two_bytes() -> None:
    """LoRA on a 16-bit Llama 3 70B has no quant_state: every frozen weight is gathered at
    2 bytes, with the trainable ones (70.55e9 x 2 = 141.1 GB)."""
    job = make_workload(
        "llama-3-70b-qlora", finetune={"method": "lora", "trainable_fraction": 0.002935}
    )
    trainable = job.params * job.trainable_fraction
    assert unsharded_nf4_constant_bytes(job, job.params - trainable) == 0.0
    assert gathered_param_bytes(job, 3, trainable, sixteen_bit=True) == pytest.approx(
        job.params * 2.0
    )
