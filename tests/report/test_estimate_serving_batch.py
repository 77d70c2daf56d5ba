"""An offline batch (`serve.requests`): `dlrig estimate` times the batch as it runs, in waves
of the requests the build runs at once (dlrig.model.serving_batch), in the terminal, the JSON
and the page alike; the queue it is meant to form is no GPU.4 warning."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import pytest
from serving_cli import dlrig

from dlrig.report.serving import hours_of_s

pytestmark = pytest.mark.slow

# Llama 3.1 8B on vLLM at the zoo's 1000/300: its KV cache holds 353 whole contexts
# (test_estimate_serving_queue.py derives the figure), so 1,000 requests run as two waves of
# 353 and a last one of 294.
BATCH = ("--workload", "llama-3.1-8b-serve", "--set", "serve.engine=vllm",
         "--set", "serve.requests=1000")  # fmt: skip


def test_a_batch_runs_in_waves_and_the_run_is_the_batch(h100: Path) -> None:
    out = dlrig("estimate", str(h100), *BATCH, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    s, b = doc["serving"], doc["serving"]["batch"]
    assert s["users"] == 1000  # a batch's requests all ask at once
    assert (b["requests"], b["running_at_once"]) == (1000, 353)
    assert (b["full_waves"], b["last_wave_requests"]) == (2, 294)
    assert b["steady_tokens_per_s"] == pytest.approx(s["tokens_per_s_total"])
    assert b["tokens_per_s_total"] == pytest.approx(1000 * 300 / b["run_s"])
    # The last wave reads every weight each step for 294 answers, not 353: below the steady rate.
    assert b["tokens_per_s_total"] < b["steady_tokens_per_s"]
    assert b["run_s_low"] < b["run_s"] < b["run_s_high"]
    assert doc["throughput"]["samples_per_s"] == pytest.approx(b["tokens_per_s_total"])
    # A batch is meant to queue: what binds is its step's limit, and the advice is about the
    # requests running at once, not about asking for fewer users.
    assert s["binding"] == "decode_compute"
    advice = doc["step"]["advice"]
    assert "fewer users" not in advice and "more GPUs" in advice
    # The run is the batch's 300,000 output tokens at the batch's rate (and the weights' load).
    assert doc["run"]["samples"] == 1000 * 300
    assert doc["run"]["time_h"] * 3600 >= b["run_s"]


def test_the_terminal_and_page_say_the_waves_without_a_gpu4_warning(
    h100: Path, tmp_path: Path
) -> None:
    out = dlrig("estimate", str(h100), *BATCH)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "GPU.4 warning" not in text
    assert "batch of 1,000 requests sent at once: 2 waves of 353 at once, then the last 294" in text
    assert "the batch's other 647 requests wait their turn and run in waves" in text
    page = tmp_path / "page.html"
    assert dlrig("estimate", str(h100), *BATCH, "--html", str(page)).returncode == 0
    body = page.read_text().split("<body>", 1)[1]
    facts = " ".join(html_lib.unescape(re.sub(r"<[^>]+>", " ", body)).split())
    assert (
        "batch of 1,000 requests" in facts and "2 waves of 353 at once, then the last 294" in facts
    )
    # the page's run interval is JSON's run_s_low / run_s_high, as the terminal writes times
    b = json.loads(dlrig("estimate", str(h100), *BATCH, "--json").stdout)["serving"]["batch"]
    assert f"interval {hours_of_s(b['run_s_low'])}-{hours_of_s(b['run_s_high'])}" in facts


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("serve.engine=local", "'requests' is a batched engine's offline batch"),
        ("serve.arrival_rate=3", "'requests' (a batch sent at once) and 'arrival_rate'"),
    ],
)
def test_a_batch_where_it_cannot_be_is_one_line_exit_2(h100: Path, extra: str, says: str) -> None:
    out = dlrig("estimate", str(h100), *BATCH, "--set", extra)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert says in out.stderr
