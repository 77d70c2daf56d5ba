"""MEASURING (touches the machine): a short real training loop in torch, timed per step.

The network is a stand-in described by `TrainSpec` (what it is and why is decided above this
layer, in `dlrig.probe.train`): a stack of 3x3 convolutions (with batch norm and ReLU) at a
fixed spatial size, or a stack of transformer encoder blocks. Inputs are synthetic tensors made
on the device once (no data loading), labels random. Method, stated once: `warmup` untimed
steps, then up to `steps` timed steps (stopping early after `time_limit_s`); each step is
forward, loss, backward and the optimizer step, and is timed from the host with a device
synchronisation at its end (the moment a training loop reading its loss would see it). The
median step stands for the loop. On CUDA, a copy of one batch of the workload's input bytes
from host memory (pinned or pageable, as the workload loads) is timed the same way.

torch is imported inside the functions; without it `TorchMissing` says how to install it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from dlrig.enums import Optimizer, Precision
from dlrig.errors import HardwareError

INSTALL = "pip install 'dlrig[torch]'"
METHOD = (
    "synthetic inputs made on the device; {warmup} untimed warm-up steps, then timed steps "
    "(forward, loss, backward, optimizer step), each ended by a device synchronisation; "
    "median step reported"
)


class TorchMissing(HardwareError):
    """torch is not installed: `probe --train` cannot run."""


@dataclass(frozen=True)
class TrainSpec:
    """The stand-in network and its loop. `kind` "conv": `layers` 3x3 convolutions of `width`
    channels on `size` x `size` inputs, pooled into a `classes`-way linear head. `kind`
    "transformer": `layers` encoder blocks of `width` (`heads` heads, 4x MLP) over `size`
    tokens. `input_bytes` is one sample of the real workload's input, for the copy timing."""

    kind: str
    layers: int
    width: int
    size: int
    batch: int
    precision: Precision
    optimizer: Optimizer
    heads: int = 1
    classes: int = 1000
    input_bytes: float = 0.0
    pin_memory: bool = True


@dataclass(frozen=True)
class TrainTiming:
    """What the loop measured."""

    device: str
    precision: Precision
    params: int
    warmup_steps: int
    steps: int
    step_s: float
    step_s_min: float
    step_s_max: float
    samples_per_s: float
    copy_s: float | None
    torch_version: str
    method: str


def require_torch() -> Any:
    """The torch module; TorchMissing (one line, exit 2) when it is not installed."""
    try:
        import torch
    except ImportError as exc:
        raise TorchMissing(f"probe --train needs torch, which is not installed: {INSTALL}") from exc
    return torch


def cuda_memory_bytes() -> int | None:
    """Memory of the CUDA device the loop would use; None when it runs on the CPU."""
    torch = require_torch()
    if not torch.cuda.is_available():
        return None
    return int(torch.cuda.get_device_properties(0).total_memory)


def _network(torch: Any, spec: TrainSpec) -> Any:
    nn = torch.nn
    if spec.kind == "conv":
        blocks: list[Any] = []
        for _ in range(spec.layers):
            blocks += [
                nn.Conv2d(spec.width, spec.width, 3, padding=1, bias=False),
                nn.BatchNorm2d(spec.width),
                nn.ReLU(inplace=True),
            ]
        blocks += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(spec.width, spec.classes)]
        return nn.Sequential(*blocks)
    if spec.kind == "transformer":
        layer = nn.TransformerEncoderLayer(
            spec.width,
            spec.heads,
            4 * spec.width,
            dropout=0.0,
            batch_first=True,
            norm_first=True,
        )
        return nn.TransformerEncoder(layer, spec.layers, enable_nested_tensor=False)
    raise ValueError(f"unknown stand-in kind {spec.kind!r}")  # probe.train makes only these


def _optimizer(torch: Any, spec: TrainSpec, params: Any) -> Any:
    if spec.optimizer is Optimizer.SGD:
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    return torch.optim.AdamW(params, lr=1e-4)


def _autocast(torch: Any, spec: TrainSpec, device: Any) -> Any:
    """16-bit runs under autocast (torch's mixed precision), as AMP training does."""
    import contextlib

    dtype = {Precision.FP16: torch.float16, Precision.BF16: torch.bfloat16}.get(spec.precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def _copy_s(torch: Any, spec: TrainSpec, device: Any, sync: Any) -> float | None:
    """Median seconds to copy one batch of the workload's input bytes to the device."""
    n_bytes = int(spec.input_bytes * spec.batch)
    if device.type != "cuda" or n_bytes <= 0:
        return None
    host = torch.empty(n_bytes, dtype=torch.uint8, pin_memory=spec.pin_memory)
    target = torch.empty(n_bytes, dtype=torch.uint8, device=device)
    times = []
    for i in range(7):
        start = time.perf_counter()
        target.copy_(host, non_blocking=spec.pin_memory)
        sync()
        if i >= 2:  # the first copies pay for mapping the buffers
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def train_steps(
    spec: TrainSpec, *, steps: int = 30, warmup: int = 5, time_limit_s: float = 60.0
) -> TrainTiming:
    """Train the stand-in on this machine's first CUDA device (else the CPU) and time it."""
    torch = require_torch()
    cuda = bool(torch.cuda.is_available())
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    precision = spec.precision
    if precision is Precision.TF32:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    model = _network(torch, spec).to(device)
    optimizer = _optimizer(torch, spec, model.parameters())
    scaler = torch.amp.GradScaler(device.type, enabled=precision is Precision.FP16 and cuda)
    if spec.kind == "conv":
        inputs = torch.randn(spec.batch, spec.width, spec.size, spec.size, device=device)
        labels = torch.randint(0, spec.classes, (spec.batch,), device=device)
    else:
        inputs = torch.randn(spec.batch, spec.size, spec.width, device=device)
        labels = torch.randn(spec.batch, spec.size, spec.width, device=device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with _autocast(torch, spec, device):
            out = model(inputs)
            if spec.kind == "conv":
                loss = torch.nn.functional.cross_entropy(out, labels)
            else:
                loss = torch.nn.functional.mse_loss(out.float(), labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    model.train()
    times: list[float] = []
    try:
        for _ in range(warmup):
            step()
        sync()
        began = time.perf_counter()
        while len(times) < steps and (not times or time.perf_counter() - began < time_limit_s):
            start = time.perf_counter()
            step()
            sync()
            times.append(time.perf_counter() - start)
    except torch.OutOfMemoryError as exc:
        raise HardwareError(
            f"probe --train: out of memory on {device} at batch {spec.batch}",
            hint="give a smaller --batch",
        ) from exc
    median = statistics.median(times)
    name = torch.cuda.get_device_name(device) if cuda else f"{torch.get_num_threads()} threads"
    return TrainTiming(
        device=f"{device.type}: {name}",
        precision=precision,
        params=sum(int(p.numel()) for p in model.parameters()),
        warmup_steps=warmup,
        steps=len(times),
        step_s=median,
        step_s_min=min(times),
        step_s_max=max(times),
        samples_per_s=spec.batch / median,
        copy_s=_copy_s(torch, spec, device, sync),
        torch_version=str(torch.__version__),
        method=METHOD.format(warmup=warmup),
    )
