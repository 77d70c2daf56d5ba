"""GPU measurements through torch.cuda: copy bandwidths, device memory bandwidth, matmul TFLOPS,
peer-to-peer bandwidth. torch is imported inside the functions (it takes seconds to import).

Method, stated once for all figures: buffers are allocated first, each measurement runs warm-up
iterations (not timed), then timed iterations between two CUDA events recorded on the current
stream (peer-to-peer: wall clock between device synchronisations, since the copy spans two
devices). GB means 10^9 bytes, TFLOPS 10^12 floating-point operations per second, with a
matmul of n x n by n x n counted as 2 n^3 operations.

Without torch, with a CPU-only torch, or without a CUDA device, `cuda_status()` says so and
`measure_all()` returns a report with `available=False` and the reason: no CUDA is data.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from dlrig.enums import Precision
from dlrig.units import MIB, bytes_s_to_gb_s, flops_to_tflops

_MIB = MIB
T = TypeVar("T")

METHOD = (
    "buffers allocated first; warm-up iterations untimed; timed iterations between two CUDA "
    "events on the current stream (peer-to-peer: wall clock between device synchronisations); "
    "GB = 10^9 bytes; an n x n matmul counts 2 n^3 operations"
)


@dataclass(frozen=True)
class CudaStatus:
    """Whether torch can reach a CUDA device, and why not when it cannot."""

    available: bool
    reason: str | None
    torch_version: str | None
    cuda_version: str | None
    device_count: int
    device_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class MatmulResult:
    """One precision's matmul rate; None with a reason when the device or torch cannot run it."""

    precision: Precision
    tflops: float | None
    n: int
    iterations: int
    note: str


@dataclass(frozen=True)
class GpuBandwidth:
    """One GPU's transfer and compute figures as measured by torch."""

    index: int
    name: str
    h2d_pinned_gb_s: float | None
    h2d_pageable_gb_s: float | None
    d2h_pinned_gb_s: float | None
    d2h_pageable_gb_s: float | None
    device_memory_gb_s: float | None
    matmul: tuple[MatmulResult, ...]
    transfer_bytes: int


@dataclass(frozen=True)
class TorchCudaReport:
    """Every torch.cuda measurement of the host (empty lists when there is no CUDA)."""

    status: CudaStatus
    gpus: tuple[GpuBandwidth, ...] = ()
    p2p_gb_s: tuple[tuple[float | None, ...], ...] = ()
    method: str = METHOD

    @property
    def available(self) -> bool:
        """True when torch reached at least one CUDA device."""
        return self.status.available


def cuda_status() -> CudaStatus:
    """torch's view of CUDA: installed, built with CUDA, and how many devices it sees."""
    try:
        import torch
    except ImportError:
        return CudaStatus(False, "torch is not installed", None, None, 0)
    version = str(torch.__version__)
    cuda = torch.version.cuda
    if cuda is None:
        return CudaStatus(False, "no CUDA: torch is a CPU-only build", version, None, 0)
    if not torch.cuda.is_available():
        return CudaStatus(False, "no CUDA: torch sees no CUDA device", version, str(cuda), 0)
    count = int(torch.cuda.device_count())
    names = tuple(str(torch.cuda.get_device_name(i)) for i in range(count))
    return CudaStatus(True, None, version, str(cuda), count, names)


def _event_time_s(torch: Any, fn: Callable[[], object], warmup: int, iterations: int) -> float:
    """Seconds per iteration of fn, between CUDA events, after warm-up."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iterations):
        fn()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / 1000.0 / iterations


def _copier(dst: Any, src: Any, non_blocking: bool) -> Callable[[], object]:
    return lambda: dst.copy_(src, non_blocking=non_blocking)


def measure_copies(index: int, size_bytes: int, iterations: int) -> dict[str, float]:
    """Host-to-device and device-to-host GB/s, pinned and pageable, on GPU `index`."""
    import torch

    device = torch.device("cuda", index)
    result: dict[str, float] = {}
    with torch.cuda.device(index):
        dev = torch.empty(size_bytes, dtype=torch.uint8, device=device)
        for pinned in (True, False):
            host = torch.empty(size_bytes, dtype=torch.uint8, pin_memory=pinned)
            host.fill_(1)
            label = "pinned" if pinned else "pageable"
            h2d = _event_time_s(torch, _copier(dev, host, pinned), 2, iterations)
            d2h = _event_time_s(torch, _copier(host, dev, pinned), 2, iterations)
            result[f"h2d_{label}_gb_s"] = bytes_s_to_gb_s(size_bytes / h2d)
            result[f"d2h_{label}_gb_s"] = bytes_s_to_gb_s(size_bytes / d2h)
            del host
    return result


def measure_device_memory(index: int, size_bytes: int, iterations: int) -> float:
    """Device memory GB/s of a device-to-device copy, counting the read and the write."""
    import torch

    with torch.cuda.device(index):
        src = torch.empty(size_bytes, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        seconds = _event_time_s(torch, lambda: dst.copy_(src), 3, iterations)
    return bytes_s_to_gb_s(2 * size_bytes / seconds)


def measure_matmul(index: int, precision: Precision, n: int, iterations: int) -> MatmulResult:
    """Matmul TFLOPS on random n x n matrices at one precision (tf32: the TF32 flag on)."""
    import torch

    flops = 2.0 * n**3
    dtypes = {
        Precision.FP32: torch.float32,
        Precision.TF32: torch.float32,
        Precision.FP16: torch.float16,
        Precision.BF16: torch.bfloat16,
    }
    saved_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        with torch.cuda.device(index):
            torch.backends.cuda.matmul.allow_tf32 = precision is Precision.TF32
            if precision is Precision.FP8:
                return _measure_fp8(torch, index, n, iterations, flops)
            if precision is Precision.BF16 and not torch.cuda.is_bf16_supported():
                return MatmulResult(precision, None, n, 0, "bf16 not supported on this device")
            a = torch.randn(n, n, device="cuda", dtype=dtypes[precision])
            b = torch.randn(n, n, device="cuda", dtype=dtypes[precision])
            seconds = _event_time_s(torch, lambda: torch.mm(a, b), 3, iterations)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved_tf32
    note = {
        Precision.FP32: "torch.mm, allow_tf32=False",
        Precision.TF32: "torch.mm on float32, torch.backends.cuda.matmul.allow_tf32=True",
    }.get(precision, f"torch.mm on {precision.value}")
    return MatmulResult(precision, flops_to_tflops(flops / seconds), n, iterations, note)


def _measure_fp8(torch: Any, index: int, n: int, iterations: int, flops: float) -> MatmulResult:
    major, minor = torch.cuda.get_device_capability(index)
    if (major, minor) < (8, 9) or not hasattr(torch, "float8_e4m3fn"):
        note = f"fp8 needs compute capability 8.9+ (this GPU: {major}.{minor})"
        return MatmulResult(Precision.FP8, None, n, 0, note)
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as required
    one = torch.tensor(1.0, device="cuda")
    try:
        seconds = _event_time_s(
            torch,
            lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
            3,
            iterations,
        )
    except (RuntimeError, TypeError) as exc:
        return MatmulResult(Precision.FP8, None, n, 0, f"torch._scaled_mm failed: {exc}")
    return MatmulResult(
        Precision.FP8, flops_to_tflops(flops / seconds), n, iterations, "torch._scaled_mm, e4m3"
    )


def measure_p2p(
    count: int, size_bytes: int, iterations: int
) -> tuple[tuple[float | None, ...], ...]:
    """GB/s of a copy from GPU i to GPU j; None on the diagonal and where peer access is off."""
    import torch

    rows = []
    for i in range(count):
        row: list[float | None] = []
        for j in range(count):
            if i == j or not torch.cuda.can_device_access_peer(i, j):
                row.append(None)
                continue
            src = torch.empty(size_bytes, dtype=torch.uint8, device=f"cuda:{i}")
            dst = torch.empty(size_bytes, dtype=torch.uint8, device=f"cuda:{j}")
            dst.copy_(src)  # warm-up: enables peer mappings
            torch.cuda.synchronize(i)
            torch.cuda.synchronize(j)
            start = time.perf_counter()
            for _ in range(iterations):
                dst.copy_(src)
            torch.cuda.synchronize(i)
            torch.cuda.synchronize(j)
            row.append(bytes_s_to_gb_s(size_bytes * iterations / (time.perf_counter() - start)))
            del src, dst
        rows.append(tuple(row))
    return tuple(rows)


def measure_all(
    quick: bool = False, precisions: tuple[Precision, ...] = tuple(Precision)
) -> TorchCudaReport:
    """Every measurement on every GPU torch sees (quick: smaller buffers, fewer iterations)."""
    status = cuda_status()
    if not status.available:
        return TorchCudaReport(status)
    size = (64 if quick else 256) * _MIB
    iterations = 5 if quick else 20
    n = 4096 if quick else 8192
    gpus = []
    for index in range(status.device_count):
        copies = measure_copies(index, size, iterations)
        gpus.append(
            GpuBandwidth(
                index=index,
                name=status.device_names[index],
                h2d_pinned_gb_s=copies["h2d_pinned_gb_s"],
                h2d_pageable_gb_s=copies["h2d_pageable_gb_s"],
                d2h_pinned_gb_s=copies["d2h_pinned_gb_s"],
                d2h_pageable_gb_s=copies["d2h_pageable_gb_s"],
                device_memory_gb_s=measure_device_memory(index, 4 * size, iterations),
                matmul=tuple(measure_matmul(index, p, n, iterations) for p in precisions),
                transfer_bytes=size,
            )
        )
    p2p = measure_p2p(status.device_count, size, iterations) if status.device_count > 1 else ()
    return TorchCudaReport(status, tuple(gpus), p2p)


def read_while_busy(index: int, read: Callable[[], T], seconds: float = 0.6) -> T:
    """Call read() halfway through `seconds` of matmuls and copies on GPU `index`.

    An idle GPU trains its PCIe link down and drops its clocks, so a link or clock reading means
    something only under load; torch releases the GIL inside CUDA calls, so the load runs in a
    thread while the caller reads NVML.
    """
    import threading

    import torch

    stop = threading.Event()

    def load() -> None:
        with torch.cuda.device(index):
            a = torch.randn(2048, 2048, device="cuda")
            host = torch.empty(64 * _MIB, dtype=torch.uint8, pin_memory=True)
            dev = torch.empty_like(host, device="cuda")
            while not stop.is_set():
                torch.mm(a, a)
                dev.copy_(host, non_blocking=True)
                torch.cuda.synchronize()

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    try:
        time.sleep(seconds / 2)
        return read()
    finally:
        stop.set()
        worker.join(timeout=seconds + 5)
