"""Chunked local attention (Llama 4: attention_chunk_size 8,192 on 36 of 48 layers, the other
12 NoPE layers attending to everything; transformers Llama4TextConfig): a decode query in a
chunked layer reads only its own chunk's keys, a prompt's attention in it is each chunk's
causal square, and below one chunk nothing changes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dlrig.model import serving_memory as mem
from dlrig.model.serving import attended_context, kv_bytes_per_step, prefill_flops
from dlrig.workloads import load_workload
from dlrig.workloads.serving import ServeSpec


def _scout(prompt: int, output: int) -> ServeSpec:
    serve = load_workload("llama-4-scout-serve").serve
    assert serve is not None
    return replace(serve, prompt_tokens=prompt, output_tokens=output)


def test_contexts_within_one_chunk_attend_to_everything() -> None:
    """2048/2048: every position is below 8,192, so each layer reads the whole mean context,
    3,072 tokens."""
    spec = _scout(2048, 2048)
    assert attended_context(spec) == pytest.approx(3072)


def test_at_20000_2000_the_chunked_layers_read_their_chunk() -> None:
    """20000/2000: positions 20,000-22,000 lie in the third chunk (16,384-24,575), at 3,616
    to 5,616 within it, 4,617 keys on average (the +1 is the query's own key); the 12 global
    layers read the mean context, 21,000. (12 x 21,000 + 36 x 4,617) / 48 = 8,712.75."""
    spec = _scout(20000, 2000)
    assert attended_context(spec) == pytest.approx((12 * 21000 + 36 * 4617) / 48)
    whole = replace(spec, attention_chunk_tokens=None, chunked_attention_layers=0)
    assert kv_bytes_per_step(spec, 10) == pytest.approx(
        kv_bytes_per_step(whole, 10) * attended_context(spec) / 21000
    )
    # The KV cache still holds every token of the context (vLLM's default for Llama 4).
    assert mem.kv_cache_bytes(spec, 1) == mem.kv_cache_bytes(whole, 1)


def test_a_long_prompt_computes_each_chunk_square_in_the_chunked_layers() -> None:
    """A 20,000-token prompt: the global layers' scores cover 20,000^2, the chunked layers'
    two full chunks and the rest, 2 x 8,192^2 + 3,616^2; attention is 2 x scores x 40 x 128."""
    spec = _scout(20000, 1)
    whole = replace(spec, attention_chunk_tokens=None, chunked_attention_layers=0)
    saved = 36 * (20000**2 - (2 * 8192**2 + 3616**2)) * 2.0 * 40 * 128
    assert prefill_flops(whole, 20000) - prefill_flops(spec, 20000) == pytest.approx(saved)
