"""A serving workload's estimate is its serving figures (issue 39): one rate of output tokens
everywhere (step, throughput, run, energy, plan), one memory figure, and no speed, run or
energy for a job that cannot run. The issue's reproducers, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model import Estimate, estimate
from dlrig.model.served import served_step
from dlrig.workloads import resolve_workload

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"
BUDGET = EXAMPLES / "budget-1gpu-3090.yaml"
SPACED = EXAMPLES / "2x-4090-spaced-workstation.yaml"
BLOWER = EXAMPLES / "4x-blower-workstation.yaml"


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


def _estimate(gpus: list[dict[str, object]], users: int) -> Estimate:
    build = resolve_build({"gpus": gpus, "memory": {"size_gb": 128}}, "t", load_catalog())
    return estimate(
        build, resolve_workload({"model": "llama-3.1-8b-serve", "serve": {"users": users}}, "t")
    )


def test_the_step_is_the_time_per_output_token_its_stages_add_up_to() -> None:
    est = _estimate([{"model": "RTX 4090", "count": 2}], 16)
    s = est.serving
    assert s is not None
    step = served_step(s)
    assert step.time_s == pytest.approx(s.tpot_s, rel=1e-12)
    assert sum(step.exposed_s.values()) == pytest.approx(s.tpot_s, rel=1e-12)
    # Decode reads the weights: the 4090s bind on bandwidth (the serving binding's stage).
    assert s.binding.value == "decode_bandwidth"
    assert est.bottleneck.value == "gpu_memory_bandwidth"
    # Two copies of the 8B model, one a card: each batches 8 of the 16 users.
    assert est.batch_per_gpu == 8


def test_throughput_run_and_energy_are_the_output_tokens_per_second() -> None:
    est = _estimate([{"model": "RTX 4090", "count": 2}], 16)
    s = est.serving
    assert s is not None
    assert est.samples_per_s == est.tokens_per_s == s.tokens_per_s_total
    # The preset's 1e7 output tokens at that rate, plus loading the weights (DISK.job).
    assert est.run.samples == 1e7
    assert est.run.time_h >= 1e7 / s.tokens_per_s_total / 3600
    assert est.run.time_h == pytest.approx(1e7 / s.tokens_per_s_total / 3600, rel=0.01)
    # kWh per million output tokens: the run's wall draw (parts' average / PSU efficiency).
    wall_kw = est.power.average_w / est.power.psu_efficiency / 1000
    assert est.kwh_per_million_tokens == pytest.approx(wall_kw * 1e6 / s.tokens_per_s_total / 3600)


def test_one_card_holds_its_share_and_the_figures_add_up_to_the_serving_answer() -> None:
    est = _estimate([{"model": "RTX 4090", "count": 2}], 16)
    s, m = est.serving, est.memory
    assert s is not None
    assert m.model_states_gb == pytest.approx(s.weights_gb)  # a whole copy on each card
    assert m.activations_gb == pytest.approx(8 * s.kv_per_user_gb)  # its 8 users' KV cache
    assert m.gpu_required_gb == pytest.approx(m.model_states_gb + m.activations_gb + m.overhead_gb)
    assert m.fits is s.fits is True and m.gpu_required_gb <= m.gpu_available_gb


def test_issue_405b_on_one_3090_does_not_fit_exits_1_with_one_memory_figure() -> None:
    out = dlrig("estimate", str(BUDGET), "--workload", "llama-3.1-405b-serve")
    assert out.returncode == 1, out.stderr  # README: 1 if the job does not fit
    lines = out.stdout.splitlines()
    # 405e9 fp8 weights are 381.9 GiB (units.py: memory in GiB)
    assert lines[0].startswith("DOES NOT FIT (GPU.4 error): llama-3.1-405b-serve in fp8: 381.9 GiB")
    text = " ".join(out.stdout.split())
    for absent in ("throughput:", "run:", "kWh", "time to first token", "tokens/s"):
        assert absent not in text
    doc = json.loads(dlrig("estimate", str(BUDGET), "--workload", "llama-3.1-405b-serve",
                           "--json").stdout)  # fmt: skip
    memory = doc["memory"]
    # One figure: the weights in fp8 (405e9 bytes: 381.9 GiB) and the rest, on the one card,
    # in the line that says how much it needs, as in --json.
    assert f"GPU memory per card: {memory['gpu_required_gb']:.1f} GiB needed of 24 GiB" in text
    assert f"weights {doc['serving']['memory']['weights_gb']:.1f}" in text
    assert memory["fits"] is False and memory["model_states_gb"] == pytest.approx(381.9, abs=0.05)
    assert doc["throughput"]["samples_per_s"] is None and doc["run"]["energy_kwh"] is None
    assert doc["serving"]["energy"]["kwh_per_million_tokens"] is None


def test_issue_8b_for_16_users_says_one_rate_everywhere() -> None:
    args = ("estimate", str(SPACED), "--workload", "llama-3.1-8b-serve", "--set", "serve.users=16")
    out = dlrig(*args)
    doc = json.loads(dlrig(*args, "--json").stdout)
    total = doc["serving"]["tokens_per_s_total"]
    assert doc["throughput"]["samples_per_s"] == doc["throughput"]["tokens_per_s"] == total
    assert f"throughput: {total:,.0f} output tokens/s in total" in out.stdout
    assert "samples/s" not in out.stdout  # the training-style line is gone
    hours = doc["run"]["time_h"]
    assert hours == pytest.approx(doc["run"]["samples"] / total / 3600, rel=0.01)


def test_issue_plan_time_is_at_the_rate_it_ranks_by() -> None:
    """`plan --workload llama-3.1-70b-serve --budget 20000 --json`: samples_per_s 18.6 while
    time_h implied 23.9 before; now the run is the preset's 1e7 tokens at samples_per_s (and
    the weights' load)."""
    doc = json.loads(
        dlrig("plan", "--workload", "llama-3.1-70b-serve", "--budget", "20000", "--json").stdout
    )
    for b in doc["builds"]:
        row = b["workloads"][0]
        assert row["time_h"] == pytest.approx(1e7 / b["samples_per_s"] / 3600, rel=0.01)
        assert b["kwh_per_million_tokens"] == row["kwh_per_million_tokens"]


def test_issue_a_batch_split_into_micro_batches_is_not_said_not_to_fit() -> None:
    out = dlrig("estimate", str(BLOWER), "--workload", "llama-3-8b-lora")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("GPU.4 warning: llama-3-8b-lora needs")
    # The split micro-batch fits; its memory interval's top may not (report.memory_line).
    assert "DOES NOT FIT" not in out.stdout and "(fits" in out.stdout


@pytest.mark.parametrize(
    ("quantization", "named"),
    [
        ("bf16", "a smaller weight format (serve.quantization: fp8 or int4), "),
        ("fp8", "a smaller weight format (serve.quantization: int4), "),
        ("int4", ""),
    ],
)
def test_weights_that_do_not_fit_are_pointed_only_to_smaller_formats(
    quantization: str, named: str
) -> None:
    """Llama 3.1 405B on one RTX 3090 binds on its weights in every format: the advice names
    the formats with fewer bits a weight than the build's own (16, 8, then 4.25 with its
    group scales), none once it is at 4 bits."""
    from dlrig.model.served import served_advice

    build = resolve_build({"gpus": [{"model": "RTX 3090", "count": 1}]}, "t", load_catalog())
    doc = {"model": "llama-3.1-405b-serve", "serve": {"quantization": quantization}}
    s = estimate(build, resolve_workload(doc, "t")).serving
    assert s is not None and s.binding.value == "weight_memory"
    assert served_advice(s) == (
        f"more or larger GPUs, {named}a local runner that keeps some layers in RAM "
        "(serve.engine: local)"
    )
