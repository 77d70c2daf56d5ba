"""Memory as the stacks that shrink it run: torch.compile's saved tensors, torchtune's compiled
chunked loss, activation offloading, and a paged optimizer's state outside PyTorch's allocator."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from model_fixtures import make_workload

from dlrig.model import memory
from dlrig.workloads import Workload, load_workload

# Llama 3.2 3B (huggingface.co/meta-llama/Llama-3.2-3B config.json): hidden 3072,
# intermediate 8192, 28 layers, 24 heads, 8 KV heads, vocabulary 128,256, tied embeddings.
S, H, F, LAYERS, VOCAB = 4096, 3072, 8192, 28, 128_256


def test_a_compiled_gated_mlp_keeps_the_gate_and_up_outputs() -> None:
    """Inductor's min-cut partitioner recomputes SiLU and the product in the backward from the
    gate and up projections' outputs: 2 f-wide tensors saved where eager PyTorch keeps 4 (SiLU's
    input and output, up, the product). At Llama 3.2 3B's s 4,096 and f 8,192 in bf16 that is
    2 x 2 B x 4,096 x 8,192 = 134,217,728 bytes less per layer and sample."""
    eager = memory.transformer_layer_activation_bytes(S, H, 24, 1, False, True, gated_mlp=True,
                                                      kv_heads=8, ffn_hidden_size=F)  # fmt: skip
    compiled = memory.transformer_layer_activation_bytes(
        S, H, 24, 1, False, True, gated_mlp=True, kv_heads=8, ffn_hidden_size=F, compiled=True
    )
    assert eager - compiled == 2 * 2 * S * F == 134_217_728


def _llama_3b(kernels: str, **fields: object) -> Workload:
    """Llama 3.2 3B's structure at 4,096 tokens, checkpointed, torchtune's loss over 8 chunks,
    in pure bf16 as torchtune trains."""
    job = make_workload("llama-3-8b", kernels=kernels, loss_chunks=8, chunked_logits_kept=True,
                        activation_checkpointing=True, pure_16bit=True, **fields)  # fmt: skip
    return dataclasses.replace(
        job, hidden_size=H, num_layers=LAYERS, num_heads=24, kv_heads=8, ffn_hidden_size=F,
        vocab_size=VOCAB, seq_len=S, tied_embeddings=True,
    )  # fmt: skip


def test_a_compiled_kept_chunk_loss_keeps_only_the_16_bit_logits() -> None:
    """torchtune's CEWithChunkedOutputLoss keeps every chunk's bf16 logits (the model returns
    them as a list) and, compiled (compile_loss compiles compute_cross_entropy alone), upcasts
    one chunk at a time in one graph whose backward writes the chunk's gradient in bf16: per
    logit 2 B kept plus 1/8 of a 2 B gradient, 2.25 B, where eager keeps every chunk's fp32
    log-softmax too and makes an fp32 and a bf16 gradient per chunk: 6 + 6/8 = 6.75 B.
    With checkpointing the layers keep their inputs alone, so the one recomputed layer (its MLP
    at 2 f-wide tensors compiled, 4 eager) and the eager RMSNorms' fp32 copies of their inputs
    (4 B x s x h for the recomputed layer's two and the final norm: memory.
    EAGER_RMS_NORM_FP32_BYTES) are the rest of the difference."""
    eager = _llama_3b("eager")
    compiled = _llama_3b("compile")
    layout = memory.MemoryLayout()
    difference = memory.per_sample_bytes(eager, True, layout) - memory.per_sample_bytes(
        compiled, True, layout
    )
    logits = (6.75 - 2.25) * S * VOCAB
    recomputed_mlp = 2 * 2 * S * F
    eager_norms = 3 * 4 * S * H
    assert difference == pytest.approx(logits + recomputed_mlp + eager_norms)


def test_activation_offloading_keeps_five_checkpointed_inputs_on_the_gpu() -> None:
    """torchtune's OffloadActivations keeps the last max_fwd_stash_size = 5 saved tensors on
    the GPU while their copies to host RAM run; with checkpointing those are 5 layers' inputs
    (bf16, s x h), so Llama 3.2 3B's 28 layers hold 23 x 2 x 4,096 x 3,072 = 578,813,952 bytes
    a sample less on the GPU."""
    kept = _llama_3b("compile")
    offloaded = _llama_3b("compile", activation_offloading=True)
    layout = memory.MemoryLayout()
    saved = memory.per_sample_bytes(kept, True, layout) - memory.per_sample_bytes(
        offloaded, True, layout
    )
    assert saved == (LAYERS - 5) * 2 * S * H == 578_813_952


def test_activation_offloading_is_a_workload_field(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "model: llama-3-8b\nactivation_checkpointing: true\nactivation_offloading: true\n"
    )
    assert load_workload(path).activation_offloading


def test_a_paged_optimizers_moments_are_managed_memory() -> None:
    """bitsandbytes' PagedAdamW8bit allocates each moment of a parameter of 1e5 elements or more
    with cudaMallocManaged (Optimizer8bit.get_state_buffer): Llama 3's 8.03e9 parameters keep
    2 x 1 B of moments each there, 16.06e9 bytes PyTorch's allocator never sees; the fp32 block
    constants (4 B per 2,048 values) stay torch tensors."""
    job = make_workload("llama-3-8b", optimizer="adamw8bit", paged_optimizer=True)
    need = memory.memory_need(job, 1, True, memory.MemoryLayout(), 0.8, 0.05)
    assert need.managed_bytes == pytest.approx(2.0 * job.params)
    assert memory.managed_state_bytes(make_workload("llama-3-8b"), memory.MemoryLayout()) == 0.0


def test_torchtune_saves_k_and_v_copied_to_every_query_head() -> None:
    """torchtune's MultiHeadAttention expands grouped K and V to the 24 query heads before the
    attention call, which saves the copies (torchtune/modules/attention.py @1814feb): per layer
    2 x 2 B x s x (3072 - 1024) more than the 8 KV heads' K and V, 33.6e6 bytes at 4,096 tokens,
    1.75 GiB over Llama 3.2 3B's 28 layers at batch 2 without checkpointing."""
    grouped = dataclasses.replace(_llama_3b("compile"), activation_checkpointing=False)
    expanded = dataclasses.replace(grouped, expanded_kv=True)
    layout = memory.MemoryLayout()
    per_sample = memory.per_sample_bytes(expanded, True, layout) - memory.per_sample_bytes(
        grouped, True, layout
    )
    assert per_sample == pytest.approx(2 * 2 * S * (H - 1024) * LAYERS)
    assert 2 * per_sample / 2**30 == pytest.approx(1.75, abs=0.01)


def test_the_live_peak_holds_the_head_or_the_recomputed_layer() -> None:
    """Autograd frees the loss's and the head's saved tensors before the backward recomputes
    the last checkpointed layer, so the live (allocated) peak holds the larger of the two, with
    the logits a loop that keeps the model's output still holds (2 B each); the reserve a card
    is sized by keeps both. torchtune drops its logits (`del logits`): none held."""
    kept = _llama_3b("compile")
    released = dataclasses.replace(kept, logits_released=True)
    layout = memory.MemoryLayout()
    reserve = memory.per_sample_bytes(kept, True, layout)
    live_kept = memory.per_sample_bytes(kept, True, layout, allocated=True)
    live_released = memory.per_sample_bytes(released, True, layout, allocated=True)
    # Released, the compiled chunked head (2.25 B a logit) outweighs one recomputed layer: the
    # live peak is the reserve less that layer (compiled: 2 f-wide MLP tensors, no eager norm
    # copies; flash attention's fp32 log-sum-exp per row and head).
    layer = memory.transformer_layer_activation_bytes(
        S, H, 24, selective_recompute=True, kv_heads=8, ffn_hidden_size=F, gated_mlp=True,
        dropout=False, compiled=True,
    ) + 4 * 24 * S  # fmt: skip
    assert reserve - live_released == pytest.approx(layer)
    # Kept, the loop's 2 B logits beside the recomputed layer outweigh the head (the final
    # norm's and the projection's 16-bit inputs, 2 + 2 B x s x h, and 2.25 B a logit), so the
    # live peak is the reserve less the head, plus those logits.
    head = 4 * S * H + 2.25 * S * VOCAB
    assert reserve - live_kept == pytest.approx(head - 2 * S * VOCAB)
    assert memory.held_logit_bytes(kept, 2.0) == 2.0
    assert memory.held_logit_bytes(released, 2.0) == 0.0
