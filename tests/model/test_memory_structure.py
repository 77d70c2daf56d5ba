"""GPU memory from the model's structure: Korthikanti et al. 2022 per layer class and precision,
ZeRO stages (Rajbhandari et al. 2020), QLoRA storage, CPU offload, and card capacity."""

from __future__ import annotations

import pytest
from model_fixtures import RTX_3090, make_build, make_workload

from dlrig.model import estimate
from dlrig.model.memory import (
    QLORA_BITS_PER_WEIGHT,
    MemoryLayout,
    frozen_weight_bytes,
    memory_need,
    model_state_bytes,
    per_sample_bytes,
    transformer_layer_activation_bytes,
)
from dlrig.workloads import resolve_workload
from dlrig.workloads.model import ALL_LORA_TARGETS, LoraTarget


def test_fp32_layer_keeps_4_byte_activations_and_1_byte_masks() -> None:
    """Korthikanti's 34 s h + 5 a s^2 at 16-bit is 16 s h + 2 a s^2 two-byte elements plus
    2 s h + a s^2 one-byte dropout masks; in fp32 the elements take 4 bytes: 66 s h + 9 a s^2
    (BERT-base at s = 384: 384 x 768 x 66 + 9 x 12 x 384^2 = 35.4 MB)."""
    s, h, a = 384, 768, 12
    fp32 = transformer_layer_activation_bytes(s, h, a, element_bytes=4.0)
    assert fp32 == 66 * s * h + 9 * a * s * s
    assert fp32 == pytest.approx(35.39e6, rel=1e-3)


def test_flash_attention_drops_the_score_term() -> None:
    """Flash attention (like selective recompute) keeps no a s^2 matrices: 34 s h left."""
    s, h, a = 2048, 4096, 32
    assert transformer_layer_activation_bytes(s, h, a, selective_recompute=True) == 34 * s * h


def test_llama_3_8b_layer_gqa_swiglu_without_dropout() -> None:
    """Llama 3 8B (hf config: h 4096, f 14336, 32 heads, 8 KV heads, no dropout), flash,
    s = 2048, bf16: two norm inputs and the two block inputs 4 x 2 s h, Q and the projection
    input 2 x 2 s h, K and V 2 x 2 s (h / 4), SwiGLU's gate, activation, up and product
    4 x 2 s f: s (13 h + 8 f) bytes = 2048 x (53248 + 114688) = 343.9 MB."""
    per_layer = transformer_layer_activation_bytes(
        2048, 4096, 32, selective_recompute=True, kv_heads=8, ffn_hidden_size=14336,
        gated_mlp=True, dropout=False,
    )  # fmt: skip
    assert per_layer == 2048 * (13 * 4096 + 8 * 14336)
    assert per_layer == pytest.approx(343.9e6, rel=1e-3)


def test_fused_swiglu_saves_three_ffn_wide_tensors_not_four() -> None:
    """A SwiGLU kernel whose backward recomputes the SiLU from the gate and up outputs keeps
    those two and the product (llm.q: swiglu_backward takes only its 2f-wide input,
    IST-DASLab/llmq src/kernels/swiglu.cu): Llama 3 8B at s = 2048 keeps 2 s f = 58.7 MB a
    layer less than eager PyTorch's 343.9 MB, s (13 h + 6 f) bytes = 285.2 MB."""

    def layer(fused: bool) -> float:
        return transformer_layer_activation_bytes(
            2048, 4096, 32, selective_recompute=True, kv_heads=8, ffn_hidden_size=14336,
            gated_mlp=True, dropout=False, fused_activation=fused,
        )  # fmt: skip

    eager, fused = layer(False), layer(True)
    assert fused == 2048 * (13 * 4096 + 6 * 14336)
    assert eager - fused == 2 * 2048 * 14336
    assert fused == pytest.approx(285.2e6, rel=1e-3)


def test_fused_activation_changes_nothing_without_a_gated_mlp() -> None:
    """A plain GeLU MLP keeps its two f-wide tensors (Korthikanti's 19 s h MLP term) either way."""
    plain = transformer_layer_activation_bytes(1024, 1024, 16)
    assert transformer_layer_activation_bytes(1024, 1024, 16, fused_activation=True) == plain


def test_full_checkpointing_keeps_one_input_per_layer() -> None:
    """With full activation checkpointing each layer keeps its input, one layer is recomputed
    at a time, and the head keeps the logits and their fp32 log-softmax (6 s v) with a gradient
    of each beside them at the loss's backward (6 s v more: the 3.2e9 bytes above the saved
    tensors a lent H200 measured for Llama 3 8B LoRA at 2 x 2048 tokens,
    memory.LOSS_GRADIENT_COPIES). The zoo's Llama 3 8B runs FSDP, whose bf16 compute copies
    keep a bf16 residual stream: each layer keeps 2 s h; the recomputed layer's two eager
    RMSNorms keep an fp32 copy of their input and the bf16 normalized output (6 s h each,
    memory.EAGER_RMS_NORM_FP32_BYTES), the attention and MLP inputs (4 s h), Q, K, V and the
    projection input (5 s h) and 4 f-wide MLP tensors (8 s f), plus flash's 4 a s log-sum-exp;
    the head's final norm 6 s h and the projection's input 2 s h: at s = 2048
    32 x 2 s h + 411.3 MB + 8 s h + 12 s v = 4.17 GB per sample."""
    w = make_workload("llama-3-8b")
    s, h, v = 2048, 4096, 128256
    layer = 2048 * ((2 * 6 + 4 + 5) * 4096 + 8 * 14336) + 4 * 32 * s
    expected = 32 * 2 * s * h + layer + 8 * s * h + 12 * s * v
    assert per_sample_bytes(w, True, MemoryLayout()) == pytest.approx(expected)
    assert expected == pytest.approx(4.17e9, rel=0.01)


def test_zero_paper_figure_1_model_states_per_stage() -> None:
    """ZeRO (Rajbhandari et al. 2020, fig. 1): Psi = 7.5B parameters, Nd = 64 GPUs, K = 12:
    baseline 120 GB, P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.88 GB per GPU."""
    w = resolve_workload(
        {"model": {"params": 7.5e9, "forward_flops_per_sample": 1e12},
         "precision": "bf16", "optimizer": "adam"},
        "test",
    )  # fmt: skip
    per_stage = [model_state_bytes(w, True, MemoryLayout(stage, 64))[0] / 1e9 for stage in range(4)]
    assert per_stage == pytest.approx([120.0, 31.4, 16.6, 1.875], abs=0.05)


def test_cpu_offload_moves_optimizer_state_to_the_host() -> None:
    """ZeRO-Offload: the 12 B/param of fp32 master weights and moments leave the GPU."""
    w = resolve_workload(
        {"model": {"params": 1e9, "forward_flops_per_sample": 1e12},
         "precision": "bf16", "optimizer": "adamw"},
        "test",
    )  # fmt: skip
    gpu, host = model_state_bytes(w, True, MemoryLayout(cpu_offload=True))
    assert (gpu, host) == (pytest.approx(4e9), pytest.approx(12e9))


def test_qlora_weights_take_half_a_byte_and_embeddings_stay_16_bit() -> None:
    """QLoRA (Dettmers et al. 2023): NF4 + double quantization = 4.127 bits = 0.516 B per
    weight; bitsandbytes leaves the embedding and the LM head in bf16 (Llama 3 70B: 2 x 128256
    x 8192 = 2.10e9 parameters): 68.45e9 x 0.516 + 2.10e9 x 2 = 39.5 GB."""
    assert 0.5 <= QLORA_BITS_PER_WEIGHT / 8 <= 0.56
    w = make_workload("llama-3-70b-qlora")
    frozen = w.params * (1 - w.trainable_fraction)
    embeddings = 2 * 128256 * 8192
    expected = (frozen - embeddings) * QLORA_BITS_PER_WEIGHT / 8 + embeddings * 2
    assert frozen_weight_bytes(w, frozen, True) == pytest.approx(expected)
    assert expected == pytest.approx(39.4e9, rel=0.01)


def test_bert_base_is_no_longer_at_1_75x_its_need() -> None:
    """Issue 10: the zoo's Lambda-implied 800 MB (fp32) halved to 400 MB was 1.75x BERT-base's
    16-bit need; from its structure it is 12 x 384 x 768 x (34 + 30) = 226.5 MB per layer stack
    plus the embedding mask and the head's inputs (2.1 MB)."""
    w = make_workload("bert-base-squad")
    need = per_sample_bytes(w, True, MemoryLayout())
    assert need == pytest.approx(226.5e6 + 384 * 768 * 5, rel=1e-3)
    assert 400e6 / need < 1.8
    lambda_3090 = estimate(make_build(RTX_3090), make_workload("bert-base-squad", batch_size=96))
    assert lambda_3090.memory.fits  # Lambda 2022 ran batch 96 fp16 on a 24 GB RTX 3090


def test_pipeline_stage_memory_is_the_larger_of_first_and_last() -> None:
    """1F1B: the first of p stages holds p micro-batches of its L/p layers, i.e. L layers'
    worth of one micro-batch (Korthikanti et al. 2022, sec. 4.2.3); the last holds one
    micro-batch of its L/p layers and the head. GPT-2 (s 1024, v 50257): the head's logits and
    fp32 log-softmax with their gradients at the loss's backward, 12 s v = 618 MB, outweigh 9
    layers, so the last stage binds. A 16-bit model, as a pipeline-parallel one is."""
    w = make_workload("gpt2", pure_16bit=True)
    one = per_sample_bytes(w, True, MemoryLayout())
    four = per_sample_bytes(w, True, MemoryLayout(pipeline_parallel=4, micro_batches=16))
    head = 2 * 2 * 1024 * 768 + 12 * 1024 * 50257
    layers = one - head
    assert four == pytest.approx(max(layers, layers / 4 + head), rel=1e-6)
    assert four == pytest.approx(layers / 4 + head, rel=1e-6)


def test_tensor_parallel_splits_states_and_activations() -> None:
    w = make_workload("gpt2", pure_16bit=True)  # a 16-bit model, as a tensor-parallel one is
    one = memory_need(w, 8, True, MemoryLayout(), 0.8, 0.05)
    two = memory_need(
        w, 8, True, MemoryLayout(tensor_parallel=2, sequence_parallel=True), 0.8, 0.05
    )
    assert two.model_states_bytes == pytest.approx(one.model_states_bytes / 2)
    assert two.activation_bytes_per_sample == pytest.approx(one.activation_bytes_per_sample / 2)


def test_peft_fp32_adapters_keep_an_fp32_input_per_projection() -> None:
    """peft's default fp32 LoRA casts each adapted projection's input to fp32 for its A matrix
    (tuners/lora/layer.py); the frozen 16-bit weight's backward needs no input. Llama 3 8B
    layer (s 2048, h 4096, 8 KV heads, f 14336, flash): 41 s h bytes as Korthikanti counts it
    (the two norm inputs 4, Q K V and the projection input 5, the gated MLP's four f-wide
    tensors 28) becomes 64 s h: the norms 4, attention 5 - 2 + 3 x 4 (Q, K, V copies) + 4 - 2
    (output projection) = 17, MLP 28 + 2 x 4 (gate, up) + 3.5 x (4 - 2) (down) = 43."""
    s, h = 2048, 4096
    keys = dict(kv_heads=8, ffn_hidden_size=14336, gated_mlp=True, dropout=False,
                selective_recompute=True)  # fmt: skip
    assert transformer_layer_activation_bytes(s, h, 32, **keys) == 41 * s * h
    assert transformer_layer_activation_bytes(
        s, h, 32, fp32_adapter_targets=ALL_LORA_TARGETS, **keys
    ) == pytest.approx(64 * s * h)


def test_a_bitsandbytes_base_keeps_every_input_beside_peft_copies() -> None:
    """bitsandbytes' MatMul4Bit saves its input whenever the input needs a gradient
    (bitsandbytes/autograd/_functions.py), as it does under LoRA: the same Llama 3 8B layer
    keeps all 41 s h of a trained layer and peft's fp32 copies beside them, Q, K and V 3 x 4,
    the output projection 4, gate and up 2 x 4, down 3.5 x 4: 79 s h, where a 16-bit frozen
    base keeps 64."""
    s, h = 2048, 4096
    keys = dict(kv_heads=8, ffn_hidden_size=14336, gated_mlp=True, dropout=False,
                selective_recompute=True)  # fmt: skip
    assert transformer_layer_activation_bytes(
        s, h, 32, fp32_adapter_targets=ALL_LORA_TARGETS, frozen_inputs_kept=True, **keys
    ) == pytest.approx(79 * s * h)


def test_under_autocast_fp32_adapters_keep_a_16_bit_cast_per_projection() -> None:
    """Under torch.autocast the adapter's matmul saves the 16-bit cast autocast makes of the
    fp32 copy, one per adapted projection (autocast caches casts of leaf weights only): in the
    same Llama 3 8B layer Q, K and V keep three 16-bit casts where the attention input was kept
    in the block and whole (+6 - 2 - 2), gate and up two where the MLP input was kept whole
    (+4 - 2), and the output and down projections' casts take their inputs' place: 41 + 2 + 2
    = 45 s h, against 64 for the fp32 copies a step without autocast keeps."""
    s, h = 2048, 4096
    keys = dict(kv_heads=8, ffn_hidden_size=14336, gated_mlp=True, dropout=False,
                selective_recompute=True)  # fmt: skip
    assert transformer_layer_activation_bytes(
        s, h, 32, fp32_adapter_targets=ALL_LORA_TARGETS, adapter_copy_bytes=2.0, **keys
    ) == pytest.approx(45 * s * h)


def test_fp32_adapters_copy_only_the_inputs_of_the_projections_they_adapt() -> None:
    """Adapters on q, k and v alone (NeMo 1.x's default, on attention_qkv) copy the attention
    input three times in fp32 and leave the MLP's 16-bit input shared: 41 - 2 (attention input)
    - 2 (its 16-bit copy in the attention block) + 3 x 4 = 49 s h. torchtune's Llama recipes
    (q, v, output and the MLP: lora_attn_modules ['q_proj', 'v_proj', 'output_proj'],
    apply_lora_to_mlp) keep two attention copies, not three: 64 - 4 = 60 s h."""
    s, h = 2048, 4096
    keys = dict(kv_heads=8, ffn_hidden_size=14336, gated_mlp=True, dropout=False,
                selective_recompute=True)  # fmt: skip
    qkv = frozenset({LoraTarget.Q, LoraTarget.K, LoraTarget.V})
    torchtune = ALL_LORA_TARGETS - {LoraTarget.K}
    assert transformer_layer_activation_bytes(
        s, h, 32, fp32_adapter_targets=qkv, **keys
    ) == pytest.approx(49 * s * h)
    assert transformer_layer_activation_bytes(
        s, h, 32, fp32_adapter_targets=torchtune, **keys
    ) == pytest.approx(60 * s * h)


def test_transformer_xl_keeps_its_16_bit_log_softmax_under_apex_o2() -> None:
    """NVIDIA's Transformer-XL runs --fp16 as apex amp O2 (pytorch/train.py defaults): the
    whole model, its log-softmax included, in fp16, so the head keeps 2 bytes per logit and a
    gradient of it (4 s v), not autocast's 16-bit logits and fp32 log-softmax with their
    gradients (12 s v). At fp32 the field changes nothing."""
    s, v = 192, 267735
    o2 = make_workload("transformer-xl-base")
    autocast = make_workload("transformer-xl-base", loss_precision="fp32")
    saved = per_sample_bytes(autocast, True) - per_sample_bytes(o2, True)
    assert saved == pytest.approx((12 - 4) * s * v)
    fp32 = [per_sample_bytes(w, False) for w in (o2, autocast)]
    assert fp32[0] == fp32[1]


def test_torchtunes_chunked_loss_keeps_every_chunk_and_chunks_the_gradients() -> None:
    """torchtune's CEWithChunkedOutputLoss (8 chunks): each chunk's fp32 log-softmax stays
    saved beside the model's 16-bit logits (6 s v), the gradients exist one chunk at a time
    (6 s v / 8); llm.q's chunked head recomputes, holding (6 + 6) s v / 8."""
    s, v = 2048, 128256
    whole = per_sample_bytes(make_workload("llama-3-8b"), True)
    kept = per_sample_bytes(
        make_workload("llama-3-8b", loss_chunks=8, chunked_logits_kept=True), True
    )
    recomputed = per_sample_bytes(make_workload("llama-3-8b", loss_chunks=8), True)
    assert whole - kept == pytest.approx(6 * s * v * (1 - 1 / 8))
    assert whole - recomputed == pytest.approx(12 * s * v * (1 - 1 / 8))


def test_frozen_projections_keep_no_input_under_lora() -> None:
    """A frozen linear's backward needs only its weight: PyTorch saves a linear's input only
    for the weight's gradient (torch.autograd.graph.saved_tensors_hooks on a frozen
    nn.Linear sees the weight alone). Llama 3 8B layer as above, 41 s h with every projection
    adapted or trained; peft's default LoRA on q_proj and v_proj keeps the attention input
    (read by q's and v's adapters) but not the MLP's input (2) nor the down projection's
    3.5 h-wide input (7): 32 s h. MLPerf's q, k, v, o adapters keep the same 32."""
    s, h = 2048, 4096
    keys = dict(kv_heads=8, ffn_hidden_size=14336, gated_mlp=True, dropout=False,
                selective_recompute=True)  # fmt: skip
    qv = frozenset({LoraTarget.Q, LoraTarget.V})
    qkvo = frozenset({LoraTarget.Q, LoraTarget.K, LoraTarget.V, LoraTarget.O})
    assert transformer_layer_activation_bytes(s, h, 32, adapted=ALL_LORA_TARGETS, **keys) == (
        41 * s * h
    )
    assert transformer_layer_activation_bytes(s, h, 32, adapted=qv, **keys) == 32 * s * h
    assert transformer_layer_activation_bytes(s, h, 32, adapted=qkvo, **keys) == 32 * s * h
