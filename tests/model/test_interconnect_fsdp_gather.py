"""A bitsandbytes NF4 base under FSDP: the packed weights are sharded, gathered and offloaded,
their quantization constants are not."""

from __future__ import annotations

import pytest
from model_fixtures import make_workload

from dlrig.model import memory
from dlrig.model.interconnect import gathered_param_bytes

# Llama 3 70B (the zoo's: 70,553,706,496 parameters, a 128,256 x 8,192 embedding and head kept
# 16-bit, 0.2935% trainable under QLoRA).
EMBEDDINGS = 2 * 128_256 * 8_192


def test_fsdp_gathers_the_packed_nf4_weights_without_their_constants() -> None:
    """bitsandbytes' Params4bit is the parameter FSDP flattens and gathers, 4 bits a weight;
    its absmax constants (0.127 bits a weight with double quantization: Dettmers et al. 2023,
    sec. 3) sit in its quant_state, which "FSDP only syncs parameters and buffers, so the
    quant_state isn't copied" (AnswerDotAI/fsdp_qlora@05ed9f2 train.py): each rank holds them
    whole and none travel. A ZeRO-3 gather moves 68.25e9 x 0.5 + 2.10e9 x 2 + 0.207e9 x 2
    bytes = 38.73 GB, the 1.08 GB of constants less than the weights occupy."""
    job = make_workload("llama-3-70b-qlora")
    trainable = job.params * job.trainable_fraction
    quantized = job.params - trainable - EMBEDDINGS
    gathered = gathered_param_bytes(job, 3, trainable, sixteen_bit=True)
    assert gathered == pytest.approx(quantized * 0.5 + EMBEDDINGS * 2 + trainable * 2)
    assert gathered == pytest.approx(38.73e9, rel=1e-3)
    constants = memory.unsharded_quant_state_bytes(job, job.params - trainable)
    assert constants == pytest.approx(quantized * 0.127 / 8)
    assert constants == pytest.approx(1.083e9, rel=1e-3)


def test_each_gpu_keeps_the_whole_nf4_constants_under_fsdp_with_cpu_offload() -> None:
    """FSDP's CPUOffload(offload_params=True) moves each GPU's shard of the parameters to host
    RAM; the quant_state stays on the GPU, whole on each of the 2 ranks: 1.08 GB of the 70B
    base's constants on every GPU, none in host RAM, where the packed weights' shard is."""
    job = make_workload("llama-3-70b-qlora")
    trainable = job.params * job.trainable_fraction
    quantized = job.params - trainable - EMBEDDINGS
    layout = memory.MemoryLayout(zero_stage=3, shard_ranks=2, cpu_offload=True)
    gpu, host = memory.model_state_bytes(job, True, layout)
    constants = 1.083e9
    packed_shard = (quantized * 0.5 + EMBEDDINGS * 2) / 2
    assert host == pytest.approx(packed_shard + trainable * 16 / 2, rel=0.01)
    # On the GPU: the constants, and the units FSDP has gathered (memory.gathered_weight_bytes
    # of the packed weights).
    packed = quantized * 0.5 + EMBEDDINGS * 2 + trainable * 2
    gathered = memory.gathered_weight_bytes(job, packed, True)
    assert gpu == pytest.approx(constants + gathered, rel=1e-3)


def test_a_16_bit_base_has_no_constants_to_keep() -> None:
    """LoRA on a 16-bit Llama 3 70B: every frozen weight is gathered at 2 bytes, with the
    trainable ones (70.55e9 x 2 = 141.1 GB)."""
    job = make_workload(
        "llama-3-70b-qlora", finetune={"method": "lora", "trainable_fraction": 0.002935}
    )
    trainable = job.params * job.trainable_fraction
    assert memory.unsharded_quant_state_bytes(job, job.params - trainable) == 0.0
    assert gathered_param_bytes(job, 3, trainable, sixteen_bit=True) == pytest.approx(
        job.params * 2.0
    )


def test_torchaos_nf4_shards_and_gathers_its_constants_with_the_weights() -> None:
    """torchtune's QLoRA quantizes with torchao's NF4Tensor, whose FSDP2 all-gather carries
    its quantized scalers and factors with the packed weights: nothing stays whole, and a
    gather moves the 1.08 GB of Llama 3 70B's constants too (38.73 + 1.08 = 39.81 GB)."""
    job = make_workload(
        "llama-3-70b-qlora",
        finetune={"method": "qlora", "trainable_fraction": 0.002935, "base_format": "torchao-nf4"},
    )
    trainable = job.params * job.trainable_fraction
    assert memory.unsharded_quant_state_bytes(job, job.params - trainable) == 0.0
    gathered = gathered_param_bytes(job, 3, trainable, sixteen_bit=True)
    assert gathered == pytest.approx(39.81e9, rel=1e-3)
