"""The sequences TensorRT-LLM held at once on one to four H100 SXM, as NVIDIA's aiconfigurator
measured them (data/calibration/trtllm_kv_capacity.csv), against dlrig's KV cache for the same
runs (scripts/trtllm_kv_capacity_check.py). They set one figure: the 3.5 GiB TensorRT-LLM keeps
on each card beside the weights, activations and NCCL (serving_memory.TRTLLM_OTHER_BYTES)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import trtllm_kv_capacity_check as check  # noqa: E402

from dlrig.model import serving_memory  # noqa: E402

CAPACITIES = check.capacities()


def test_every_row_is_aiconfigurators_h100_measurement() -> None:
    """24 runs: Llama 3.1 8B BF16 and Qwen3-32B FP8 at TP 1, 2 and 4, four lengths each."""
    assert len(CAPACITIES) == 24
    with check.ROWS.open() as fh:
        assert all("aiconfigurator@095f58a5:" in line for line in list(fh)[1:])


def test_llama_8b_on_one_h100_holds_78_sequences_in_both() -> None:
    """Llama 3.1 8B BF16 on one H100 at 2,048 / 2,048 (max_seq_len 5,096, fraction 0.8): 78
    sequences ran; dlrig's cache, 0.8 of what the 15.0 GiB of weights, the profiling pass and
    the engine's 3.5 GiB leave of 80 GiB, holds 78 as well, at 0.62 GiB each."""
    one = next(c for c in CAPACITIES
               if c.model.endswith("Llama-3.1-8B") and c.tensor_parallel == 1
               and (c.input_len, c.output_len) == (2048, 2048))  # fmt: skip
    assert (one.measured, one.predicted) == (78, 78)


def test_the_engines_own_memory_is_what_the_sequences_say(monkeypatch: pytest.MonkeyPatch) -> None:
    """With TensorRT-LLM's 3.5 GiB a card dlrig's cache holds 1.9% more sequences than ran
    (median of 24, none fewer); with the 551 MB of CUDA and cuBLAS state it counted before,
    6.6% more, every row over."""
    errors = [c.error for c in CAPACITIES]
    assert statistics.median(errors) == pytest.approx(0.019, abs=0.001)
    assert min(errors) >= 0.0
    monkeypatch.setattr(serving_memory, "TRTLLM_OTHER_BYTES", 551.0 * 2**20)
    older = [c.error for c in check.capacities()]
    assert statistics.median(older) == pytest.approx(0.066, abs=0.001)
    assert min(older) > 0.03
