"""SGLang as an engine (serve.engine: sglang): its profile solved from its own batch-1 rows, and
its scheduler and memory defaults as its code sets them (python/sglang/srt/server_args.py,
release 0.5.5.post1)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import serving
from dlrig.model import serving_memory as mem
from dlrig.model.calibration import default_calibration
from dlrig.model.serving import (
    SGLANG,
    Cards,
    cards,
    computed_prompt_tokens,
    max_running,
    prompts_per_pass,
    serving_estimate,
)
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, ServeSpec
from support.cli import assert_one_line_error, run_in_process

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"
GIB = 2**30
A100_40GB = "A100 SXM4 40GB"
# Qwen2.5-0.5B-Instruct's config.json: 24 layers, hidden 896, 14 heads, 2 KV heads of 64,
# vocabulary 151,936, tied embeddings, 494,032,768 parameters.
QWEN25_05B = {"total_params": 494032768, "active_params": 494032768, "layers": 24,
              "hidden_size": 896, "heads": 14, "kv_heads": 2, "head_dim": 64,
              "vocab_size": 151936, "tied_embeddings": True}  # fmt: skip
# The rows the profile is solved from: AccelMark's serial runs of SGLang 0.5.6 on one A100
# SXM4 40GB (FreedomIntelligence/AccelMark issues 37 and 43), TPOT p50 in seconds at the
# suites' median lengths.
SGLANG_FIT_ROWS = (
    ({"prompt_tokens": 280, "output_tokens": 310}, 12.93e-3),
    ({**QWEN25_05B, "prompt_tokens": 95, "output_tokens": 150}, 1.89e-3),
)


def _spec(workload: str = "llama-3.1-8b-serve", **changes: object) -> ServeSpec:
    spec = load_workload(workload).serve
    assert spec is not None
    return replace(spec, **{"engine": Engine.SGLANG, **changes})  # type: ignore[arg-type]


def _cards(gpu: str, count: int = 1) -> Cards:
    build = resolve_build({"gpus": [{"model": gpu, "count": count}]}, "t", load_catalog(None))
    c = cards(build, default_calibration())
    assert c is not None
    return c


def _tpot_s(changes: dict[str, object], gpu: str = A100_40GB) -> float:
    build = resolve_build({"gpus": [{"model": gpu, "count": 1}]}, "t", load_catalog(None))
    est = serving_estimate(build, _spec(**changes), "llama-3.1-8b-serve")
    assert est is not None
    return 1.0 / est.batch1_tokens_per_s


def test_the_profile_is_what_its_two_batch1_rows_solve(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step is the weights' read over the bandwidth share plus a fixed time a layer; the two
    rows (Llama 3 8B 12.93 ms, Qwen2.5-0.5B 1.89 ms) give both: 0.976 and 47.5 us."""

    def tpot(changes: dict[str, object], share: float, layer_s: float) -> float:
        profile = replace(SGLANG, bandwidth_efficiency=share, layer_overhead_s=layer_s)
        monkeypatch.setitem(serving.ENGINES, Engine.SGLANG, profile)
        return _tpot_s(changes)

    a, b = [], []
    for changes, measured in SGLANG_FIT_ROWS:
        at_one = tpot(changes, 1.0, 0.0)
        read = tpot(changes, 0.5, 0.0) - at_one  # the read's seconds, x (1 / share - 1)
        per_layer = (tpot(changes, 1.0, 1e-5) - at_one) / 1e-5
        a.append([read, per_layer])
        b.append(measured - at_one + read)
    inverse_share, layer_s = np.linalg.solve(np.array(a), np.array(b))
    assert 1.0 / inverse_share == pytest.approx(SGLANG.bandwidth_efficiency, abs=5e-4)
    assert layer_s == pytest.approx(SGLANG.layer_overhead_s, abs=0.1e-6)


@pytest.mark.parametrize(
    ("gpu", "count", "chunk", "fraction"),
    [
        # server_args.py _handle_gpu_memory_settings: an 80 GiB card takes 8,192-token chunks
        # and graphs up to 256; its reserve 512 + 1.5 x 8,192 + 2 x 256 + 1/8 x 1,024 = 13,440
        # MiB of 81,920: 0.836. A 40 GiB card: 4,096 and 32: 512 + 6,144 + 64 + 128 = 6,848 of
        # 40,960: 0.833. Eight 80 GiB cards: graphs up to 512, 1 GiB for the eight:
        # 512 + 12,288 + 1,024 + 1,024 = 14,848: 0.819. A 24 GiB card: 2,048 and 24,
        # 512 + 3,072 + 48 + 128 = 3,760 MiB of 24,576 (no 10 GiB floor below 60 GiB): 0.847.
        ("H100 SXM5 80GB", 1, 8192, 1 - 13440 / 81920),
        (A100_40GB, 1, 4096, 1 - 6848 / 40960),
        ("H100 SXM5 80GB", 8, 8192, 1 - 14848 / 81920),
        ("RTX 4090", 1, 2048, 1 - 3760 / 24576),
    ],
)
def test_chunk_and_memory_share_follow_the_cards_memory(
    gpu: str, count: int, chunk: int, fraction: float
) -> None:
    memory = _cards(gpu).memory_bytes
    spec = _spec()
    assert mem.sglang_chunked_prefill_tokens(spec, memory) == chunk
    assert mem.sglang_mem_fraction_static(spec, memory, count) == pytest.approx(fraction)
    assert mem.usable_bytes_per_gpu(spec, memory, count) == pytest.approx(fraction * memory)


def test_prompts_run_in_prefill_passes_its_chunk_takes() -> None:
    """Not mixed into decode steps: 64 prompts of 128 tokens in a pass on an 80 GiB card's
    8,192-token chunk, 32 on a 40 GiB card's 4,096; serve.max_num_tokens sets the chunk."""
    spec = _spec(prompt_tokens=128)
    assert prompts_per_pass(spec, 10_000, 80 * GIB) == 64
    assert prompts_per_pass(spec, 10_000, 40 * GIB) == 32
    assert prompts_per_pass(replace(spec, max_num_tokens=16384), 10_000, 40 * GIB) == 128
    assert not serving.mixes_prefill(spec)


def test_it_runs_2048_requests_at_most_and_shares_a_prefix_token_by_token() -> None:
    """max_running_requests' default floor, 2,048; the radix cache reuses a shared prefix to
    the token (a 39-token prompt sent whole computes 1, vLLM's 16-token blocks 7)."""
    assert max_running(_spec(), _cards("H100 SXM5 80GB")) == 2048
    assert max_running(_spec(max_batch=64), _cards("H100 SXM5 80GB")) == 64
    whole = _spec(prompt_tokens=39, shared_prefix_tokens=39)
    assert computed_prompt_tokens(whole) == 1
    assert computed_prompt_tokens(replace(whole, engine=Engine.VLLM)) == 7


def test_estimate_runs_the_engine_and_names_it_where_users_queue() -> None:
    """30,000 users on eight H100s: past SGLang's 2,048 running requests the rest queue, and
    the estimate says whose limit that is."""
    code, out, err = run_in_process(
        "estimate", str(EXAMPLES / "8x-h100-hgx-server.yaml"), "--workload",
        "llama-3.1-8b-serve", "--set", "serve.engine=sglang", "--set", "serve.users=30000",
        "--set", "serve.tensor_parallel=8", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert '"engine": "sglang"' in out
    assert "SGLang" in out


def test_the_report_names_sglangs_cap_when_the_cache_holds_more() -> None:
    """6,000 users on the example's two nodes of eight H100s, a copy at tensor parallel 8 on
    each: 3,000 a copy, whose contexts all fit (3,207 do), but SGLang's max_running_requests
    holds each copy's running ones to 2,048, and the report says so."""
    code, out, err = run_in_process(
        "estimate", str(EXAMPLES / "8x-h100-hgx-server.yaml"), "--workload",
        "llama-3.1-8b-serve", "--set", "serve.engine=sglang", "--set", "serve.users=6000",
        "--set", "serve.tensor_parallel=8",
    )  # fmt: skip
    assert code == 0, err
    text = " ".join(out.split())
    assert "users whose contexts fit at once: 6414 (asked: 6000)" in text
    assert "4096 run at once (SGLang's max_running_requests)" in text


def test_an_engine_it_does_not_know_is_a_one_line_error() -> None:
    code, _, err = run_in_process(
        "estimate", str(EXAMPLES / "8x-h100-hgx-server.yaml"), "--workload",
        "llama-3.1-8b-serve", "--set", "serve.engine=sglng",
    )  # fmt: skip
    assert_one_line_error(code, err, "serve.engine", "sglang")


def test_latent_attention_pays_eight_more_kernels_a_layer() -> None:
    """SGLang's dense layer runs about ten kernels (python/sglang/srt/models/llama.py) in its
    47.5 us; multi-head latent attention's absorbed decode runs eight more (the two latent
    norms, the query's second projection, a quantization and a batched GEMM on each side of
    the attention, the copy that flattens the heads: deepseek_v2.py forward_absorb_prepare and
    forward_absorb_core @3e4a39ee), each at a dense kernel's 4.75 us: 85.5 us a layer. A
    grouped-query model's layer keeps 47.5 us."""
    deepseek = _spec("deepseek-v3-serve")
    assert serving.layer_overhead_s(deepseek) == pytest.approx(47.5e-6 + 8 * 4.75e-6)
    assert serving.layer_overhead_s(_spec("qwen3-235b-a22b-serve")) == pytest.approx(47.5e-6)


def test_deepseek_r1_at_batch_1_on_eight_b200_as_sglangs_cookbook_measured() -> None:
    """SGLang's cookbook (sgl-project/sgl-cookbook DeepSeek/DeepSeek-R1.md @268193cc): DeepSeek-
    R1-0528 FP8 on 8x B200 at --tp 8, SGLang 0.5.6, one request at 610/421 tokens, median
    TPOT 9.15 ms (109.3 tokens/s). dlrig gives 8.65 ms; without latent attention's kernels it
    gave 6.33 ms, 45% fast."""
    build = resolve_build(
        {"gpus": [{"model": "B200 SXM 180GB", "count": 8}]}, "t", load_catalog(None)
    )
    spec = _spec("deepseek-v3-serve", tensor_parallel=8, prompt_tokens=610, output_tokens=421)
    est = serving_estimate(build, spec, "deepseek-v3-serve")
    assert est is not None
    assert est.batch1_tokens_per_s == pytest.approx(1000 / 9.15, rel=0.10)
