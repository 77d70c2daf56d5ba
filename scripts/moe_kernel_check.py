"""dlrig's mixture-of-experts layer against TensorRT-LLM's measured MoE op, kernel by kernel.

    .venv/bin/python scripts/moe_kernel_check.py

NVIDIA's aiconfigurator timed TensorRT-LLM 1.2.0rc5's MoE op (routing, permuting the tokens,
both grouped GEMMs with the activation and quantization between them, the weighted combine) on
an H100, an H200 and a B200 across token counts, expert shapes, weight formats, expert-parallel
widths and two routings: balanced, and power-law (alpha 1.2, the routing aiconfigurator gives
a Qwen3 or Llama 4 mixture of experts by default). data/calibration/trtllm_moe_kernel_times.csv
holds the rows of Qwen3-30B-A3B's, Qwen3-235B-A22B's and a Mixtral-like (4,096 x 14,336, 8
experts, top 2) shape at EP 1 and 8. No serving row enters this script; one constant of the
model is set from it, TensorRT-LLM's CUDA-core work a routed (token, expert) pair (Part 2).

Part 1 times one MoE layer of each row as the serving model times a decode step's experts on
the batched engine (serving.decode_parts_s: the experts' read and their FLOPs at
MOE_GEMM_SHARE of the dense rate, joined at the GEMM overlap exponent, plus the MoE path's
fixed time a layer) and prints the median error by card, format, width and regime.

Part 3 times the same layers as the serving model times a prompt's experts (serving.prefill_s:
the routed FLOPs at MOE_GEMM_SHARE of the engine's dense rate and the routed pairs' CUDA-core
work, serving.routed_pair_s, split over the GPUs) at 4,096 tokens and more, and prints the
median error by card, format, expert shape, width and routing.

Part 2 fits the measured times with an op model of four terms, each a share of the card's
achievable rates (least squares on the relative error): a fixed time a layer; the local
experts' weights read at a share of the achievable bandwidth; their GEMM FLOPs at a share of
the achievable matmul rate; and a CUDA-core cost per routed (token, expert) pair, in FP32
FLOPs at the card's FP32 rate. The serving model takes its per-pair work under power-law
routing (serving.TRTLLM_MOE_PAIR_FP32_FLOP); its other shares are what the kernels reach in
isolation, and on TensorRT-LLM's published serving rows the whole model does not improve with
them (the closing notes of issue 36 give the figures).
"""

from __future__ import annotations

import csv
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import GPU
from dlrig.enums import Precision
from dlrig.model import serving
from dlrig.model.rates import achievable_matmul_tflops, achievable_memory_bandwidth_gb_s
from dlrig.units import gb_s_to_bytes_s, tflops_to_flops
from dlrig.workloads.serving import Engine, KVPrecision, ServeSpec, WeightFormat

REPO = Path(__file__).resolve().parents[1]
TIMES = REPO / "data" / "calibration" / "trtllm_moe_kernel_times.csv"
FORMATS = {"bfloat16": WeightFormat.BF16, "fp8": WeightFormat.FP8, "nvfp4": WeightFormat.NVFP4}
WEIGHT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "nvfp4": 0.5625}  # NVFP4: 16-value blocks, FP8 scale
DECODE_TOKENS = 256  # at most this many tokens a layer: a decode step's regime
PREFILL_TOKENS = 4096  # at least this many: a prompt's


@dataclass(frozen=True)
class Timing:
    gpu: GPU
    weight_dtype: str
    tokens: int
    hidden: int
    inter: int
    topk: int
    experts: int
    ep: int
    routing: str
    seconds: float

    @property
    def local_read_bytes(self) -> float:
        """The weights of the local experts the tokens route to, each read once."""
        touched = 1.0 - (1.0 - self.topk / self.experts) ** self.tokens
        local = self.experts / self.ep * touched
        return local * 3.0 * self.hidden * self.inter * WEIGHT_BYTES[self.weight_dtype]

    @property
    def local_flops(self) -> float:
        return 2.0 * 3.0 * self.hidden * self.inter * self.tokens * self.topk / self.ep

    @property
    def local_pairs(self) -> float:
        return self.tokens * self.topk / self.ep


def read_timings() -> list[Timing]:
    catalog = load_catalog(None)
    timings = []
    with TIMES.open() as fh:
        for r in csv.DictReader(fh):
            shape = (int(r["hidden_size"]), int(r["inter_size"]), int(r["topk"]))
            gpu = catalog.find(GPU, r["gpu"])
            experts, ep = int(r["num_experts"]), int(r["moe_ep_size"])
            seconds = float(r["latency_us"]) * 1e-6
            tokens = int(r["num_tokens"])
            timings.append(
                Timing(gpu, r["weight_dtype"], tokens, *shape, experts, ep, r["routing"], seconds)
            )
    return timings


def one_layer(t: Timing) -> ServeSpec:
    """A model of one MoE layer and nothing else: its experts are all its weights."""
    routed = 3.0 * t.hidden * t.inter
    return ServeSpec(
        total_params=routed * t.experts, active_params=routed * t.topk, layers=1,
        hidden_size=t.hidden, heads=1, kv_heads=1, head_dim=1, vocab_size=0,
        tied_embeddings=True, experts=t.experts, experts_per_token=t.topk, kv_latent_dim=None,
        quantization=FORMATS[t.weight_dtype], kv_precision=KVPrecision.FP8, prompt_tokens=1,
        output_tokens=1, users=t.tokens, min_tokens_per_s_per_user=None, engine=Engine.BATCHED,
        attention_data_parallel=t.ep > 1,
    )  # fmt: skip


def dlrig_layer_s(t: Timing) -> float:
    """The layer as serving.decode_parts_s times a step's experts: read and FLOPs joined,
    plus the MoE path's fixed time (the dense layer's fixed time is not the op's)."""
    spec = one_layer(t)
    cards = serving.Cards(t.gpu, t.ep, 1.0, nvlink=t.ep > 1, memory_bytes=0.0)
    parts = serving.decode_parts_s(spec, cards, t.tokens, 0.0, host_gb_s=1.0)
    gemms = {k: v for k, v in parts.items() if k in ("decode_bandwidth", "decode_compute")}
    gemms |= {k: 0.0 for k in parts if k not in gemms}
    step = serving.decode_step_s(gemms, serving.gemm_overlap_exponent(t.gpu, spec))
    return step + serving.ENGINES[Engine.BATCHED].moe_layer_overhead_s


def regime(t: Timing) -> str:
    if t.tokens <= DECODE_TOKENS:
        return "decode"
    return "prefill" if t.tokens >= PREFILL_TOKENS else "between"


def part1(timings: list[Timing]) -> None:
    print("Part 1: dlrig's layer time / measured - 1, median (rows) by card, format, EP, regime")
    groups: dict[str, list[float]] = defaultdict(list)
    for t in timings:
        key = f"{t.gpu.name} {t.weight_dtype} EP{t.ep} {t.routing} {regime(t)}"
        groups[key].append(dlrig_layer_s(t) / t.seconds - 1.0)
    for key, errors in sorted(groups.items()):
        print(f"  {key:58s} {statistics.median(errors):+6.0%} ({len(errors)})")


def _rate(t: Timing) -> float:
    """The card's achievable matmul rate in the row's weight format, FLOP/s."""
    fp4 = serving.fp4_matmul_tflops(t.gpu) if t.weight_dtype == "nvfp4" else None
    precision = Precision.FP8 if t.weight_dtype == "fp8" else Precision.BF16
    return float(tflops_to_flops(fp4 or achievable_matmul_tflops(t.gpu, precision)))


def op_terms(t: Timing) -> list[float]:
    """The op model's four terms at full rate: one, the read's seconds at the achievable
    bandwidth, the GEMMs' at the achievable rate, the pairs' per FP32 FLOP at the FP32 rate."""
    bandwidth = gb_s_to_bytes_s(achievable_memory_bandwidth_gb_s(t.gpu))
    fp32 = tflops_to_flops(t.gpu.fp32_tflops)
    return [1.0, t.local_read_bytes / bandwidth, t.local_flops / _rate(t), t.local_pairs / fp32]


@dataclass(frozen=True)
class OpFit:
    """The op model's terms as shares of the card's achievable rates, and its fit error."""

    fixed_s: float
    read_share: float
    gemm_share: float
    pair_fp32_flop: float
    median_error: float
    p90_error: float
    coefficients: tuple[float, ...]

    def seconds(self, t: Timing) -> float:
        return float(np.dot(op_terms(t), self.coefficients))


def fit_op_model(rows: list[Timing]) -> OpFit:
    """Least squares on the relative error of `rows`' times over the four op_terms."""
    terms = np.array([op_terms(t) for t in rows])
    y = np.array([t.seconds for t in rows])
    coef, *_ = np.linalg.lstsq(terms / y[:, None], np.ones_like(y), rcond=None)
    errors = np.abs(terms @ coef / y - 1.0)
    return OpFit(
        float(coef[0]), float(1.0 / coef[1]), float(1.0 / coef[2]), float(coef[3]),
        float(np.median(errors)), float(np.quantile(errors, 0.9)), tuple(float(c) for c in coef),
    )  # fmt: skip


def part2(timings: list[Timing]) -> None:
    print("Part 2: an op model fitted on the EP 1 rows of each routing")
    for routing in ("balanced", "power_law_1.2"):
        rows = [t for t in timings if t.ep == 1 and t.routing == routing]
        fit = fit_op_model(rows)
        print(
            f"  {routing}: fixed {fit.fixed_s * 1e6:.1f} us, read at {fit.read_share:.2f} of the "
            f"achievable bandwidth, GEMMs at {fit.gemm_share:.2f} of the achievable rate, "
            f"{fit.pair_fp32_flop / 1e3:,.0f}k FP32 FLOPs a (token, expert) pair; |error| "
            f"median {fit.median_error:.1%}, p90 {fit.p90_error:.1%} over {len(rows)} rows"
        )
        wide = [t for t in timings if t.ep == 8 and t.routing == routing and t.tokens >= 4096]
        ratio = statistics.median(t.seconds / fit.seconds(t) for t in wide)
        print(
            f"    EP 8 at 4,096+ tokens takes {ratio:.2f}x the EP 1 fit "
            f"(the busiest GPU's share; 8^0.3 = {8**0.3:.2f})"
        )


def dlrig_prompt_layer_s(t: Timing) -> float:
    """The layer as serving.prefill_s times a prompt's experts: the routed FLOPs stretched by
    matmul_time_factor (MOE_GEMM_SHARE) at the engine's dense rate and the routed pairs' CUDA-
    core work (serving.routed_pair_s), split over the EP GPUs."""
    spec = one_layer(t)
    cards = serving.Cards(t.gpu, t.ep, 1.0, nvlink=t.ep > 1, memory_bytes=0.0)
    flops = serving.prefill_timed_flops(spec, t.tokens)
    gemms = flops / (t.ep * serving.achievable_matmul_flops_s(t.gpu, spec))
    return gemms + serving.routed_pair_s(spec, cards, t.tokens)


def shape(t: Timing) -> str:
    return f"{t.hidden}x{t.inter} top {t.topk}"


def prompt_errors(timings: list[Timing]) -> dict[str, list[float]]:
    """dlrig_prompt_layer_s / measured - 1 of the rows at PREFILL_TOKENS and more, by card,
    format, expert shape, EP width and routing."""
    groups: dict[str, list[float]] = defaultdict(list)
    for t in timings:
        if regime(t) == "prefill":
            key = f"{t.gpu.name} {t.weight_dtype} {shape(t)} EP{t.ep} {t.routing}"
            groups[key].append(dlrig_prompt_layer_s(t) / t.seconds - 1.0)
    return groups


def part3(timings: list[Timing]) -> None:
    print(
        "Part 3: dlrig's prompt path (MOE_GEMM_SHARE and the pairs' work) / measured - 1 at "
        "4,096+ tokens, median"
    )
    for key, errors in sorted(prompt_errors(timings).items()):
        print(f"  {key:64s} {statistics.median(errors):+6.0%} ({len(errors)})")


def main() -> None:
    timings = read_timings()
    part1(timings)
    part2(timings)
    part3(timings)
    mean = math.fsum(t.seconds for t in timings) / len(timings)
    print(f"{len(timings)} timed layers, mean {mean * 1e6:,.0f} us ({TIMES.relative_to(REPO)})")


if __name__ == "__main__":
    main()
