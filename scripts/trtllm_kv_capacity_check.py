"""dlrig's TensorRT-LLM KV-cache capacity against the sequences TensorRT-LLM held on an H100.

    .venv/bin/python scripts/trtllm_kv_capacity_check.py

NVIDIA's aiconfigurator checks its memory formula against the most sequences TensorRT-LLM ran
at once on one to four H100 SXM (data/calibration/trtllm_kv_capacity.csv): Llama 3.1 8B in
BF16 and Qwen3-32B in FP8, a BF16 KV cache, `--max_num_tokens` twice the prompt and
`--free_gpu_memory_fraction 0.8`. Its formula, which matches them within 2%, reserves
`max_seq_len` (prompt + output + 1,000) a sequence; so does this check. dlrig sizes the cache as
the serving model does (serving_memory.free_bytes: the card less the weights, the profiling
pass's activations at max_num_tokens, NCCL's buffers and what else the engine keeps) times the
fraction. One constant rests on these rows: that last term, serving_memory.TRTLLM_OTHER_BYTES,
aiconfigurator's 3.5 GiB, which they bear out where its older 551 MB does not.
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.model import serving_memory
from dlrig.model.memory import gpu_memory_bytes
from dlrig.workloads import load_workload
from dlrig.workloads.serving import KVPrecision, ServeSpec, WeightFormat

REPO = Path(__file__).resolve().parents[1]
ROWS = REPO / "data" / "calibration" / "trtllm_kv_capacity.csv"
# The zoo's serving workload of each run's model, in the run's weight format.
MODELS = {
    "meta-llama/Meta-Llama-3.1-8B": ("llama-3.1-8b-serve", WeightFormat.BF16),
    "Qwen/Qwen3-32B-FP8": ("qwen3-32b-serve", WeightFormat.FP8),
}


@dataclass(frozen=True)
class Capacity:
    model: str
    tensor_parallel: int
    input_len: int
    output_len: int
    measured: int
    predicted: int

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0


def spec_of(row: dict[str, str]) -> ServeSpec:
    """The run's model as the zoo serves it, in the run's formats, lengths and engine budget."""
    workload, weights = MODELS[row["model"]]
    serve = load_workload(workload).serve
    assert serve is not None
    return replace(
        serve,
        quantization=weights,
        kv_precision=KVPrecision.BF16,
        prompt_tokens=int(row["input_len"]),
        output_tokens=int(row["output_len"]),
        max_num_tokens=int(row["max_num_tokens"]),
        tensor_parallel=int(row["tensor_parallel"]),
    )


def predicted_sequences(row: dict[str, str], gpu: GPU) -> int:
    """Sequences of max_seq_len tokens the KV cache holds: the free bytes of all the row's
    cards times the free-memory fraction, over a sequence's KV bytes."""
    spec = spec_of(row)
    gpus = int(row["tensor_parallel"])
    free = serving_memory.free_bytes(spec, gpu_memory_bytes(gpu), gpus)
    cache = free * float(row["free_gpu_memory_fraction"])
    per_sequence = serving_memory.kv_bytes_per_token(spec) * int(row["max_seq_len"])
    return math.floor(cache / per_sequence)


def capacities() -> list[Capacity]:
    catalog = load_catalog(None)
    with ROWS.open() as fh:
        rows = list(csv.DictReader(fh))
    out = []
    for r in rows:
        predicted = predicted_sequences(r, catalog.find(GPU, r["gpu"]))
        lengths = (int(r["input_len"]), int(r["output_len"]))
        out.append(Capacity(r["model"], int(r["tensor_parallel"]), *lengths,
                            int(r["max_concurrent_sequences"]), predicted))  # fmt: skip
    return out


def main() -> None:
    results = capacities()
    for c in results:
        print(
            f"{c.model:30s} TP{c.tensor_parallel} {c.input_len}/{c.output_len}: "
            f"{c.measured} measured, {c.predicted} dlrig ({c.error:+.0%})"
        )
    errors = [c.error for c in results]
    median = statistics.median(errors)
    print(f"{len(results)} rows, median {median:+.1%} ({ROWS.relative_to(REPO)})")


if __name__ == "__main__":
    main()
