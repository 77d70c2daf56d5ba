"""dlrig's CPU estimate against a real ResNet-50 training step on this machine's CPU.

    .venv/bin/python bench/bench_cpu_train.py [--batch 8] [--steps 8]

ResNet-50 as torchvision builds it (25,557,032 parameters; torchvision is not a dependency, so
the bottleneck blocks are written out here with the same shapes), fp32, NCHW, SGD with
momentum, synthetic data, on every CPU thread torch uses. The median step after two warm-up
steps is set beside `dlrig estimate` of the zoo's resnet50 at the same batch and precision on
this CPU (its cores and clock from /proc). The CPU path's efficiency in
scripts/calibrate.py (HAND_SET["cpu"]) is this measurement's share of the peak dlrig assumes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_info import machine, write_result

from dlrig.hardware.host import read_cpu
from dlrig.machine import resolve_build
from dlrig.model import estimate
from dlrig.model.calibration import default_calibration
from dlrig.model.rates import cpu_peak_flops_s
from dlrig.workloads import resolve_workload

OUT = Path(__file__).resolve().parent / "results" / "cpu_train.md"
STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # mid channels, blocks, stride


def resnet50(torch: Any) -> Any:
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, c_in: int, mid: int, stride: int) -> None:
            super().__init__()
            out = 4 * mid
            self.body = nn.Sequential(
                nn.Conv2d(c_in, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
                nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid),
                nn.ReLU(inplace=True), nn.Conv2d(mid, out, 1, bias=False), nn.BatchNorm2d(out),
            )  # fmt: skip
            self.down = None
            if stride != 1 or c_in != out:
                self.down = nn.Sequential(
                    nn.Conv2d(c_in, out, 1, stride, bias=False), nn.BatchNorm2d(out)
                )

        def forward(self, x: Any) -> Any:
            skip = x if self.down is None else self.down(x)
            return torch.relu(self.body(x) + skip)

    blocks: list[Any] = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]  # fmt: skip
    c_in = 64
    for mid, count, stride in STAGES:
        for i in range(count):
            blocks.append(Bottleneck(c_in, mid, stride if i == 0 else 1))
            c_in = 4 * mid
    blocks += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*blocks)


def measure(batch: int, steps: int) -> tuple[float, int, int]:
    """(median step seconds, parameters, torch threads)."""
    import torch

    model = resnet50(torch)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    images, labels = torch.randn(batch, 3, 224, 224), torch.randint(0, 1000, (batch,))
    times = []
    for _ in range(steps + 2):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    params = sum(p.numel() for p in model.parameters())
    return statistics.median(times[2:]), params, torch.get_num_threads()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    measured_s, params, threads = measure(args.batch, args.steps)
    cpu = read_cpu()
    spec = {
        "name": cpu.model or "this CPU",
        "cores": cpu.cores or 1,
        "threads": cpu.threads or cpu.cores or 1,
        "base_ghz": (cpu.base_mhz or 2000) / 1e3,
    }
    build = resolve_build({"name": "this machine", "cpu": {"spec": spec}}, "bench_cpu_train")
    workload = resolve_workload(
        {"model": "resnet50", "batch_size": args.batch, "precision": "fp32",
         "dataset": "synthetic"}, "bench_cpu_train",
    )  # fmt: skip
    est = estimate(build, workload)
    assert build.cpu is not None
    peak = cpu_peak_flops_s(build.cpu, build.cpu_count, default_calibration().cpu_flops_per_cycle)
    flops = 3 * workload.forward_flops_per_sample * args.batch
    lines = [
        "# dlrig's CPU estimate against a real ResNet-50 step on this CPU",
        "",
        f"Command: `.venv/bin/python bench/bench_cpu_train.py --batch {args.batch} --steps "
        f"{args.steps}` ({dt.date.today()}, {machine()}).",
        "",
        f"ResNet-50 with torchvision's shapes ({params:,} parameters), fp32, NCHW, SGD with "
        f"momentum, synthetic data, {threads} torch threads; median of {args.steps} steps after "
        "2 warm-up steps. dlrig: the zoo's resnet50 at the same batch and precision on this CPU "
        f"({spec['cores']} cores at {spec['base_ghz']:.2f} GHz from /proc).",
        "",
        "| batch | measured step | dlrig estimate | estimate / measured | measured GFLOP/s | "
        "share of dlrig's CPU peak |",
        "|---|---|---|---|---|---|",
        f"| {args.batch} | {measured_s:.3f} s | {est.step_time_s:.3f} s | "
        f"{est.step_time_s / measured_s:.2f} | {flops / measured_s / 1e9:.1f} | "
        f"{flops / measured_s / peak:.2f} of {peak / 1e9:.0f} GFLOP/s |",
        "",
    ]
    write_result(args.out, lines)


if __name__ == "__main__":
    main()
