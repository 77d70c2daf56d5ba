"""The `serve:` block of a workload file and the serving presets (issue 14): what the issue's
commands write with --set, what the zoo holds, and one-line errors for bad values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dlrig.errors import ValidationError
from dlrig.workloads import Mode, load_workload, resolve_workload, zoo
from dlrig.workloads.serving import Engine, WeightFormat

SERVING_PRESETS = {
    "llama-3.1-8b-serve",
    "llama-3.1-70b-serve",
    "llama-3.1-405b-serve",
    "qwen-32b-serve",
    "qwen3-8b-serve",
    "qwen3-14b-serve",
    "qwen3-32b-serve",
    "mixtral-8x7b-serve",
    "deepseek-v3-serve",
    "qwen3-30b-a3b-serve",
    "qwen3-235b-a22b-serve",
    "llama-4-scout-serve",
    "llama-4-maverick-serve",
}
BUILD = """\
name: 2x RTX 3090 test box
gpus:
  - model: RTX 3090
    count: 2
memory: {size_gb: 128}
"""


def run_dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture
def build_file(tmp_path: Path) -> Path:
    path = tmp_path / "build.yaml"
    path.write_text(BUILD)
    return path


def test_every_serving_preset_is_sourced_and_has_its_structure() -> None:
    found = {w.name: w for w in zoo() if w.serve is not None}
    assert set(found) == SERVING_PRESETS
    for w in found.values():
        assert w.mode is Mode.INFERENCE
        assert any("config.json" in s and "read 2026-12-0" in s for s in w.sources), w.name
        assert w.serve is not None and w.serve.active_params <= w.serve.total_params


def test_moe_presets_state_active_and_total_parameters() -> None:
    """Mixtral 8x7B: 46.7B in all, 12.9B per token; DeepSeek-V3: 671B and 37B (its report)."""
    mixtral = load_workload("mixtral-8x7b-serve").serve
    deepseek = load_workload("deepseek-v3-serve").serve
    assert mixtral is not None and deepseek is not None
    assert (mixtral.total_params, mixtral.active_params) == (46702792704, 12879925248)
    assert (deepseek.total_params, deepseek.active_params) == (671e9, 37e9)
    assert deepseek.quantization is WeightFormat.FP8


def test_qwen3_and_llama_4_presets_count_their_configs() -> None:
    """Counted from each config.json (layers x (attention + experts x 3 x hidden x FFN +
    router) + embeddings): Qwen3-30B-A3B 30.53B / 3.35B (model card 30.5B / 3.3B), Qwen3-235B-
    A22B 235.09B / 22.19B (235B / 22B), Llama 4 Maverick's text model 400.71B / 17.18B (400B /
    17B), its 24 expert layers of 48 (interleave_moe_layer_step 2)."""
    small = load_workload("qwen3-30b-a3b-serve").serve
    large = load_workload("qwen3-235b-a22b-serve").serve
    maverick = load_workload("llama-4-maverick-serve").serve
    assert small is not None and large is not None and maverick is not None
    assert (small.total_params, small.active_params) == (30532122624, 3353032704)
    assert (large.total_params, large.active_params) == (235093634560, 22190763520)
    assert (maverick.total_params, maverick.active_params) == (400711861248, 17184703488)
    assert (maverick.moe_layers, large.moe_layers) == (24, 94)


def qwen3_dense_params(layers: int, hidden: int, heads: int, kv_heads: int, ffn: int) -> int:
    """A dense Qwen3's weights from its config.json: per layer the Q/K/V/O projections (no
    biases), a head-dim RMSNorm on Q and on K, two hidden-size norms and the SwiGLU MLP (3 x
    hidden x FFN); untied input and output embeddings of 151,936 rows and the final norm."""
    head_dim, vocab = 128, 151936
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    per_layer = attention + 2 * head_dim + 2 * hidden + 3 * hidden * ffn
    return layers * per_layer + 2 * vocab * hidden + hidden


def test_dense_qwen3_presets_count_their_configs() -> None:
    """Qwen3-8B, 14B and 32B, counted from each config.json: 8.19B, 14.77B and 32.76B (model
    cards 8.2B, 14.8B, 32.8B), with their structure as the config states it."""
    configs = {
        "qwen3-8b-serve": (36, 4096, 32, 8, 12288),
        "qwen3-14b-serve": (40, 5120, 40, 8, 17408),
        "qwen3-32b-serve": (64, 5120, 64, 8, 25600),
    }
    counted = {"qwen3-8b-serve": 8190735360, "qwen3-14b-serve": 14768307200,
               "qwen3-32b-serve": 32762123264}  # fmt: skip
    for name, (layers, hidden, heads, kv_heads, ffn) in configs.items():
        w = load_workload(name)
        spec = w.serve
        assert spec is not None
        params = qwen3_dense_params(layers, hidden, heads, kv_heads, ffn)
        assert params == counted[name]
        assert spec.total_params == spec.active_params == params, name
        assert (spec.layers, spec.hidden_size, spec.heads, spec.kv_heads, spec.head_dim,
                spec.vocab_size, spec.tied_embeddings) == (
                    layers, hidden, heads, kv_heads, 128, 151936, False), name  # fmt: skip
        assert w.kv_bytes_per_token == 2 * layers * kv_heads * 128 * 2, name


def test_attention_data_parallel_is_for_a_split_mixture_of_experts() -> None:
    """Attention apart on each GPU needs experts to split and GPUs to split them over."""
    with pytest.raises(ValidationError, match="mixture of experts"):
        resolve_workload(
            {"model": "llama-3.1-8b-serve",
             "serve": {"attention_data_parallel": True, "tensor_parallel": 2}}, "user.yaml",
        )  # fmt: skip
    with pytest.raises(ValidationError, match="tensor_parallel"):
        resolve_workload(
            {"model": "qwen3-235b-a22b-serve", "serve": {"attention_data_parallel": True}},
            "user.yaml",
        )
    with pytest.raises(ValidationError, match="expert_layers"):
        resolve_workload(
            {"model": "qwen3-30b-a3b-serve", "serve": {"expert_layers": 49}}, "user.yaml"
        )


def test_a_users_file_overrides_the_serve_block_key_by_key() -> None:
    doc = {"model": "llama-3.1-8b-serve", "serve": {"users": 50, "quantization": "int4"}}
    spec = resolve_workload(doc, "user.yaml").serve
    assert spec is not None
    assert (spec.users, spec.quantization, spec.layers) == (50, WeightFormat.INT4, 32)
    assert spec.engine is Engine.BATCHED


def test_bad_serve_values_name_the_field() -> None:
    with pytest.raises(ValidationError, match=r"serve\.users"):
        resolve_workload({"model": "llama-3.1-8b-serve", "serve": {"users": 0}}, "user.yaml")
    with pytest.raises(ValidationError, match="experts_per_token"):
        resolve_workload({"model": "llama-3.1-8b-serve", "serve": {"experts": 8}}, "user.yaml")


def test_issue_estimate_command_prints_serving_json(build_file: Path) -> None:
    """Issue 14's command: 32 users of Llama 3.1 70B in int4 on two 24 GB cards (2 x 24 GiB;
    the batched engine, TensorRT-LLM, gives its KV cache 0.90 of what 37.8 GiB of weights and
    its profiling pass's 4.9 GiB a card leave free, serving_memory.activation_bytes: 3.5 GiB
    of it the engine's own, as the sequences it held on H100s say). Only one user's
    2,300-token context (0.70 GiB) fits at once (GPU.4's warning): the engine runs it and
    queues the other 31 (TensorRT-LLM's GUARANTEED_NO_EVICT starts a
    request once its whole context has room), so the job runs, exit 0, with the queue named
    and its wait inside the time to first token."""
    args = (
        "estimate", str(build_file), "--workload", "llama-3.1-70b-serve",
        "--set", "serve.prompt_tokens=2000", "--set", "serve.output_tokens=300",
        "--set", "serve.quantization=int4", "--set", "serve.min_tokens_per_s_per_user=30",
        "--json",
    )  # fmt: skip
    out = run_dlrig(*args, "--set", "serve.users=32")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert {"build", "workload", "step", "throughput", "memory", "power", "run"} <= set(doc)
    s = doc["serving"]
    assert (s["users"], s["prompt_tokens"], s["output_tokens"]) == (32, 2000, 300)
    assert s["quantization"] == "int4" and s["gpus"] == 2
    assert s["binding"] == "kv_memory" and s["max_users_fit"] == 1
    assert (s["users_running"], s["users_waiting"]) == (1, 31)
    assert s["memory"]["weights_gb"] > 35 and s["memory"]["fits"]
    # TTFT: the serving stack's 5.9 ms a request (serving.REQUEST_OVERHEAD_S), the queue, then
    # the prompt's own pass, which emits the first token; running alone, no step to wait for.
    assert s["ttft_s"] == pytest.approx(0.0059 + s["queue_wait_s"] + s["prefill_s"])
    assert s["queue_wait_s"] > 0 and doc["throughput"]["samples_per_s"] == s["tokens_per_s_total"]
    assert doc["memory"]["fits"] is True
    # The card holds the one running user's KV cache, not the 32 asked (served.served_memory).
    assert doc["memory"]["activations_gb"] == pytest.approx(
        1 * s["memory"]["kv_per_user_gb"] / 2, rel=1e-9
    )
    # The one user that fits: every figure is there, and the total is the users over each
    # one's cycle (a decode step per token plus its own prompt's prefill over the answer).
    out = run_dlrig(*args, "--set", "serve.users=1")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    s = doc["serving"]
    assert s["binding"] in {"decode_bandwidth", "decode_compute", "prefill_compute",
                            "interconnect", "engine_overhead"}  # fmt: skip
    assert s["ttft_s"] > 0 and s["tpot_s"] > 0
    assert s["tokens_per_s_total"] == pytest.approx(s["users"] / (
        s["tpot_s"] + s["prefill_s"] / s["output_tokens"]), rel=1e-9)  # fmt: skip
    assert doc["throughput"]["samples_per_s"] == s["tokens_per_s_total"]


def test_issue_estimate_command_prints_a_serving_block(build_file: Path) -> None:
    out = run_dlrig("estimate", str(build_file), "--workload", "llama-3.1-8b-serve",
                    "--set", "serve.users=8")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "time to first token" in out.stdout and "tokens/s per user" in out.stdout


def test_bad_set_value_is_one_line_exit_2(build_file: Path) -> None:
    out = run_dlrig("estimate", str(build_file), "--workload", "llama-3.1-8b-serve",
                    "--set", "serve.quantization=int3")  # fmt: skip
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "serve.quantization" in out.stderr


def test_workloads_kind_inference_lists_the_serving_presets() -> None:
    out = run_dlrig("workloads", "--kind", "inference", "--json")
    assert out.returncode == 0, out.stderr
    names = {w["name"] for w in json.loads(out.stdout)}
    assert names >= SERVING_PRESETS and "resnet50" not in names
    mixtral = next(w for w in json.loads(out.stdout) if w["name"] == "mixtral-8x7b-serve")
    assert (mixtral["serve"]["experts"], mixtral["serve"]["experts_per_token"]) == (8, 2)
    bad = run_dlrig("workloads", "--kind", "servng")
    assert bad.returncode == 2 and "expected one of" in bad.stderr


def test_issue_plan_command_meets_the_users_and_speed_targets(tmp_path: Path) -> None:
    """The issue's `dlrig plan` for 50 users at 30 tokens/s each: every build it proposes,
    estimated again, serves 50 users at >= 30 tokens/s, and names its binding limit."""
    out = run_dlrig(
        "plan", "--workload", "llama-3.1-8b-serve", "--budget", "10000",
        "--set", "serve.users=50", "--set", "serve.min_tokens_per_s_per_user=30", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["builds"]
    best = doc["builds"][0]
    assert best["serving_limit"] in {"decode_bandwidth", "decode_compute", "prefill_compute",
                                     "interconnect", "engine_overhead", "offload"}  # fmt: skip
    assert best["kwh_per_million_tokens"] > 0
    build = tmp_path / "best.json"
    build.write_text(json.dumps(best["build"]))
    again = run_dlrig(
        "estimate", str(build), "--workload", "llama-3.1-8b-serve",
        "--set", "serve.users=50", "--set", "serve.min_tokens_per_s_per_user=30", "--json",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    serving = json.loads(again.stdout)["serving"]
    assert serving["tokens_per_s_per_user"] >= 30 and serving["memory"]["fits"]
    assert serving["tokens_per_s_total"] == pytest.approx(best["samples_per_s"])


def test_plan_set_refuses_build_keys() -> None:
    out = run_dlrig("plan", "--workload", "llama-3.1-8b-serve", "--budget", "5000",
                    "--set", "gpus.0.count=2")  # fmt: skip
    assert out.returncode == 2 and "workload keys only" in out.stderr


def test_gpu4_judges_a_serving_workload_by_its_weight_format() -> None:
    """Qwen2.5-32B: 65 GB in bf16 cannot sit on one 24 GB card (GPU.4 error); AWQ int4
    (~19 GB with 16-bit embeddings) can."""
    from dlrig.catalog import load_catalog
    from dlrig.machine import resolve_build
    from dlrig.rules import check_build

    build = resolve_build({"gpus": [{"model": "RTX 3090"}]}, "t", load_catalog(None))
    doc = {"model": "qwen-32b-serve"}
    bf16 = check_build(build, resolve_workload(doc, "t"))
    int4 = check_build(build, resolve_workload({**doc, "serve": {"quantization": "int4"}}, "t"))
    assert any(f.rule == "GPU.4" for f in bf16.errors)
    assert not any(f.rule == "GPU.4" for f in int4.errors)
