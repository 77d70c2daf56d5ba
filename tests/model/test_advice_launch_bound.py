"""When the host's kernel launches are most of the compute stage, the advice says so instead of
sending the user to a faster GPU (CPU.2: "the CPU can sit at 100% (kernel launches, Python)")."""

from __future__ import annotations

from model_fixtures import make_build, make_workload

from dlrig.enums import Bottleneck
from dlrig.model import estimate

RTX_3090 = [{"model": "GeForce RTX 3090"}]


def test_tacotron2_is_the_hosts_launches_not_the_gpus_flops() -> None:
    """DLE Tacotron2 runs its decoder once per mel frame: 25,640 kernels forward, x3 with the
    backward = 76,920 a step (model.layers.CLASSIC_STRUCTURE), at ~29 us each most of its
    compute on an RTX 3090. A GPU twice as fast halves only the rest."""
    est = estimate(make_build(None, gpus=RTX_3090), make_workload("tacotron2"))
    assert est.bottleneck is Bottleneck.GPU_COMPUTE
    assert "the CPU launching 76,920 kernels one by one" in est.advice
    assert "CUDA graph" in est.advice
    assert "more TFLOPS" not in est.advice
    share = float(est.advice.split(" is ")[1].split("%")[0]) / 100
    assert share > 0.5
    assert f"only {1 / (share + (1 - share) / 2):.2f}x faster" in est.advice


def test_a_compute_bound_job_still_wants_a_faster_gpu() -> None:
    """Llama 3 8B LoRA at 2 x 2,048 tokens: a few thousand large matmul kernels, launches a
    small share of the compute."""
    est = estimate(make_build(None, gpus=RTX_3090), make_workload("llama-3-8b-lora"))
    assert est.bottleneck is Bottleneck.GPU_COMPUTE
    assert est.advice.startswith("a GPU with more TFLOPS")


def test_a_graphed_step_is_not_blamed_on_the_host() -> None:
    """Replayed as a CUDA graph the host launches the step once (compute.launch_s = 0): what is
    left of the compute is the GPU's own, and a faster GPU is the advice again."""
    est = estimate(make_build(None, gpus=RTX_3090), make_workload("tacotron2", cuda_graphs=True))
    assert "the CPU launching" not in est.advice
