"""A request's time to first token (dlrig.model.serving): the serving stack's time a request,
a lone user's prompt as a pass of its own over the weights, and under load the wait for the
step under way and the step that carries the prompt."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.calibration import default_calibration
from dlrig.model.serving import (
    REQUEST_OVERHEAD_S,
    Cards,
    ServingEstimate,
    achievable_bandwidth_bytes_s,
    cards,
    prefill_s,
    serving_estimate,
    weight_bytes_per_step,
    with_host_s,
)
from dlrig.workloads import load_workload
from dlrig.workloads.serving import Engine, ServeSpec, WeightFormat
from support.cli import assert_one_line_error, run_in_process

H100 = "H100 SXM5 80GB"
EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"


def _spec(**changes: object) -> ServeSpec:
    spec = load_workload("llama-3.1-8b-serve").serve
    assert spec is not None
    return replace(spec, **changes)  # type: ignore[arg-type]


def _cards(gpu: str) -> Cards:
    build = resolve_build({"gpus": [{"model": gpu, "count": 1}]}, "t", load_catalog(None))
    c = cards(build, default_calibration())
    assert c is not None
    return c


def _estimate(gpu: str, spec: ServeSpec) -> ServingEstimate:
    build = resolve_build({"gpus": [{"model": gpu, "count": 1}]}, "t", load_catalog(None))
    est = serving_estimate(build, spec, "llama-3.1-8b-serve")
    assert est is not None
    return est


def _inferencebench(users: int) -> ServeSpec:
    """InferenceBench's sweep: Llama 3.1 8B fp16 on vLLM 0.21.0, 128-token prompts and answers
    (bench/bench_serving.py TTFT_POINTS)."""
    return _spec(engine=Engine.VLLM, quantization=WeightFormat.FP16, prompt_tokens=128,
                 output_tokens=128, users=users)  # fmt: skip


def test_a_lone_users_ttft_is_the_server_time_and_its_prompts_pass() -> None:
    """InferenceBench's one-user TTFT on an H100 SXM, 13.98 ms p50, is the row the serving
    stack's 5.9 ms was chosen on: 5.9 ms plus the prompt's pass alone, 8.04 ms, where the
    prompt's FLOPs alone take 3.28 ms (the TTFT dlrig gave before, -77%)."""
    est = _estimate(H100, _inferencebench(1))
    assert est.prefill_s == pytest.approx(8.04e-3, abs=0.01e-3)
    assert est.ttft_s == pytest.approx(REQUEST_OVERHEAD_S + est.prefill_s)
    assert est.ttft_s == pytest.approx(13.98e-3, rel=0.01)
    assert prefill_s(_inferencebench(1), _cards(H100)) == pytest.approx(3.28e-3, abs=0.01e-3)


def test_a_short_prompt_alone_waits_on_reading_every_weight() -> None:
    """The RTX A6000 report's one fixed 39-token prompt, 32 of whose tokens vLLM's prefix
    cache skips: the 7 computed tokens' FLOPs take about a millisecond, but their pass reads
    the bf16 weights a step multiplies by (the embedding table is looked up, not read) at
    vLLM's 0.89 of the card's achievable bandwidth, as a decode step does (24.5 ms a token in
    the same estimate)."""
    qwen = {"total_params": 7.62e9, "active_params": 7.62e9, "layers": 28, "hidden_size": 3584,
            "heads": 28, "kv_heads": 4, "head_dim": 128, "vocab_size": 152064,
            "tied_embeddings": False}  # fmt: skip
    spec = _spec(engine=Engine.VLLM, quantization=WeightFormat.BF16, prompt_tokens=39,
                 output_tokens=52, shared_prefix_tokens=39, users=1, **qwen)  # fmt: skip
    c = _cards("NVIDIA RTX A6000")
    est = _estimate("NVIDIA RTX A6000", spec)
    read_s = weight_bytes_per_step(spec, 1) / achievable_bandwidth_bytes_s(c.gpu, spec)
    assert prefill_s(spec, c) < 1.2e-3
    assert read_s < est.prefill_s < read_s * 1.1
    assert est.prefill_s == pytest.approx(est.tpot_s, rel=0.02)


@pytest.mark.parametrize(
    ("engine", "riding"),
    [
        # vLLM computes the prompt inside the next step; its first token comes at that step's end.
        (Engine.VLLM, 1.0),
        # An engine with a prefill phase emits the first token from the prompt's own pass.
        (Engine.BATCHED, 0.0),
    ],
)
def test_under_load_a_request_waits_half_a_step_then_its_prompt(
    engine: Engine, riding: float
) -> None:
    """Beside running requests a new one arrives at random within the step under way (half a
    step's wait on average) before its prompt is computed: 16 users of InferenceBench's
    sweep, where nobody queues."""
    est = _estimate(H100, replace(_inferencebench(16), engine=engine))
    assert est.queue_wait_s == 0.0
    step = est.decode_step_s
    iteration = with_host_s(step, est.host_step_s)  # the host's time beside it: 0 on vLLM
    assert est.ttft_s == pytest.approx(
        REQUEST_OVERHEAD_S + 0.5 * iteration + riding * step + est.prefill_s
    )


def test_when_every_user_asks_at_once_the_last_waits_for_every_prompt() -> None:
    """16 of InferenceBench's users asking at once on vLLM: nothing runs to wait for, the 16
    prompts' FLOPs come first (16 x 3.28 ms) and the step that carries the last one's token
    (6.83 ms): 65.1 ms with the serving stack's 5.9 ms, against 19.4 ms for a request
    arriving at random; the sweep's median, 41.69 ms, lies between them."""
    est = _estimate(H100, _inferencebench(16))
    assert est.ttft_all_at_once_s == pytest.approx(
        REQUEST_OVERHEAD_S + 16 * est.prefill_s + est.decode_step_s
    )
    assert est.ttft_s == pytest.approx(19.4e-3, abs=0.1e-3)
    assert est.ttft_all_at_once_s == pytest.approx(65.1e-3, abs=0.1e-3)
    assert est.ttft_s < 41.69e-3 < est.ttft_all_at_once_s
    alone = _estimate(H100, _inferencebench(1))
    assert alone.ttft_all_at_once_s == alone.ttft_s


def test_the_serving_stacks_time_is_the_workloads_to_set() -> None:
    """`serve.request_overhead_s` replaces the 5.9 ms in every time to first token: a lone
    user's, a loaded one's, the all-at-once figure's and the arrivals' (MLPerf's LoadGen sets
    0: token IDs handed over in-process)."""
    base = _estimate(H100, _inferencebench(16))
    slow = _estimate(H100, replace(_inferencebench(16), request_overhead_s=0.025))
    extra = 0.025 - REQUEST_OVERHEAD_S
    assert slow.ttft_s == pytest.approx(base.ttft_s + extra)
    assert slow.ttft_all_at_once_s == pytest.approx(base.ttft_all_at_once_s + extra)
    assert "25.0 ms a request in the serving stack (serve.request_overhead_s)" in slow.notes[-1]
    alone = _estimate(H100, replace(_inferencebench(1), request_overhead_s=0.0))
    assert alone.ttft_s == pytest.approx(alone.prefill_s)


def test_arrivals_add_the_serving_stacks_time_to_every_first_token() -> None:
    """At 2 requests/s on InferenceBench's H100 the simulated TTFT median moves by exactly the
    stack's time (20 ms here against none)."""
    build = resolve_build({"gpus": [{"model": H100, "count": 1}]}, "t", load_catalog(None))
    spec = replace(_inferencebench(1), engine=Engine.BATCHED, arrival_rate=2.0)
    runs = {}
    for stack in (0.0, 0.02):
        served = replace(spec, request_overhead_s=stack)
        w = replace(load_workload("llama-3.1-8b-serve"), serve=served)
        s = estimate(build, w, arrivals=True).serving
        assert s is not None and s.load is not None and s.load.at_rate is not None
        runs[stack] = s.load.at_rate
    assert runs[0.02].ttft_p50_s == pytest.approx(runs[0.0].ttft_p50_s + 0.02)


def test_a_negative_serving_stack_time_is_a_one_line_error() -> None:
    code, _, err = run_in_process(
        "estimate", str(EXAMPLES / "budget-1gpu-3090.yaml"), "--workload", "llama-3.1-8b-serve",
        "--set", "serve.request_overhead_s=-0.01",
    )  # fmt: skip
    assert_one_line_error(code, err, "request_overhead_s")
