"""A TF32 run's 3x3 convolutions take whichever cuDNN finds faster: TF32 implicit GEMM on the
tensor cores or FP32 Winograd on the shader cores (2.25x fewer multiplications: Lavin & Gray
2016). GA10x Ampere cards, whose shaders match (GeForce: RTX 3090 35.6 FP32 and 35.6 dense
TF32 TFLOPS) or reach half their tensor cores, take the shaders; the A100 (19.5 against 156)
and Ada's cards keep the tensor cores (compute.SHADER_WINOGRAD_ARCHITECTURES, where Lambda's
rows that set this are cited)."""

from __future__ import annotations

import pytest
from model_fixtures import make_build, make_workload

from dlrig.model import compute, estimate
from dlrig.model.calibration import default_calibration
from dlrig.model.compute import WINOGRAD_FLOP_REDUCTION, Rates, tf32_conv_s
from dlrig.model.layers import layer_work
from dlrig.model.rates import ComputePath
from dlrig.workloads.model import Workload

FACTORS = default_calibration().compute
TENSOR_EFF = FACTORS.conv_efficiency[ComputePath.TENSOR_TF32]
SHADER_EFF = FACTORS.conv_efficiency[ComputePath.SIMT_FP32]


def test_the_faster_unit_runs_the_3x3_share() -> None:
    """1 s of convolutions at the tensor rate, 0.6 of them 3x3 (SSD300's winograd_share is
    0.596): on an RTX 3090 the 3x3 share takes the shaders, on an A100 the tensor cores."""
    rtx_3090 = Rates(35.6e12, ComputePath.TENSOR_TF32, 936.0, shader_flops_s=35.6e12)
    a100 = Rates(156e12, ComputePath.TENSOR_TF32, 2039.0, shader_flops_s=19.5e12)
    rest = 0.4 / TENSOR_EFF
    assert tf32_conv_s(1.0, 0.6, rtx_3090, FACTORS) == pytest.approx(
        rest + 0.6 / WINOGRAD_FLOP_REDUCTION / SHADER_EFF
    )
    assert tf32_conv_s(1.0, 0.6, a100, FACTORS) == pytest.approx(1.0 / TENSOR_EFF)


def test_an_rtx_3090_runs_tf32_convnets_faster_than_its_tensor_cores_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ResNet-50 TF32 at batch 224 (Lambda's batch): the RTX 3090's estimate rises above what
    its tensor cores alone would give (8% at the shipped efficiencies: TF32 tensor-core
    convolutions 0.669, shader ones 0.7355); the A100's and the RTX 4090's do not move."""
    job = make_workload("resnet50", dataset="synthetic", precision="tf32", batch_size=224)
    gpus = ("GeForce RTX 3090", "A100 SXM4 80GB", "GeForce RTX 4090")

    def rates() -> dict[str, float]:
        return {
            gpu: estimate(make_build(None, gpus=[{"model": gpu, "count": 1}]), job).samples_per_s
            for gpu in gpus
        }

    chosen = rates()
    monkeypatch.setattr(compute, "SHADER_WINOGRAD_ARCHITECTURES", frozenset())
    tensor_only = rates()
    assert chosen["GeForce RTX 3090"] > 1.05 * tensor_only["GeForce RTX 3090"]
    assert chosen["A100 SXM4 80GB"] == pytest.approx(tensor_only["A100 SXM4 80GB"])
    assert chosen["GeForce RTX 4090"] == pytest.approx(tensor_only["GeForce RTX 4090"])


def test_the_estimate_says_when_the_shaders_take_the_3x3_convolutions() -> None:
    """The choice is an assumption the user sees: on an RTX 3090 with its rates, none on an
    A100, an RTX 4090, or in fp16 (no TF32 path)."""

    def notes(gpu: str, precision: str) -> list[str]:
        job = make_workload("ssd300", dataset="synthetic", precision=precision)
        est = estimate(make_build(None, gpus=[{"model": gpu, "count": 1}]), job)
        return [a for a in est.assumptions if "Winograd" in a]

    [line] = notes("GeForce RTX 3090", "tf32")
    assert "60% of the convolution FLOPs" in line and "shader cores" in line
    assert notes("A100 SXM4 80GB", "tf32") == []
    assert notes("GeForce RTX 4090", "tf32") == []
    assert notes("GeForce RTX 3090", "fp16") == []


def test_tf32_convolutions_transpose_their_input_only_before_blackwell() -> None:
    """cuDNN's TF32 tensor-core kernels on Ampere, Ada and Hopper read NHWC activations and
    write NCHW output (sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw): an
    NCHW input is transposed (a read and a write: 2 moves an output element) and the output
    is not. 16-bit convolutions and Blackwell's TF32 ones transpose both (4 moves)."""
    assert compute.nchw_transpose_moves(4.0, tf32_nhwc=False) == 2.0
    assert compute.nchw_transpose_moves(4.0, tf32_nhwc=True) == 4.0
    assert compute.nchw_transpose_moves(2.0, tf32_nhwc=False) == 4.0


def test_the_input_transposes_cost_half_of_both() -> None:
    """On one card and batch, what an NCHW TF32 ResNet-50's transposes add to the memory stage
    (NCHW against channels_last) is half what they add where the output is transposed too:
    the element moves, 2 against 4, bound the transposes' bytes and instructions alike."""
    job = make_workload("resnet50", dataset="synthetic", precision="tf32", batch_size=256)
    last = make_workload(
        "resnet50", dataset="synthetic", precision="tf32", batch_size=256,
        memory_format="channels_last",
    )  # fmt: skip
    work = layer_work(job)

    def memory_s(workload: Workload, tf32_nhwc: bool) -> float:
        return compute.class_times(
            work, workload, 256, 400e12, 3000.0, winograd=False, operand_bytes=4.0,
            sixteen_traffic=False, optimizer_params=25.6e6, intensity_scale=1.0,
            issue_rate=6.7e13, transpose_instructions=40.0, tf32_nhwc=tf32_nhwc,
        ).memory_s  # fmt: skip

    input_only = memory_s(job, False) - memory_s(last, False)
    both = memory_s(job, True) - memory_s(last, True)
    assert input_only > 0
    assert both == pytest.approx(2.0 * input_only)


def test_tf32_convolutions_on_nchw_pay_transposes_on_hopper_and_blackwell() -> None:
    """An NCHW TF32 ResNet-50 is slower than the same job in channels_last on a B200 (input
    and output transposed) and on an H100 SXM5 (input transposed); both cards also pay the
    transposes in fp16."""

    def rate(gpu: str, precision: str, memory_format: str) -> float:
        job = make_workload(
            "resnet50", dataset="synthetic", precision=precision, batch_size=256,
            memory_format=memory_format,
        )  # fmt: skip
        return estimate(make_build(None, gpus=[{"model": gpu, "count": 1}]), job).samples_per_s

    for gpu in ("B200 SXM 180GB", "H100 SXM5 80GB"):
        assert rate(gpu, "tf32", "channels_first") < 0.97 * rate(gpu, "tf32", "channels_last")
        assert rate(gpu, "fp16", "channels_first") < 0.95 * rate(gpu, "fp16", "channels_last")


def test_the_estimate_names_the_tf32_transposes() -> None:
    """The assumption line says what each TF32 convolution transposes: input and output on a
    B200, the input on an H100 SXM5."""

    def notes(gpu: str) -> list[str]:
        job = make_workload("resnet50", dataset="synthetic", precision="tf32", batch_size=256)
        est = estimate(make_build(None, gpus=[{"model": gpu, "count": 1}]), job)
        return [a for a in est.assumptions if "NCHW layout" in a]

    [b200] = notes("B200 SXM 180GB")
    assert "each TF32 tensor-core convolution transposes its input and output" in b200
    [h100] = notes("H100 SXM5 80GB")
    assert "each TF32 tensor-core convolution transposes its input (" in h100
