"""An engine's limit on the requests it runs at once (dlrig.model.serving.max_running):
TensorRT-LLM's max_batch_size, vLLM's max_num_seqs, or the workload's `serve.max_batch`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model.calibration import default_calibration
from dlrig.model.serving import ServingEstimate, cards, max_running, serving_estimate
from dlrig.report.serving import users_line
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, ServeSpec
from support.cli import assert_one_line_error, run_in_process

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"


def _spec(workload: str = "llama-3.1-8b-serve", **changes: object) -> ServeSpec:
    spec = load_workload(workload).serve
    assert spec is not None
    return replace(spec, **changes)  # type: ignore[arg-type]


def _estimate(gpu: str, count: int, spec: ServeSpec) -> ServingEstimate:
    build = resolve_build({"gpus": [{"model": gpu, "count": count}]}, "t", load_catalog(None))
    est = serving_estimate(build, spec, "t")
    assert est is not None
    return est


def test_tensorrt_llm_runs_at_most_its_default_max_batch_size() -> None:
    """4,000 users of 200-token conversations on an H200: its KV cache holds them all, but
    TensorRT-LLM runs at most max_batch_size requests, 2,048 unless set (LlmArgs.max_batch_size,
    tensorrt_llm/llmapi/llm_args.py): 1,952 wait, and the cache is not what binds."""
    est = _estimate("H200 SXM 141GB", 1, _spec(users=4000, prompt_tokens=100, output_tokens=100))
    assert est.max_users_fit > 4000 and est.fits
    assert (est.running_per_copy, est.users_waiting) == (2048, 1952)
    assert est.binding.value != "kv_memory"
    assert any("(TensorRT-LLM's default max_batch_size)" in n for n in est.notes)
    assert "2048 run at once (the engine's max_batch_size), 1952 wait" in users_line(est)


@pytest.mark.parametrize("engine", [Engine.BATCHED, Engine.VLLM])
def test_serve_max_batch_sets_the_limit_of_either_engine(engine: Engine) -> None:
    """`serve.max_batch` is TensorRT-LLM's max_batch_size and vLLM's max_num_seqs alike: 500
    of the 4,000 run, the rest wait, and the note names the setting."""
    spec = _spec(users=4000, prompt_tokens=100, output_tokens=100, engine=engine, max_batch=500)
    est = _estimate("H200 SXM 141GB", 1, spec)
    assert (est.running_per_copy, est.users_waiting) == (500, 3500)
    assert any("(serve.max_batch)" in n for n in est.notes)


def test_under_attention_data_parallelism_each_gpu_schedules_its_own_batch() -> None:
    """Under attention data parallelism each GPU runs a scheduler of its own, and
    max_batch_size bounds each (trtllm-bench's heuristic computes it per rank when attention
    DP is on, tensorrt_llm/bench/tuning/heuristics.py): 8 GPUs of 64 run 512 at once."""
    spec = _spec(
        "qwen3-235b-a22b-serve",
        tensor_parallel=8,
        attention_data_parallel=True,
        max_batch=64,
    )
    build = resolve_build(
        {"gpus": [{"model": "H200 SXM 141GB", "count": 8}]}, "t", load_catalog(None)
    )
    c = cards(build, default_calibration())
    assert c is not None
    assert max_running(spec, c) == 512
    assert max_running(replace(spec, engine=Engine.LOCAL, attention_data_parallel=False), c) is None


@pytest.mark.parametrize(
    ("sets", "needles"),
    [
        (["serve.max_batch=0"], ["serve.max_batch"]),
        # A local runner (llama.cpp) serves every user in one batch: a batch limit there would
        # change nothing, so setting one is refused, naming the field and the engines it is for.
        (
            ["serve.engine=local", "serve.max_batch=8"],
            ["'max_batch'", "'batched', 'vllm' or 'sglang'"],
        ),
        # The token budget (serve.max_num_tokens, tests/model/test_serving_token_budget.py) is
        # refused alike: llama.cpp computes each prompt alone.
        (["serve.max_num_tokens=0"], ["serve.max_num_tokens"]),
        (
            ["serve.engine=local", "serve.max_num_tokens=4096"],
            ["'max_num_tokens'", "'batched', 'vllm' or 'sglang'"],
        ),
    ],
)
def test_an_engine_limit_it_cannot_take_is_a_one_line_error(
    sets: list[str], needles: list[str]
) -> None:
    options = [arg for s in sets for arg in ("--set", s)]
    code, _, err = run_in_process(
        "estimate",
        str(EXAMPLES / "2x-4090-spaced-workstation.yaml"),
        "--workload",
        "llama-3.1-8b-serve",
        *options,
    )
    assert_one_line_error(code, err, *needles)
