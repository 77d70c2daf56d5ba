"""Kernel-level measurements on a lent GPU, the ground truth for the model's per-operator rates.

    python scripts/gpu_kernels.py --out kernels.json [--only gemm,attention,pointwise,launch]

- gemm: matrix products by shape and precision (square sizes, a wave-quantisation sweep of N, the
  forward and both backward products of Llama 3 8B and 70B layers, LoRA's rank-16 products,
  decode's few-row products, and a batched server's decode products of a 70B layer at 16-4,096
  rows in bf16 and fp8, whole and split eight ways), each the median of three timed runs of
  back-to-back products between CUDA events, operands resident (L2 holds the small ones, as in
  a loop over one layer).
- attention: torch's scaled_dot_product_attention under each backend (flash, memory-efficient,
  cuDNN, math) by sequence length, head size and causality, forward and forward+backward.
- pointwise: bandwidth-bound kernels (add, GELU, SwiGLU, LayerNorm, RMSNorm, softmax, fp32
  cross-entropy over a 128k vocabulary, AdamW's fused and foreach steps) in GB/s of the bytes
  each must read and write.
- launch: how long the host takes to dispatch a kernel against how long the GPU takes to run
  it: tiny kernels eager and replayed from a CUDA graph, and chains of matmuls of growing size,
  so that the step's launch cost can be modelled as overlapping the GPU's work.
Every figure is what this machine did; nothing here is fitted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import socket
import statistics
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

TARGET_S = 0.02  # each timed run lasts about this long


def gpu_seconds(fn: Callable[[], Any], repeats: int = 3) -> tuple[float, int]:
    """Median seconds per call of `fn` over `repeats` runs of back-to-back calls (CUDA events)."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    once_s = max(start.elapsed_time(end) / 1e3, 1e-6)
    calls = max(1, min(2000, int(TARGET_S / once_s)))
    runs = []
    for _ in range(repeats):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) / 1e3 / calls)
    return statistics.median(runs), calls


DTYPES = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
    "tf32": torch.float32,
}


def gemm_row(
    label: str, m: int, n: int, k: int, precision: str, layout: str = "nn"
) -> dict[str, Any]:
    """C[m,n] = A[m,k] @ B[k,n]; layout 'nt' or 'tn' takes B or A transposed (the backward)."""
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    if precision == "fp8":
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = (
            torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
        )  # column-major, as _scaled_mm needs
        one = torch.tensor(1.0, device="cuda")

        def fn() -> Any:
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        element = 1
    else:
        dtype = DTYPES[precision]
        a = (
            torch.randn(k, m, device="cuda", dtype=dtype).t()
            if layout == "tn"
            else torch.randn(m, k, device="cuda", dtype=dtype)
        )
        b = (
            torch.randn(n, k, device="cuda", dtype=dtype).t()
            if layout == "nt"
            else torch.randn(k, n, device="cuda", dtype=dtype)
        )

        def fn() -> Any:
            return a @ b

        element = a.element_size()
    seconds, calls = gpu_seconds(fn)
    flops = 2.0 * m * n * k
    out_bytes = m * n * (2 if precision in ("bf16", "fp16", "fp8") else 4)
    moved = (m * k + k * n) * element + out_bytes
    torch.backends.cuda.matmul.allow_tf32 = False
    return {
        "label": label,
        "m": m,
        "n": n,
        "k": k,
        "precision": precision,
        "layout": layout,
        "seconds": seconds,
        "calls_per_run": calls,
        "tflops": flops / seconds / 1e12,
        "min_bytes": moved,
        "gb_s": moved / seconds / 1e9,
    }


LLAMA_8B = {
    "q_proj": (4096, 4096),
    "kv_proj": (4096, 1024),
    "o_proj": (4096, 4096),
    "gate_up_proj": (4096, 14336),
    "down_proj": (14336, 4096),
    "lm_head": (4096, 128256),
}
LLAMA_70B = {
    "q_proj": (8192, 8192),
    "kv_proj": (8192, 1024),
    "gate_up_proj": (8192, 28672),
    "down_proj": (28672, 8192),
}


# A batched server's decode GEMMs at each batch (rows) of Llama 3 70B's layer, whole (one GPU)
# and as one of eight tensor-parallel GPUs holds it: the serving model takes one share of the
# card's rate for every batch and width (serving.BATCHED's decode share), and its rows on one
# or two GPUs and on eight disagree about it (bench/provenance.toml); these say how the share
# grows with the rows and shrinks with the width. From 16 rows: torch._scaled_mm takes FP8
# operands in multiples of 16 (one row is in the bf16 decode products above).
SERVING_DECODE_ROWS = (16, 64, 128, 256, 512, 1024, 2048, 4096)
SERVING_TENSOR_PARALLEL = (1, 8)


def serving_decode_layer(tp: int) -> dict[str, tuple[int, int]]:
    """(K, N) of one Llama 3 70B layer's GEMMs on one of `tp` GPUs: the fused Q/K/V and the
    gate/up projections split by columns, the output and down projections by rows."""
    hidden, kv, ffn = 8192, 1024, 28672
    return {
        "qkv_proj": (hidden, (hidden + 2 * kv) // tp),
        "o_proj": (hidden // tp, hidden),
        "gate_up_proj": (hidden, 2 * ffn // tp),
        "down_proj": (ffn // tp, hidden),
    }


def gemm_shapes() -> list[tuple[str, int, int, int, str, str]]:
    shapes: list[tuple[str, int, int, int, str, str]] = []
    for s in (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384):
        shapes.append(("square", s, s, s, "bf16", "nn"))
    for s in (1024, 4096, 8192):
        shapes.append(("square", s, s, s, "fp16", "nn"))
    for s in (1024, 2048, 4096, 8192):
        shapes.append(("square", s, s, s, "tf32", "nn"))
    shapes.append(("square", 4096, 4096, 4096, "fp32", "nn"))
    for s in (2048, 4096, 8192, 16384):
        shapes.append(("square", s, s, s, "fp8", "nn"))
    for n in range(256, 8448, 256):
        shapes.append(("wave_n", 8192, n, 4096, "bf16", "nn"))
    for tokens in (1024, 4096, 16384):
        for name, (k, n) in LLAMA_8B.items():
            shapes.append((f"llama3_8b.{name}.fwd", tokens, n, k, "bf16", "nn"))
            if tokens == 4096:
                shapes.append((f"llama3_8b.{name}.dgrad", tokens, k, n, "bf16", "nt"))
                shapes.append((f"llama3_8b.{name}.wgrad", k, n, tokens, "bf16", "tn"))
    for name, (k, n) in LLAMA_70B.items():
        shapes.append((f"llama3_70b.{name}.fwd", 4096, n, k, "bf16", "nn"))
    for k, n in ((4096, 16), (16, 4096), (14336, 16), (16, 14336), (4096, 64), (64, 4096)):
        shapes.append(("lora", 4096, n, k, "bf16", "nn"))
    for rows in (1, 8, 32, 128):
        for k, n in ((4096, 4096), (4096, 14336), (8192, 8192)):
            shapes.append(("decode", rows, n, k, "bf16", "nn"))
    for precision in ("bf16", "fp8"):
        for tp in SERVING_TENSOR_PARALLEL:
            for name, (k, n) in serving_decode_layer(tp).items():
                for rows in SERVING_DECODE_ROWS:
                    shapes.append((f"serving_decode.tp{tp}.{name}", rows, n, k, precision, "nn"))
    return shapes


def gemm() -> list[dict[str, Any]]:
    rows = []
    for label, m, n, k, precision, layout in gemm_shapes():
        try:
            rows.append(gemm_row(label, m, n, k, precision, layout))
        except Exception as exc:  # a precision this build of torch lacks: keep going
            rows.append(
                {"label": label, "m": m, "n": n, "k": k, "precision": precision, "error": repr(exc)}
            )
        torch.cuda.empty_cache()
    return rows


def attention_rows(
    backends: dict[str, Any], batch: int, seq: int, head_dim: int, causal: bool
) -> list[dict[str, Any]]:
    """One attention shape under each backend: forward, and forward with its backward."""
    from torch.nn.attention import sdpa_kernel

    heads = 32
    q, k, v = (
        torch.randn(
            batch, heads, seq, head_dim, device="cuda", dtype=torch.bfloat16
        ).requires_grad_()
        for _ in range(3)
    )
    grad = torch.randn(batch, heads, seq, head_dim, device="cuda", dtype=torch.bfloat16)
    flops_fwd = 4.0 * batch * heads * seq * seq * head_dim * (0.5 if causal else 1.0)

    def forward() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def forward_backward() -> None:
        torch.autograd.grad(forward(), (q, k, v), grad)

    rows = []
    for name, backend in backends.items():
        if name == "math" and seq > 4096:
            continue
        row: dict[str, Any] = {
            "backend": name,
            "batch": batch,
            "heads": heads,
            "seq": seq,
            "head_dim": head_dim,
            "causal": causal,
            "precision": "bf16",
            "flops_fwd": flops_fwd,
        }
        try:
            with sdpa_kernel(backend):
                fwd_s, _ = gpu_seconds(forward)
                both_s, _ = gpu_seconds(forward_backward)
            row.update(
                {
                    "fwd_s": fwd_s,
                    "fwd_bwd_s": both_s,
                    "fwd_tflops": flops_fwd / fwd_s / 1e12,
                    "fwd_bwd_tflops": 3.5 * flops_fwd / both_s / 1e12,
                }
            )
        except Exception as exc:  # a backend that refuses this shape: record why
            row["error"] = repr(exc)[:300]
        rows.append(row)
    return rows


def attention() -> list[dict[str, Any]]:
    from torch.nn.attention import SDPBackend

    backends = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "math": SDPBackend.MATH,
    }
    rows = []
    for head_dim in (64, 128):
        for seq in (512, 1024, 2048, 4096, 8192):
            for causal in (False, True):
                rows += attention_rows(backends, max(1, 16384 // seq), seq, head_dim, causal)
                torch.cuda.empty_cache()
    return rows


def bandwidth_row(name: str, fn: Callable[[], Any], moved: int, **shape: Any) -> dict[str, Any]:
    """A bandwidth-bound kernel's time and the GB/s of the bytes it must read and write."""
    seconds, _ = gpu_seconds(fn)
    return {
        "kernel": name,
        **shape,
        "seconds": seconds,
        "bytes": moved,
        "gb_s": moved / seconds / 1e9,
    }


def elementwise_rows(elements: int) -> list[dict[str, Any]]:
    x = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(elements, device="cuda", dtype=torch.bfloat16)
    shape = {"elements": elements, "dtype": "bf16"}
    return [
        bandwidth_row("add", lambda: x + y, 6 * elements, **shape),
        bandwidth_row("gelu", lambda: F.gelu(x), 4 * elements, **shape),
        bandwidth_row("swiglu", lambda: F.silu(x) * y, 6 * elements, **shape),
        bandwidth_row("cast_bf16_to_fp32", lambda: x.float(), 6 * elements, **shape),
    ]


def norm_rows(tokens: int, hidden: int = 4096) -> list[dict[str, Any]]:
    h = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
    w = torch.ones(hidden, device="cuda", dtype=torch.bfloat16)
    moved = 4 * tokens * hidden
    shape = {"tokens": tokens, "hidden": hidden, "dtype": "bf16"}
    return [
        bandwidth_row("layer_norm", lambda: F.layer_norm(h, (hidden,), w, w), moved, **shape),
        bandwidth_row("rms_norm", lambda: F.rms_norm(h, (hidden,), w), moved, **shape),
        bandwidth_row("softmax", lambda: torch.softmax(h, dim=-1), moved, **shape),
    ]


def cross_entropy_row(tokens: int = 4096, vocab: int = 128256) -> dict[str, Any]:
    """The fp32 loss over 16-bit logits as HF models compute it: upcast, log-softmax, gather."""
    logits = torch.randn(tokens, vocab, device="cuda", dtype=torch.bfloat16)
    labels = torch.randint(0, vocab, (tokens,), device="cuda")
    return bandwidth_row(
        "cross_entropy_fp32",
        lambda: F.cross_entropy(logits.float(), labels),
        2 * tokens * vocab * 5,
        tokens=tokens,
        vocab=vocab,
    )


def adamw_row(fused: bool, tensors: int = 16, side: int = 4096) -> dict[str, Any]:
    """One AdamW step over fp32 weights: reads weight, grad, two moments; writes three (28 B)."""
    params = [torch.nn.Parameter(torch.randn(side, side, device="cuda")) for _ in range(tensors)]
    for p in params:
        p.grad = torch.randn_like(p)
    optimizer = torch.optim.AdamW(params, lr=1e-4, fused=fused, foreach=not fused)
    n = tensors * side * side
    name = "adamw_fused" if fused else "adamw_foreach"
    return bandwidth_row(name, optimizer.step, n * 28, params=n, dtype="fp32")


def pointwise() -> list[dict[str, Any]]:
    rows = []
    for elements in (1 << 20, 1 << 24, 1 << 27):
        rows += elementwise_rows(elements)
    for tokens in (4096, 16384):
        rows += norm_rows(tokens)
    rows.append(cross_entropy_row())
    rows += [adamw_row(True), adamw_row(False)]
    torch.cuda.empty_cache()
    return rows


def dispatch_row(kernel: Callable[[], Any], kernels: int, stream: Any) -> dict[str, Any]:
    """`kernels` launches of `kernel`: the host's time to dispatch them, the eager wall time, and
    the GPU's own time per kernel when a CUDA graph replays them (no host in the way)."""

    def chain() -> None:
        for _ in range(kernels):
            kernel()

    chain()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    chain()
    host_s = time.perf_counter() - t0
    torch.cuda.synchronize()
    wall_s = time.perf_counter() - t0
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        chain()
        with torch.cuda.graph(graph):
            chain()
    torch.cuda.synchronize()
    graph_s, _ = gpu_seconds(graph.replay, repeats=3)
    return {
        "kernels": kernels,
        "host_dispatch_us": host_s / kernels * 1e6,
        "eager_wall_us": wall_s / kernels * 1e6,
        "graph_gpu_us": graph_s / kernels * 1e6,
    }


def matmul_chain_row(size: int, stream: Any) -> dict[str, Any]:
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    return {"size": size, **dispatch_row(lambda: torch.mm(a, a), 400, stream)}


def launch() -> dict[str, Any]:
    """Host dispatch against GPU time: eager and graph-replayed chains of kernels."""
    stream = torch.cuda.Stream()
    tiny = torch.zeros(1, device="cuda")
    return {
        "tiny_add": dispatch_row(lambda: tiny.add_(1), 2000, stream),
        "matmul_chain": [
            matmul_chain_row(size, stream)
            for size in (32, 64, 128, 256, 512, 768, 1024, 1536, 2048)
        ],
    }


def device_facts() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    return {
        "name": props.name,
        "multiprocessors": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "memory_gib": props.total_memory / 2**30,
        "l2_cache_bytes": getattr(props, "L2_cache_size", 0),
        "capability": f"{props.major}.{props.minor}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
    }


SECTIONS: dict[str, Callable[[], Any]] = {
    "gemm": gemm,
    "attention": attention,
    "pointwise": pointwise,
    "launch": launch,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(SECTIONS)
    doc: dict[str, Any] = {
        "provenance": f"measured by dlrig scripts/gpu_kernels.py on {socket.gethostname()} at "
        f"{dt.datetime.now(dt.UTC).isoformat()}",
        "device": device_facts(),
        "sections": {},
    }
    for name in names:
        start = time.perf_counter()
        try:
            doc["sections"][name] = SECTIONS[name]()
        except Exception as exc:  # a diagnostic run: keep the error, run the next section
            doc["sections"][name] = {"error": repr(exc), "trace": traceback.format_exc()}
        doc.setdefault("wall_s", {})[name] = round(time.perf_counter() - start, 2)
        args.out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        print(name, doc["wall_s"][name], "s", flush=True)


if __name__ == "__main__":
    main()
