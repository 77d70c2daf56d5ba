"""LoRA adapters run eagerly (peft, torchtune): the scaling and the add of each update, a
bitsandbytes base's clone and the adapters' dropout, over a whole training step."""

from __future__ import annotations

import dataclasses

import pytest
from model_fixtures import make_workload

from dlrig.errors import DlrigError
from dlrig.model.layers import eager_adapter_elems, layer_work, lora_adapter_io
from dlrig.workloads.model import ALL_LORA_TARGETS, KernelLibrary, LoraTarget

# Llama 3 8B (config.json): hidden 4096, FFN 14336, 8 of 32 heads for K and V.
H, F, KV_SHARE = 4096.0, 14336.0, 0.25
# lora_adapter_io over Q, K, V, O, gate, up, down: inputs 6 h + f, outputs 3 h + 2 h/4 + 2 f.
INPUTS, OUTPUTS = 6 * 4096 + 14336, 3 * 4096 + 2 * 1024 + 2 * 14336


def test_sixteen_bit_adapters_scale_and_add_in_every_pass() -> None:
    """peft's Linear.forward (`lora_B(lora_A(dropout(x))) * scaling`, then `result + output`):
    5 moves per output element in each of the 2 forwards (with checkpointing), 2 in the
    backward's scaling and 3 per input element in the input gradient's add. The H200's bf16
    adapter run shows the kernels: 640 bf16 scalar multiplies and 416 more bf16 adds a step
    than the fp32 run (bench/data/h200_gpu_check.json, llama-3-8b-lora-bf16-adapters)."""
    job = make_workload(
        "llama-3-8b-lora",
        finetune={"method": "lora", "trainable_fraction": 0.005223, "adapter_precision": "16bit"},
    )
    assert (INPUTS, OUTPUTS) == (38912, 43008)
    expected = 2 * 5 * OUTPUTS + 2 * OUTPUTS + 3 * INPUTS
    assert eager_adapter_elems(H, F, KV_SHARE, True, job) == pytest.approx(expected)
    assert expected == 632_832


def test_nf4_base_clones_and_dropout_copies_the_input() -> None:
    """A bitsandbytes NF4 base adds peft's clone of each output (2 moves, each forward); LoRA
    dropout 0.1, Answer.AI fsdp_qlora's default, writes a copy and a byte mask of each input
    (2.5 moves) forward and backward: 2 (7 x 43,008 + 2.5 x 38,912) + 2 x 43,008 + 5.5 x 38,912."""
    job = make_workload(
        "llama-3-8b-qlora",
        finetune={"method": "qlora", "trainable_fraction": 0.005223,
                  "adapter_precision": "16bit", "adapter_dropout": 0.1},
    )  # fmt: skip
    expected = 2 * (7 * OUTPUTS + 2.5 * INPUTS) + 2 * OUTPUTS + 5.5 * INPUTS
    assert eager_adapter_elems(H, F, KV_SHARE, True, job) == pytest.approx(expected)
    assert expected == 1_096_704


def test_fp32_adapters_keep_their_own_count_and_fused_libraries_add_nothing() -> None:
    """Without autocast fp32 adapters' scaling and add are in fp32_adapter_elems already:
    without dropout or a 4-bit base nothing is added. Under autocast they scale and add their
    update in 16 bits, as 16-bit adapters do (632,832 a token a layer). A fused library
    (compile, liger, fused) leaves the adapters as lora_adapter_elems counts them."""
    fp32 = make_workload(
        "llama-3-8b-lora",
        finetune={"method": "lora", "trainable_fraction": 0.005223, "autocast": False},
    )
    assert fp32.fp32_adapters
    assert eager_adapter_elems(H, F, KV_SHARE, True, fp32) == 0.0
    autocast = make_workload("llama-3-8b-lora")  # the zoo's peft default: fp32 adapters
    assert autocast.fp32_adapters and autocast.adapter_autocast
    bf16 = make_workload(
        "llama-3-8b-lora",
        finetune={"method": "lora", "trainable_fraction": 0.005223, "adapter_precision": "16bit"},
    )
    assert eager_adapter_elems(H, F, KV_SHARE, True, autocast) == eager_adapter_elems(
        H, F, KV_SHARE, True, bf16
    )
    for library in (KernelLibrary.COMPILE, KernelLibrary.LIGER, KernelLibrary.FUSED):
        fused = dataclasses.replace(bf16, kernels=library)
        assert eager_adapter_elems(H, F, KV_SHARE, True, fused) == 0.0
    full = make_workload("llama-3-8b")
    assert layer_work(full).adapter_step_elems == 0.0
    # Per sample, the layer_work total is the per-token count x 32 layers x 2,048 tokens.
    assert layer_work(bf16).adapter_step_elems == pytest.approx(632_832 * 32 * bf16.seq_len)


def test_adapters_move_only_the_projections_they_sit_on() -> None:
    """`finetune.target_modules` names the adapted projections (lora_adapter_io). torchtune's
    Llama recipes adapt q, v, output and the MLP (lora_attn_modules ['q_proj', 'v_proj',
    'output_proj'], apply_lora_to_mlp): inputs 5 h + f = 34,816, outputs 3 h + h/4 + 2 f =
    41,984. Answer.AI fsdp_qlora's 'all' adapts q, k, v, gate, up and down (train.py @05ed9f2,
    lora_target_modules): inputs 34,816, outputs 2 h + 2 h/4 + 2 f = 38,912; all seven
    (peft's all-linear, the default) 38,912 and 43,008."""
    torchtune = ALL_LORA_TARGETS - {LoraTarget.K}
    fsdp_qlora = ALL_LORA_TARGETS - {LoraTarget.O}
    assert lora_adapter_io(H, F, KV_SHARE, True, torchtune) == (34816, 41984)
    assert lora_adapter_io(H, F, KV_SHARE, True, fsdp_qlora) == (34816, 38912)
    assert lora_adapter_io(H, F, KV_SHARE, True, ALL_LORA_TARGETS) == (INPUTS, OUTPUTS)
    job = make_workload(
        "llama-3-8b-lora",
        finetune={"method": "lora", "trainable_fraction": 0.005, "target_modules": ["q", "v"]},
    )
    assert job.lora_targets == {LoraTarget.Q, LoraTarget.V}
    # q and v alone: inputs 2 h, outputs h + h/4
    assert lora_adapter_io(H, F, KV_SHARE, True, job.lora_targets) == (8192, 5120)


def test_an_ungated_mlp_has_no_gate_to_adapt() -> None:
    """GPT-2's MLP (c_fc, c_proj) has one input projection, adapted as up: a gate target adds
    nothing there. GPT-2 small (h 768, f 3072, MHA): up alone reads h and writes f."""
    up = frozenset({LoraTarget.UP})
    gate_up = frozenset({LoraTarget.GATE, LoraTarget.UP})
    assert lora_adapter_io(768.0, 3072.0, 1.0, False, gate_up) == (768, 3072)
    assert lora_adapter_io(768.0, 3072.0, 1.0, False, up) == (768, 3072)


def test_target_modules_belong_to_adapters() -> None:
    """A full fine-tune has no adapters to place: the file is refused, naming the field."""
    with pytest.raises(DlrigError, match="target_modules"):
        make_workload("llama-3-8b-lora", finetune={"method": "full", "target_modules": ["q"]})
