"""Peak rates of a compute device per precision (GPU.3: tensor cores only where they exist)."""

from __future__ import annotations

import functools
import math
import statistics
import tomllib
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources

from dlrig.catalog.schema import CPU, GPU
from dlrig.enums import Precision, Segment, Vendor
from dlrig.machine.model import Measured
from dlrig.model.layers import FLASH_ATTENTION_SHARE, FLASH_ATTENTION_SHARE_WARPGROUP_MMA
from dlrig.units import GHZ, TFLOPS, gb_s_to_bytes_s, us_to_s

# How a card's sustained clock follows a TDP below what tensor work at boost needs: clock ~
# power ** 1. Power is clock x voltage^2; above the base clock the voltage falls with the clock
# (clock ~ power ** (1/3) at most), but a card short of 20-80% of the power it needs runs near
# its voltage floor, where power falls only in proportion to the clock. Measured: on Lambda's
# rows (leave-one-architecture-out, bench/bench_accuracy.py) the exponent 0.397 of the shallow
# RTX 3090 power-limit sweeps (model/power_limit.py) gives multi-GPU p90 55.3%, this 53.7%.
CLOCK_POWER_EXPONENT = 1.0


class ComputePath(StrEnum):
    """Which hardware units run the matrix multiplications; efficiencies are fitted per path."""

    TENSOR_FP8 = "tensor_fp8"
    TENSOR_16BIT = "tensor_16bit"
    TENSOR_TF32 = "tensor_tf32"
    SIMT_16BIT = "simt_16bit"
    SIMT_FP32 = "simt_fp32"
    CPU = "cpu"


# AMD RDNA 3 runs 16-bit matrix multiplications as WMMA instructions on its AI accelerators
# ("matrix cores"), at the card's listed FP16 rate (AMD RDNA 3 ISA reference, WMMA; RX 7900 XTX
# 122.8 TFLOPS FP16): a tensor-core path, whose real rate the card's measurement sets.
WMMA_ARCHITECTURES = frozenset({"RDNA 3"})


def matmul_peak(gpu: GPU, precision: Precision) -> tuple[float, ComputePath, str | None]:
    """(peak FLOP/s, path, note) for matrix multiplications at `precision` on `gpu`.

    GPU.3: 16-bit runs fast only on tensor cores. Without them, 16-bit matmuls run at the best
    non-tensor rate: the card's FP16 shader rate when it is higher than FP32 (P100, Titan V
    without its tensor path), else the FP32 rate (GTX 10-series: cuBLAS computes in FP32, its
    1/64-rate FP16 is never used). TF32 falls back to FP32 before Ampere; FP8 falls back to the
    16-bit tensor rate before Ada/Hopper; bf16 without bf16 tensor cores runs as FP32. FP32
    GEMMs run at the card's FP32 matrix rate where it has one (`fp32_gemm_tflops`).
    """
    if precision is Precision.FP8:
        if gpu.fp8_tensor_tflops:
            return gpu.fp8_tensor_tflops * TFLOPS, ComputePath.TENSOR_FP8, None
        peak, path, _ = matmul_peak(gpu, Precision.BF16)
        return peak, path, f"{gpu.name} has no FP8 tensor cores: FP8 runs at the 16-bit rate"
    if precision is Precision.FP16 or precision is Precision.BF16:
        tensor = gpu.fp16_tensor_tflops if precision is Precision.FP16 else gpu.bf16_tensor_tflops
        if tensor:
            return tensor * TFLOPS, ComputePath.TENSOR_16BIT, None
        if gpu.architecture in WMMA_ARCHITECTURES and gpu.fp16_tflops:
            return gpu.fp16_tflops * TFLOPS, ComputePath.TENSOR_16BIT, None
        shader = max(gpu.fp16_tflops or 0.0, gpu.fp32_tflops)
        if precision is Precision.BF16 and gpu.fp16_tensor_tflops:
            note = f"{gpu.name} has no bf16 tensor cores: bf16 runs on its shader cores"
            return fp32_gemm_tflops(gpu) * TFLOPS, ComputePath.SIMT_FP32, note
        note = f"{gpu.name} has no {precision.value} tensor cores (GPU.3): non-tensor rate used"
        return shader * TFLOPS, ComputePath.SIMT_16BIT, note
    if precision is Precision.TF32:
        if gpu.tf32_tensor_tflops:
            return gpu.tf32_tensor_tflops * TFLOPS, ComputePath.TENSOR_TF32, None
        note = f"{gpu.name} has no TF32 tensor cores: TF32 runs as FP32"
        return fp32_gemm_tflops(gpu) * TFLOPS, ComputePath.SIMT_FP32, note
    return fp32_gemm_tflops(gpu) * TFLOPS, ComputePath.SIMT_FP32, None


def fp32_gemm_tflops(gpu: GPU) -> float:
    """The peak an FP32 GEMM runs at: AMD CDNA 1/2 run it on their matrix cores (MFMA F32) at
    twice the vector rate (`fp32_matrix_tflops`: MI210 45.3 of 22.6, where rocBLAS measures
    37.9 TFLOPS at 8192^3 and PyTorch 33.7, above the vector peak: achievable_rates.toml);
    everywhere else the shader cores' `fp32_tflops`."""
    return max(gpu.fp32_tflops, gpu.fp32_matrix_tflops or 0.0)


# NVIDIA SMs whose warp schedulers have a second dispatch unit (Pascal GP104 whitepaper: two
# dispatch units per warp scheduler; Volta and later: one, 32 threads a clock).
DUAL_DISPATCH_ARCHITECTURES = frozenset({"Pascal"})
ISSUE_BOUND_FP32 = "32 FP32 lanes per one-dispatch warp scheduler (GA10x, AD10x, GH100, Blackwell)"
SPARE_SLOT_FP32 = "a spare issue slot beside FP32 (16 lanes per scheduler, or Pascal's two)"
CDNA_MFMA_FP32 = "FP32 on matrix cores at twice the vector rate (CDNA 1/2 MFMA F32)"


def fp32_datapath(gpu: GPU) -> str | None:
    """Which datapath an FP32 GEMM (no tensor cores) runs on, the class whose measured cards set
    the share of the datasheet an unmeasured card reaches; None where no class applies.

    NVIDIA: a warp scheduler dispatches one 32-thread instruction a clock. With 16 FP32 lanes
    behind it (Volta, Turing, GA100) an FFMA takes two clocks and leaves a slot for the shared-
    memory loads and address arithmetic; with 32 (GA10x, whose second 16 "can execute either 16
    FP32 or 16 INT32": Ampere GA102 whitepaper; AD10x, GH100, Blackwell) the datasheet peak
    needs an FFMA every clock, so every other instruction costs FFMAs. AMD CDNA 1/2 run it as
    MFMA F32 at twice the vector rate; other AMD architectures are their own class."""
    if gpu.vendor is Vendor.NVIDIA:
        lanes = FP32_LANES_PER_SM.get(gpu.architecture)
        if lanes is None:
            return None
        if gpu.memory_type.upper().startswith("HBM"):
            lanes = HBM_DIE_FP32_LANES.get(gpu.architecture, lanes)
        if lanes == 128 and gpu.architecture not in DUAL_DISPATCH_ARCHITECTURES:
            return ISSUE_BOUND_FP32
        return SPARE_SLOT_FP32
    if gpu.vendor is Vendor.AMD:
        if gpu.fp32_matrix_tflops and gpu.fp32_matrix_tflops > gpu.fp32_tflops:
            return CDNA_MFMA_FP32
        return f"{gpu.architecture} FP32"
    return None


# Warpgroup-MMA tensor cores (sm_90 Hopper, sm_100 data-centre Blackwell): a kernel written
# with warp-level mma.sync reaches a smaller share of them (layers.FLASH_ATTENTION_SHARE_
# WARPGROUP_MMA). Consumer and workstation Blackwell (sm_120) keep warp-level MMA.
WARPGROUP_MMA_ARCHITECTURES = frozenset({"Hopper"})
WARPGROUP_MMA_DATACENTER_ARCHITECTURES = frozenset({"Blackwell", "Blackwell Ultra"})


def flash_attention_share(gpu: GPU, native: bool = False) -> float:
    """Share of a large GEMM's efficiency a fused (flash) attention kernel reaches on `gpu`:
    PyTorch's FlashAttention-2 kernel on warpgroup-MMA cards, else (or with a `native` kernel,
    cuDNN or FlashAttention-3, written for those cards) the Ampere-measured share."""
    if native:
        return FLASH_ATTENTION_SHARE
    warpgroup = gpu.architecture in WARPGROUP_MMA_ARCHITECTURES or (
        gpu.architecture in WARPGROUP_MMA_DATACENTER_ARCHITECTURES
        and gpu.segment is Segment.DATACENTER
    )
    return FLASH_ATTENTION_SHARE_WARPGROUP_MMA if warpgroup else FLASH_ATTENTION_SHARE


def cpu_peak_flops_s(cpu: CPU, count: int, flops_per_cycle: float) -> float:
    """Peak FP32 FLOP/s of the node's CPUs: cores x clock x FLOPs per core per cycle."""
    ghz = cpu.boost_ghz or cpu.base_ghz
    return cpu.cores * count * ghz * GHZ * flops_per_cycle


def is_16bit(precision: Precision) -> bool:
    """Activations and gradients stored in 16 (or 8) bits rather than 32."""
    return precision in (Precision.FP16, Precision.BF16, Precision.FP8)


@dataclass(frozen=True)
class AchievableRate:
    """A rate real code reaches on one card, and where the figure comes from."""

    value: float
    unit: str
    provenance: str


@dataclass(frozen=True)
class _Measured:
    gpu: str
    precision: str
    value: float
    source: str
    date: str


@dataclass(frozen=True)
class DecodeGemm:
    """A decode GEMM (one row per sequence) measured on one card: a fixed time per kernel plus
    its weight bytes at a streaming rate, fitted over a library's tuned shapes."""

    fixed_s: float
    bytes_s: float
    provenance: str
    matmul_tflops: float | None = None  # the timed kernels' median FLOP rate, where stated


@dataclass(frozen=True)
class _RateTable:
    """Measured rows by (catalog name, precision) and the rules derived from them."""

    matmul: dict[tuple[str, str], _Measured]
    memory: dict[str, _Measured]
    decode_gemm: dict[tuple[str, str], dict[int, DecodeGemm]]  # by rows (M)
    matmul_efficiency: dict[tuple[Vendor, bool], float]
    geforce_efficiency: dict[tuple[str, bool], float]  # by (architecture, FP8 group)
    amd_efficiency: dict[tuple[str, bool], float]  # by (architecture, FP8 group)
    memory_efficiency: dict[Vendor, float]
    watts_per_tflops: dict[tuple[str, bool], tuple[float, str]]
    fp32_efficiency: dict[str, tuple[float, int]]  # by fp32_datapath: (median, cards)
    fp32_by_die: dict[tuple[Vendor, str, float], list[_Measured]]  # _die_key: FP32 rows
    # (vendor, architecture, precision) -> (timed card, its curve): what an untimed card borrows
    decode_gemm_by_architecture: dict[tuple[Vendor, str, str], tuple[GPU, dict[int, DecodeGemm]]]


def _geforce(gpu: GPU) -> bool:
    """An NVIDIA consumer (GeForce) card."""
    return gpu.vendor is Vendor.NVIDIA and gpu.segment is Segment.CONSUMER


def _by_architecture(gpu: GPU) -> bool:
    """A card whose unmeasured rate follows its architecture's measured cards rather than its
    vendor's (`_software_efficiency`): GeForce cards and every AMD card."""
    return _geforce(gpu) or gpu.vendor is Vendor.AMD


def _precision_group(precision: Precision) -> bool:
    """True for FP8, False for the 16-bit (and wider) rates: FP8 has its own efficiency."""
    return precision is Precision.FP8


_OWN_CARD_ONLY = (Precision.TF32, Precision.FP32)


@functools.cache
def _table() -> _RateTable:
    from dlrig.catalog.loader import builtin_catalog

    text = resources.files("dlrig.model").joinpath("data/achievable_rates.toml").read_text()
    raw = tomllib.loads(text)
    gpus = {g.name: g for g in builtin_catalog().gpus}
    matmul: dict[tuple[str, str], _Measured] = {}
    for row in raw["matmul"]:
        for prec in row["precisions"]:
            m = _Measured(row["gpu"], prec, float(row["tflops"]), row["source"], row["date"])
            matmul[(row["gpu"], prec)] = m
    memory = {
        row["gpu"]: _Measured(row["gpu"], "", float(row["gb_s"]), row["source"], row["date"])
        for row in raw["memory"]
    }
    decode_gemm: dict[tuple[str, str], dict[int, DecodeGemm]] = {}
    for row in raw.get("decode_gemm", []):
        law = DecodeGemm(
            us_to_s(float(row["fixed_us"])),
            gb_s_to_bytes_s(float(row["gb_s"])),
            f"{row['software']}: {row['source']} ({row['date']})",
            float(row["tflops"]) if "tflops" in row else None,
        )
        for prec in row["precisions"]:
            decode_gemm.setdefault((row["gpu"], prec), {})[int(row["m"])] = law
    # The rules for unmeasured cards come from the 16-bit and FP8 rows; a TF32 row speaks only
    # for its own card (TF32 without one takes the 16-bit ratio, _software_efficiency), an FP32
    # row for its card and its FP32 datapath's share (fp32_efficiency, below).
    ruled = {k: m for k, m in matmul.items() if Precision(k[1]) not in _OWN_CARD_ONLY}
    ratios: dict[tuple[Vendor, bool], list[float]] = {}
    for (name, prec), m in ruled.items():
        gpu, precision = gpus[name], Precision(prec)
        peak, _, _ = matmul_peak(gpu, precision)
        ratios.setdefault((gpu.vendor, _precision_group(precision)), []).append(
            m.value * TFLOPS / peak
        )
    matmul_efficiency = {k: statistics.median(v) for k, v in ratios.items()}
    geforce: dict[tuple[str, bool], list[float]] = {}
    amd: dict[tuple[str, bool], list[float]] = {}
    for (name, prec), m in ruled.items():
        gpu, precision = gpus[name], Precision(prec)
        if _by_architecture(gpu):
            peak, _, _ = matmul_peak(gpu, precision)
            key = (gpu.architecture, _precision_group(precision))
            into = geforce if _geforce(gpu) else amd
            into.setdefault(key, []).append(m.value * TFLOPS / peak)
    per_tflops: dict[tuple[str, bool], tuple[float, str]] = {}
    for (name, prec), m in ruled.items():
        gpu, precision = gpus[name], Precision(prec)
        peak, _, _ = matmul_peak(gpu, precision)
        group = _precision_group(precision)
        # The clock share this card held: its measurement over what the vendor's median
        # software ratio makes of its peak at boost (at most 1: boost is the top of the curve).
        share = min(
            1.0, m.value * TFLOPS / (peak * min(matmul_efficiency[(gpu.vendor, group)], 1.0))
        )
        at_boost_w = gpu.tdp_w / share ** (1 / CLOCK_POWER_EXPONENT)
        arch_key = (gpu.architecture, group)
        if at_boost_w / (peak / TFLOPS) < per_tflops.get(arch_key, (float("inf"), ""))[0]:
            per_tflops[arch_key] = (
                at_boost_w / (peak / TFLOPS),
                f"{name}: {m.value:g} of {peak / TFLOPS:g} TFLOPS at {gpu.tdp_w:g} W",
            )
    bandwidth: dict[Vendor, list[float]] = {}
    for name, m in memory.items():
        bandwidth.setdefault(gpus[name].vendor, []).append(
            m.value / gpus[name].memory_bandwidth_gb_s
        )
    # A card with a spare issue slot and no measurement of its own or of its die keeps the 16-bit
    # rule: its class's measured cards are the GA100 (0.91-0.98 at a fixed 1410 MHz), the V100s
    # (0.91, 0.96), the GTX 1080 Ti (0.89), the RTX 2080 Ti (0.92) and the power-starved T4
    # (0.54), and their median made Lambda's Turing/Volta/Pascal FP32 rows worse (leave-one-
    # architecture-out, all rows, single-GPU median 8.7% -> 9.5% without the V100 row;
    # bench/provenance.toml). A measured card of the class uses its own rate (measured_matmul
    # comes first in achievable_matmul).
    fp32: dict[str, list[float]] = {}
    fp32_by_die: dict[tuple[Vendor, str, float], list[_Measured]] = {}
    for (name, prec), m in matmul.items():
        if Precision(prec) is not Precision.FP32:
            continue
        fp32_by_die.setdefault(_die_key(gpus[name]), []).append(m)
        datapath = fp32_datapath(gpus[name])
        if datapath and datapath != SPARE_SLOT_FP32:
            fp32.setdefault(datapath, []).append(m.value / fp32_gemm_tflops(gpus[name]))
    by_architecture: dict[tuple[Vendor, str, str], tuple[GPU, dict[int, DecodeGemm]]] = {}
    for (name, prec), curve in decode_gemm.items():
        timed = gpus[name]
        by_architecture.setdefault((timed.vendor, timed.architecture, prec), (timed, curve))
    return _RateTable(
        matmul=matmul,
        memory=memory,
        decode_gemm=decode_gemm,
        matmul_efficiency=matmul_efficiency,
        geforce_efficiency={k: statistics.median(v) for k, v in geforce.items()},
        amd_efficiency={k: statistics.median(v) for k, v in amd.items()},
        memory_efficiency={k: statistics.median(v) for k, v in bandwidth.items()},
        watts_per_tflops=per_tflops,
        fp32_efficiency={k: (statistics.median(v), len(v)) for k, v in fp32.items()},
        fp32_by_die=fp32_by_die,
        decode_gemm_by_architecture=by_architecture,
    )


def _software_efficiency(table: _RateTable, gpu: GPU, precision: Precision) -> tuple[float, str]:
    """(ratio, what it is) applied to the card's datasheet peak: the median measured/datasheet
    ratio of the measured GeForce cards of its architecture for a GeForce card, else of its
    vendor at this precision group (ROCm's lower ratio is the AMD software factor); TF32 without
    a measurement takes the 16-bit ratio (an FP32 GEMM its datapath's share, `achievable_matmul`
    and `fp32_datapath`, where its class has a measured card). Capped at 1: above the datasheet is a
    clock bonus no rule may assume.

    GeForce apart: GPU Boost raises a GeForce card's clock until it reaches its power target
    (nvidia.com/en-gb/geforce/technologies/gpu-boost/technology/, read 2026-12-03), and the
    boost clock NVIDIA quotes for it is an average over typical loads, not a ceiling (GTX 680:
    1,058 MHz on average, up to 1,110 MHz; hexus.net GTX 680 review, 2012-03-22); the
    data-centre and workstation cards that set the vendor median are quoted at their top clock
    and many run below it at their TDP. Every measured GeForce card reaches
    its datasheet rate: RTX 3090 76.34 of 71 TFLOPS, RTX 3090 Ti 81 of 80, RTX 4090 170.06 of
    165.2, RTX 5090 242.18 of 209.5 (model/data/achievable_rates.toml), and the 4090's TF32
    85.65 of 82.6 (zzc0721/torch-performance-test-data issue 78, 2025-10-17), against the
    vendor median's 0.80. Lambda's rows agree: with 0.80 the RTX 3070/3080/3090 ran 8-20%
    faster than predicted. Architectures without a measured GeForce card (Turing, Pascal)
    keep the vendor median.

    AMD apart too: what ROCm reaches differs by architecture more than by vendor. CDNA 3 is
    held to its power (AMD measured a dense bf16 GEMM on the 750 W MI300X at a median 1207 MHz
    of its 2100 MHz peak clock, 94% of the clock-scaled peak: ROCm blog, Max-Achievable FLOPs
    part 2), so its cards reach 0.51-0.60 of their datasheet; the 300 W MI210 (CDNA 2) holds
    1635-1700 MHz of 1700 and reaches 0.70-0.72 (torch.mm 127.2 fp16, 130.8 bf16 of 181), the
    RX 7900 XTX (RDNA 3) 0.86. A CDNA 2 module (MI250, MI250X) takes the MI210's share, not
    the MI300X's. FP8 without a measurement on its architecture takes the vendor's FP8 median
    (FP8 reaches less of its peak than 16-bit: MI300X 0.47 against 0.51)."""
    fp8 = _precision_group(precision)
    if _geforce(gpu):
        geforce = table.geforce_efficiency.get((gpu.architecture, fp8))
        if geforce is None:
            geforce = table.geforce_efficiency.get((gpu.architecture, False))
        if geforce is not None:
            return min(geforce, 1.0), f"{gpu.architecture} GeForce median"
    if gpu.vendor is Vendor.AMD:
        amd = table.amd_efficiency.get((gpu.architecture, fp8))
        if amd is not None:
            return min(amd, 1.0), f"{gpu.architecture} median"
    ratio = table.matmul_efficiency.get((gpu.vendor, fp8))
    if ratio is None:
        ratio = table.matmul_efficiency.get((gpu.vendor, False))
    if ratio is None:
        ratio = table.matmul_efficiency[(Vendor.NVIDIA, False)]
    return min(ratio, 1.0), "vendor median"


def _watts_per_tflops(
    table: _RateTable, gpu: GPU, precision: Precision
) -> tuple[float, str] | None:
    """Board watts per datasheet TFLOPS that tensor work at boost clock draws on the card's
    architecture: the least any measured card of it implies. FP8 without its own measurement
    takes half the 16-bit figure: the datasheets give FP8 twice the 16-bit rate in the same
    power (H100 SXM measured 1402.6 TFLOPS FP8 against 794.5 bf16, both at 700 W)."""
    fp8 = _precision_group(precision)
    found = table.watts_per_tflops.get((gpu.architecture, fp8))
    if found is None and fp8:
        sixteen = table.watts_per_tflops.get((gpu.architecture, False))
        if sixteen is not None:
            return 0.5 * sixteen[0], f"half the 16-bit figure, {sixteen[1]}"
    return found


@dataclass(frozen=True)
class SustainedClock:
    """The clock a card holds under sustained tensor-core work at its power limit, as a share
    of the boost clock its datasheet peak is quoted at; `mhz` None where the catalog has no
    boost clock for it."""

    share: float
    mhz: float | None
    provenance: str


def sustained_clock(gpu: GPU, precision: Precision) -> SustainedClock:
    """The clock `gpu` holds under sustained tensor work at `precision` with its stock power.

    A published measurement (`sustained_clock_mhz`) is used as is. Elsewhere the power that
    tensor work at boost clock needs is the datasheet peak x the board watts per TFLOPS its
    architecture's measured cards imply (`_watts_per_tflops`); where the TDP is below it the
    clock falls as (TDP / needed) ** CLOCK_POWER_EXPONENT: power is clock x voltage^2, and a
    card that short of power sits near its voltage floor, so power follows the clock (see the
    constant for the measured choice against the 1/3 of V ~ clock). The clock never falls below
    the base clock: NVIDIA rates the base clock as the one a card holds at its TDP under full
    load (GPU Boost). Shader-core work and cards of an architecture without a measured card
    keep the boost clock.
    """
    boost, base = gpu.boost_clock_mhz, gpu.base_clock_mhz
    if gpu.sustained_clock_mhz is not None and boost is not None:
        share = min(gpu.sustained_clock_mhz / boost, 1.0)
        return SustainedClock(share, gpu.sustained_clock_mhz, "measured (sources.sustained_clock)")
    peak, path, _ = matmul_peak(gpu, precision)
    tensor = path in (ComputePath.TENSOR_16BIT, ComputePath.TENSOR_FP8, ComputePath.TENSOR_TF32)
    per_tflops = _watts_per_tflops(_table(), gpu, precision) if tensor else None
    if per_tflops is None:
        return SustainedClock(1.0, boost, "boost clock")
    needed_w = peak / TFLOPS * per_tflops[0]
    share = min(1.0, (gpu.tdp_w / needed_w) ** CLOCK_POWER_EXPONENT)
    floor = base / boost if base is not None and boost is not None else 0.0
    if share >= 1.0:
        return SustainedClock(1.0, boost, f"boost clock: {needed_w:.0f} W needed of {gpu.tdp_w:g}")
    held = max(share, floor)
    why = (
        f"{gpu.tdp_w:g} W of the {needed_w:.0f} W tensor work at boost needs "
        f"({per_tflops[0]:.2f} W/TFLOPS, {per_tflops[1]})"
        + (", held at the base clock" if held > share else "")
    )
    return SustainedClock(held, boost * held if boost is not None else None, why)


def achievable_matmul(
    gpu: GPU, precision: Precision, measured: Measured | None = None
) -> AchievableRate:
    """Sustained dense matmul TFLOPS `gpu` reaches at `precision` (FP32 accumulate for 16-bit).

    A published measurement of this card (model/data/achievable_rates.toml) is used as is;
    TF32 on a card whose bf16 rate alone is measured follows that rate (`_tf32_carried`).
    Elsewhere: the datasheet peak of the path that runs it (GPU.3; the catalog's 16-bit tensor
    rate is the FP32-accumulate rate, half the FP16-accumulate figure on GeForce cards) times
    the median measured/datasheet ratio of its vendor, or of the measured GeForce cards of its
    architecture for a GeForce card (`_software_efficiency`), times the share of the boost
    clock the card holds under sustained tensor work at its TDP (`sustained_clock`): the
    datasheet peak is quoted at boost, and a card whose power limit cannot feed that clock
    runs slower. FP32 GEMMs on shader (or CDNA matrix) cores take instead the median share of
    the datasheet that the measured cards of their `fp32_datapath` reach (a measured rate
    includes the clock the card held), except on cards with a spare issue slot (`_table`);
    before that, the rate measured on the same die at the same clock (`_fp32_sibling`).

    Before all of these: `measured`, the build's own probe of this card (its `measured:`
    block), which is this very machine's rate.
    """
    found = measured_matmul(gpu, precision, measured)
    if found is not None:
        return found
    if precision is Precision.FP8 and not gpu.fp8_tensor_tflops:
        fallback = achievable_matmul(gpu, Precision.BF16, measured)
        return AchievableRate(
            fallback.value, "TFLOPS", f"no FP8 tensor cores: {fallback.provenance}"
        )
    table = _table()
    peak, path, _ = matmul_peak(gpu, precision)
    sibling = _fp32_sibling(table, gpu) if path is ComputePath.SIMT_FP32 else None
    if sibling is not None:
        return sibling
    datapath = fp32_datapath(gpu) if path is ComputePath.SIMT_FP32 else None
    if datapath is not None and datapath in table.fp32_efficiency:
        share, cards = table.fp32_efficiency[datapath]
        provenance = (
            f"datasheet {peak / TFLOPS:g} TFLOPS ({path.value}) x {share:.2f}: median FP32 "
            f"GEMM share of {cards} measured card{'s' if cards > 1 else ''}, {datapath}"
        )
        return AchievableRate(peak / TFLOPS * share, "TFLOPS", provenance)
    efficiency, which = _software_efficiency(table, gpu, precision)
    clock = sustained_clock(gpu, precision)
    provenance = f"datasheet {peak / TFLOPS:g} TFLOPS ({path.value}) x {efficiency:.2f} {which}"
    if clock.share < 1.0:
        provenance = f"power-limited: {provenance} x {clock.share:.2f} clock ({clock.provenance})"
    if clock.mhz is not None:
        provenance += f"; sustained clock {clock.mhz:.0f} MHz"
    return AchievableRate(peak / TFLOPS * efficiency * clock.share, "TFLOPS", provenance)


def _die_key(gpu: GPU) -> tuple[Vendor, str, float]:
    """A die at a clock: the same vendor, architecture and FP32 datasheet peak (lanes x clock)."""
    return (gpu.vendor, gpu.architecture, fp32_gemm_tflops(gpu))


def _fp32_sibling(table: _RateTable, gpu: GPU) -> AchievableRate | None:
    """The median FP32 GEMM rate measured on the cards of `gpu`'s die at its clock (`_die_key`:
    the V100 SXM2 32GB takes the 16GB card's 14.285 TFLOPS, a GH200 the H100 and H200 SXM's);
    None where no such card is measured."""
    rows = table.fp32_by_die.get(_die_key(gpu))
    if not rows:
        return None
    value = statistics.median(m.value for m in rows)
    cards = ", ".join(f"{m.gpu} {m.value:g}" for m in rows)
    return AchievableRate(
        value, "TFLOPS", f"median FP32 GEMM rate measured on the same die and clock ({cards})"
    )


def measured_matmul(
    gpu: GPU, precision: Precision, measured: Measured | None = None
) -> AchievableRate | None:
    """The rate measured on this card at `precision`, None where only a rule gives one: the
    build's own probe, TF32 carried from its probed bf16 rate (this machine's own bf16 rate
    beats another machine's TF32), a published measurement, TF32 carried from a published bf16
    one (`_tf32_carried`)."""
    own = measured.matmul_tflops(gpu.name, precision) if measured is not None else None
    if own is not None and measured is not None:
        return AchievableRate(own, "TFLOPS", f"probe measurement {measured.date}")
    probed = _probed_tf32(gpu, precision, measured)
    if probed is not None:
        return probed
    table = _table()
    published = table.matmul.get((gpu.name, precision.value))
    if published is not None:
        return AchievableRate(
            published.value, "TFLOPS", f"measured: {published.source} ({published.date})"
        )
    return _published_tf32(table, gpu, precision)


def _tf32_carried(
    gpu: GPU, precision: Precision, bf16_tflops: float | None, source: str
) -> AchievableRate | None:
    """TF32 on an NVIDIA card whose bf16 rate is measured: that rate x the datasheet's TF32 /
    bf16 ratio. The same tensor cores at the same clock: on the five cards measured both ways
    (zzc0721/torch-performance-test-data @9d82827) TF32 reaches 0.45-0.51 of the card's own
    16-bit rate where the datasheets say 0.5 (H100 SXM 402 of 798, H100 PCIe 240 of 496, RTX
    4090 85.7 of 170, A100 PCIe 108 of 241, L4 31.9 of 70.9). The vendor median would miss a
    GeForce card's boost above its datasheet and a power-limited card's lower clock alike.
    None for another precision, vendor or card, or without a bf16 measurement."""
    if bf16_tflops is None or precision is not Precision.TF32 or gpu.vendor is not Vendor.NVIDIA:
        return None
    if not gpu.tf32_tensor_tflops or not gpu.bf16_tensor_tflops:
        return None
    return AchievableRate(
        bf16_tflops * gpu.tf32_tensor_tflops / gpu.bf16_tensor_tflops,
        "TFLOPS",
        f"{source}bf16 {bf16_tflops:g} TFLOPS x datasheet TF32/bf16 "
        f"{gpu.tf32_tensor_tflops:g}/{gpu.bf16_tensor_tflops:g}",
    )


def _probed_tf32(
    gpu: GPU, precision: Precision, measured: Measured | None
) -> AchievableRate | None:
    """TF32 carried from the build's own probed bf16 rate (_tf32_carried)."""
    if measured is None:
        return None
    bf16 = measured.matmul_tflops(gpu.name, Precision.BF16)
    return _tf32_carried(gpu, precision, bf16, f"probe measurement {measured.date}: ")


def _published_tf32(table: _RateTable, gpu: GPU, precision: Precision) -> AchievableRate | None:
    """TF32 carried from a published bf16 measurement of the card (_tf32_carried)."""
    row = table.matmul.get((gpu.name, Precision.BF16.value))
    if row is None:
        return None
    carried = _tf32_carried(gpu, precision, row.value, "measured ")
    if carried is None:
        return None
    return AchievableRate(
        carried.value, carried.unit, f"{carried.provenance}: {row.source} ({row.date})"
    )


def achievable_matmul_tflops(
    gpu: GPU, precision: Precision, measured: Measured | None = None
) -> float:
    """Sustained dense matmul TFLOPS of `gpu` at `precision`; see `achievable_matmul`."""
    return achievable_matmul(gpu, precision, measured).value


def achievable_memory_bandwidth(gpu: GPU, measured: Measured | None = None) -> AchievableRate:
    """Device-memory bandwidth real kernels reach (copy/triad on buffers larger than L2): the
    build's own probe of this card (`measured`), else a published measurement of this card,
    else the datasheet figure times the vendor's median measured/datasheet ratio."""
    own = measured.memory_bandwidth_gb_s(gpu.name) if measured is not None else None
    if own is not None and measured is not None:
        return AchievableRate(own, "GB/s", f"probe measurement {measured.date}")
    table = _table()
    published = table.memory.get(gpu.name)
    if published is not None:
        return AchievableRate(
            published.value, "GB/s", f"measured: {published.source} ({published.date})"
        )
    ratio = table.memory_efficiency.get(gpu.vendor, table.memory_efficiency[Vendor.NVIDIA])
    value = gpu.memory_bandwidth_gb_s * min(ratio, 1.0)
    provenance = f"datasheet {gpu.memory_bandwidth_gb_s:g} GB/s x {ratio:.2f} vendor median"
    return AchievableRate(value, "GB/s", provenance)


def achievable_memory_bandwidth_gb_s(gpu: GPU, measured: Measured | None = None) -> float:
    """Achievable device-memory bandwidth of `gpu` in GB/s; see `achievable_memory_bandwidth`."""
    return achievable_memory_bandwidth(gpu, measured).value


def _at_rows(curve: dict[int, DecodeGemm], rows: int) -> DecodeGemm:
    """The timed law at `rows` (M): linear in log M between the timed Ms, the nearest end
    outside them (beyond the largest the FLOPs bind, not the read)."""
    ms = sorted(curve)
    if rows <= ms[0]:
        return curve[ms[0]]
    if rows >= ms[-1]:
        return curve[ms[-1]]
    hi = next(m for m in ms if m >= rows)
    lo = ms[ms.index(hi) - 1]
    w = math.log(rows / lo) / math.log(hi / lo)
    a, b = curve[lo], curve[hi]
    return DecodeGemm(
        a.fixed_s + w * (b.fixed_s - a.fixed_s),
        a.bytes_s + w * (b.bytes_s - a.bytes_s),
        a.provenance,
    )


def measured_decode_gemm(gpu: GPU, precision: Precision, rows: int = 1) -> DecodeGemm | None:
    """How one decode GEMM of `rows` (M, one per sequence) runs on `gpu` at `precision` where
    a vendor library's tuned kernels were timed across model shapes (MI300X FP8 at M=1: 8.9 us
    per kernel, then 3.58 TB/s; the rate falls to 2.79 TB/s at M=64). A card of the same
    vendor and architecture without timings of its own (MI325X: the MI300X's CDNA 3 die with
    faster HBM3E) takes the timed card's fixed time and its rate scaled by the two cards'
    achievable copy bandwidths. None elsewhere, where the engine's share of the copy
    bandwidth stands for it."""
    timed, curve = _decode_curve(gpu, precision)
    if curve is None:
        return None
    law = _at_rows(curve, rows)
    if timed is None:
        return law
    scale = achievable_memory_bandwidth_gb_s(gpu) / achievable_memory_bandwidth_gb_s(timed)
    return DecodeGemm(
        law.fixed_s,
        law.bytes_s * scale,
        f"{timed.name}'s ({gpu.architecture}) timings, its rate x {scale:.2f} for this "
        f"card's copy bandwidth: {law.provenance}",
    )


def _decode_curve(
    gpu: GPU, precision: Precision
) -> tuple[GPU | None, dict[int, DecodeGemm] | None]:
    """The decode GEMM laws by M that speak for `gpu`: its own (None as the timed card), or
    those of a timed card of its vendor and architecture with that card; (None, None) where
    none were timed."""
    table = _table()
    own = table.decode_gemm.get((gpu.name, precision.value))
    if own is not None:
        return None, own
    borrowed = table.decode_gemm_by_architecture.get(
        (gpu.vendor, gpu.architecture, precision.value)
    )
    return borrowed if borrowed is not None else (None, None)


def measured_decode_matmul_tflops(gpu: GPU, precision: Precision) -> float | None:
    """The FLOP rate a batched decode's GEMMs reach once their FLOPs bind, where a vendor
    library's tuned kernels were timed on decode shapes: the rate stated at the largest M timed
    (MI300X FP8 at M = 256: 569.3 TFLOPS); a card of the same vendor and architecture without
    timings of its own takes the timed card's (MI325X: the MI300X's CDNA 3 die and matrix
    rate). None elsewhere, where the engine's share of the achievable matmul rate stands for
    it."""
    _, curve = _decode_curve(gpu, precision)
    return None if curve is None else curve[max(curve)].matmul_tflops


def measured_rate_notes(
    measured: Measured | None, gpu: GPU, precision: Precision
) -> tuple[str, ...]:
    """The estimate's assumptions for the probe's figures that replaced this card's rates."""
    if measured is None:
        return ()
    notes = []
    matmul = measured.matmul_tflops(gpu.name, precision)
    probed = _probed_tf32(gpu, precision, measured)
    if matmul is not None:
        peak, _, _ = matmul_peak(gpu, precision)
        notes.append(
            f"matmul {precision.value} from probe measurement {measured.date}: {matmul:g} "
            f"TFLOPS ({gpu.name} datasheet {peak / TFLOPS:g})"
        )
    elif probed is not None:
        notes.append(f"matmul tf32 {probed.value:.1f} TFLOPS from {probed.provenance}")
    memory = measured.memory_bandwidth_gb_s(gpu.name)
    if memory is not None:
        notes.append(
            f"GPU memory bandwidth from probe measurement {measured.date}: {memory:g} GB/s "
            f"({gpu.name} datasheet {gpu.memory_bandwidth_gb_s:g})"
        )
    return tuple(notes)


def sustained_clock_notes(
    gpu: GPU, precision: Precision, measured: Measured | None = None
) -> tuple[str, ...]:
    """The estimate's assumption on the clock behind a rule-derived matmul rate (none where a
    measured rate, the build's probe, a published row or the TF32 carried from one, already
    includes it)."""
    if measured is not None and measured.matmul_tflops(gpu.name, precision) is not None:
        return ()
    table = _table()
    carried = _probed_tf32(gpu, precision, measured) or _published_tf32(table, gpu, precision)
    if (gpu.name, precision.value) in table.matmul or carried is not None:
        return ()
    clock = sustained_clock(gpu, precision)
    if clock.mhz is None:
        return ()
    return (
        f"{gpu.name}: sustained clock {clock.mhz:.0f} MHz under tensor load ({clock.provenance})",
    )


def sustained_rate_factor(
    gpu: GPU, precision: Precision, measured: Measured | None = None
) -> float:
    """How far this card's achievable matmul rate sits from a typical NVIDIA card of the same
    datasheet peak: achievable / (peak x the NVIDIA median measured/datasheet ratio). 1 for a
    card without a measurement or a binding power limit; below 1 for a power-limited card or
    ROCm's shortfall; above 1 where a card measurably boosts past its datasheet clock (RTX 4090:
    170.06 measured against 165.2 listed). With `measured` (the build's probe of this card) its
    own rate is the achievable one. The model's fitted efficiencies apply on top of it."""
    table = _table()
    peak, _, _ = matmul_peak(gpu, precision)
    reference = table.matmul_efficiency[(Vendor.NVIDIA, _precision_group(precision))]
    return achievable_matmul(gpu, precision, measured).value * TFLOPS / (peak * min(reference, 1.0))


def sustained_bandwidth_factor(gpu: GPU, measured: Measured | None = None) -> float:
    """This card's achievable memory bandwidth over a typical NVIDIA card's share of the same
    datasheet figure (1 without a measurement on an NVIDIA card; RX 7900 XTX: 792 of 960 GB/s
    measured against NVIDIA's median 0.87); the fitted memory efficiency applies on top."""
    reference = min(_table().memory_efficiency[Vendor.NVIDIA], 1.0)
    return achievable_memory_bandwidth_gb_s(gpu, measured) / (gpu.memory_bandwidth_gb_s * reference)


# FP32 lanes per SM (NVIDIA architecture whitepapers: Pascal GP102, Ampere GA102, Ada, Hopper
# GH100 and Blackwell 128; Volta GV100, Turing and Ampere GA100 64). Every one of these SMs
# issues at most 4 warp instructions (4 x 32 lanes) a clock, so a card's instruction rate is
# its FP32 rate (2 FLOPs per FMA lane) x 64 / lanes: an A100 issues 19.5 T lane-instructions a
# second for 2,039 GB/s of HBM, an RTX 3090 17.8 T for 936 GB/s.
FP32_LANES_PER_SM = {
    "Pascal": 128, "Volta": 64, "Turing": 64, "Ampere": 128, "Ada Lovelace": 128,
    "Hopper": 128, "Blackwell": 128, "Blackwell Ultra": 128,
}  # fmt: skip
ISSUE_LANES_PER_SM_CLOCK = 128
# The HBM dies of Pascal and Ampere (GP100, GA100: P100, A100, A30) keep 64 FP32 lanes per SM.
HBM_DIE_FP32_LANES = {"Pascal": 64, "Ampere": 64}


def shader_issue_rate(gpu: GPU) -> float:
    """Lane-instructions per second the card's SMs issue at boost clock; 0 where unknown
    (other vendors, unlisted architectures)."""
    lanes = FP32_LANES_PER_SM.get(gpu.architecture)
    if gpu.vendor is not Vendor.NVIDIA or lanes is None:
        return 0.0
    if gpu.memory_type.upper().startswith("HBM"):
        lanes = HBM_DIE_FP32_LANES.get(gpu.architecture, lanes)
    return gpu.fp32_tflops * TFLOPS * ISSUE_LANES_PER_SM_CLOCK / (2.0 * lanes)
