"""Every measured row the repository has that scripts/calibrate.py does not fit on, predicted with
the shipped calibration: for these sources leave-one-source-out is the shipped model itself
(its fit saw none of them). Whether a constant was chosen looking at them is another matter:
bench/provenance.toml says, and bench_accuracy.py reports it beside each figure.

Each adapter reuses its own bench's reading and prediction, so a row is predicted here exactly
as its bench predicts it. `cleaned` marks the rows that bench counts; the others are the ones it
leaves out on evidence, put back for the all-rows figure.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "scripts"))

import provenance  # noqa: E402
from calibrate import predicted_units_per_s  # noqa: E402
from calibration_data import LambdaRow, read_lambda_rows  # noqa: E402

from dlrig.catalog import load_catalog  # noqa: E402
from dlrig.catalog.schema import GPU  # noqa: E402
from dlrig.errors import DlrigError  # noqa: E402
from dlrig.machine.model import Build, GPUGroup  # noqa: E402
from dlrig.model import estimate  # noqa: E402
from dlrig.model.calibration import default_calibration  # noqa: E402


@dataclass(frozen=True)
class Pair:
    """One measurement and dlrig's prediction of it, as a rate (throughput, tokens/s), an
    amount (GB) or a latency (s); `ratio` is measured over predicted, what an interval on the
    rate must hold."""

    source: str  # a key of bench/provenance.toml [sources]
    label: str
    measured: float
    predicted: float
    cleaned: bool = True
    gpus: int = 1
    gpu: str = ""  # the catalog's name of the GPU model, where the row names one
    # The output's own interval on the predicted figure, where it is not the ratio band of the
    # row's kind (the largest arrival rate's, searched again at the serving band's ends).
    interval: tuple[float, float] | None = None
    # What an interval's method leaves out in turn, where it is not the whole source: one
    # model of a table of mixtures of experts (moe_serving_band).
    unit: str = ""

    @property
    def band_unit(self) -> str:
        return self.unit or self.source

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1.0

    @property
    def ratio(self) -> float:
        return self.measured / self.predicted


def catalog_name(name: str) -> str:
    """The catalog's name of a GPU a bench row names (the row's own for a variant it builds)."""
    try:
        return load_catalog().find(GPU, name).name
    except DlrigError:
        return name


def lambda_2025() -> list[Pair]:
    """Lambda's 2025 rows (bench_lambda_v2.py), 1-8 GPUs; the superlinear ones put back."""
    data = BENCH / "data" / "lambda_v2_2025.csv"
    cal = default_calibration()
    read = {
        cleaned: read_lambda_rows(
            data.parent, load_catalog(), multi_gpu=True, files=(data.name,), cleaned=cleaned
        )[0]
        for cleaned in (True, False)
    }
    kept = {lambda_key(r) for r in read[True]}
    return [
        Pair(
            "lambda_2025",
            f"{r.lambda_model} {r.workload.precision.value} {r.lambda_gpu.strip()}",
            r.measured_units_per_s,
            predicted_units_per_s(r, cal),
            lambda_key(r) in kept,
            r.num_gpus,
            r.gpu.name,
        )
        for r in read[False]
    ]


def lambda_key(r: LambdaRow) -> tuple[object, ...]:
    w = r.workload
    return (r.lambda_model, r.lambda_gpu, r.num_gpus, w.batch_size, w.precision,
            r.measured_units_per_s)  # fmt: skip


def nvidia_dle() -> list[Pair]:
    """NVIDIA's DLE single-GPU tables (bench_external.py); it leaves none out."""
    import bench_external as ext

    return [
        Pair(
            "nvidia_dle",
            f"{r.model} {r.precision} {r.gpu}",
            r.measured,
            ext.predict(r),
            gpu=catalog_name(r.gpu),
        )
        for r in ext.read_rows(ext.DATA)
    ]


def dle_frameworks() -> list[Pair]:
    """DLE's TensorFlow, MXNet and PaddlePaddle tables (bench_frameworks.py), images or
    sequences a second on all the row's GPUs; it leaves none out."""
    import bench_frameworks as fw

    return [
        Pair(fw.SOURCE, r.label, r.measured, fw.predict(r), gpus=r.gpus, gpu=catalog_name(r.gpu))
        for r in fw.read_rows()
    ]


def neusight() -> list[Pair]:
    """NeuSight's measured one-GPU rows (bench_neusight.py) that dlrig expresses, as steps a
    second (the inverse of the measured latency); the rows it cannot express are not pairs."""
    import bench_neusight as ns

    return [
        Pair(ns.SOURCE, p.row.label, 1e3 / p.row.measured_ms, 1e3 / p.ms, gpu=p.row.gpu)
        for p in (ns.predict(r) for r in ns.read_rows() if ns.not_predicted(r) is None)
    ]


def _h200() -> tuple[list[Any], Build, dict[str, Any]]:
    """bench_h200's comparisons of every job, the 1x H200 build and the recorded data."""
    import bench_h200 as h2

    data = json.loads(h2.DATA.read_text())
    gpu = load_catalog().find(GPU, h2.GPU_NAME)
    build = Build(name=f"1x {gpu.name}", gpus=(GPUGroup(gpu, 1),))
    return [h2.compare(job, data["jobs"][job], build) for job in h2.JOBS], build, data


def h200_jobs() -> list[Pair]:
    """The H200 jobs (bench_h200.py) by the median of their repeats, as throughput (the inverse
    of the step), and the batch sweeps' smaller batches (the largest is the job itself)."""
    import bench_h200 as h2

    compared, build, data = _h200()
    pairs = [
        Pair(
            "h200_jobs",
            c.job,
            1.0 / statistics.median(c.measured_s),
            1.0 / c.predicted_s,
            gpu=build.gpus[0].gpu.name,
        )
        for c in compared
    ]
    for sweep, job in h2.SWEEPS.items():
        zoo_name, fields, model = h2.JOBS[job]
        for run in data["jobs"][sweep]["runs"]:
            w = h2.workload_from(zoo_name, {**fields, "batch_size": run["batch"]}, model, job)
            predicted_s = estimate(build, w).step_time_s
            pairs.append(
                Pair(
                    "h200_jobs",
                    f"{job} batch {run['batch']}",
                    1.0 / run["median_step_s"],
                    1.0 / predicted_s,
                    gpu=build.gpus[0].gpu.name,
                )
            )
    return pairs


def h200_memory() -> list[Pair]:
    """Peak tensor memory of the H200 jobs, GiB measured against dlrig's states + activations."""
    compared, _, _ = _h200()
    return [Pair("h200_memory", c.job, c.measured_gb, c.predicted_gb) for c in compared]


def peak_memory() -> list[Pair]:
    """Published peak memory of fine-tuning jobs (bench_peak_memory.py), GiB measured against
    dlrig's figure for the job as it ran; the rows it leaves out on their flag put back."""
    import bench_peak_memory as pm

    return [
        Pair(p.row.source, f"{p.row.job.model} {p.row.job.finetune} {p.row.job.gpus}x "
             f"{p.row.job.gpu} s{p.row.job.seq_len} mb{p.row.job.micro_batch} {p.row.measure}",
             p.row.peak_gib, p.predicted_gib, p.cleaned, p.row.job.gpus)
        for p in pm.predictions()
    ]  # fmt: skip


def memory() -> list[Pair]:
    """Every peak-memory pair: the H200 jobs' and the published peaks."""
    return h200_memory() + peak_memory()


def memory_calibration_sources() -> tuple[str, ...]:
    """The memory sources some constant other than the interval was chosen on
    (bench/provenance.toml), among those with measured peaks: what the memory interval is set
    on, as serving_calibration_sources picks the serving ones."""
    measured = {p.source for p in memory()}
    return tuple(
        key
        for key, source in provenance.sources().items()
        if source.kind == "memory"
        and key in measured
        and any("MEMORY_RATIO_BAND" not in c.name for c in provenance.set_on([key]))
    )


def memory_residuals(pairs: list[Pair]) -> list[Any]:
    """The calibration sources' peaks as interval_band residuals, every row (the ones a bench
    leaves out on evidence too), each source weighing 1."""
    import interval_band

    sources = memory_calibration_sources()
    return [interval_band.Residual(p.source, 1, p.ratio) for p in pairs if p.source in sources]


def memory_band() -> tuple[float, float]:
    """The memory interval as the training and serving ones are set (scripts/interval_band.py):
    the 10th and 90th percentile of measured / predicted peak tensors over the calibration
    sources' rows, each source weighing 1, widened until the sources, each left out in turn,
    have 80% of their rows inside the others' band: memory.MEMORY_RATIO_BAND, rounded to 3
    places."""
    import interval_band

    band = interval_band.band(memory_residuals(memory()))
    return round(band.low, 3), round(band.high, 3)


def _left_out_bands(residuals: list[Any]) -> dict[str, tuple[float, float]]:
    """For each source among `residuals` (interval_band.Residual), the band the others give at
    the widening they find among themselves: what judges it as if it were new."""
    import interval_band

    out = {}
    for source in sorted({r.source for r in residuals}):
        others = [r for r in residuals if r.source != source]
        if others:
            band = interval_band.band(others)
            out[source] = (band.low, band.high)
    return out


def memory_left_out_bands(pairs: list[Pair]) -> dict[str, tuple[float, float]]:
    """For each memory calibration source, the band the other calibration sources give (at the
    widening they find among themselves): what judges it as if it were new, so that no source
    judges itself (interval_band.left_out_bands does this for training)."""
    return _left_out_bands(memory_residuals(pairs))


# bench/data/external_llm.csv's `source` column -> a provenance source.
LLM_SOURCES = {
    "llm-foundry": "llm_foundry",
    "dgxc-benchmarking": "dgxc_benchmarking",
    "nemo-automodel": "nemo_automodel",
    "torchtitan": "torchtitan",
    "torchtitan (Trainy)": "torchtitan",
    "nemo-24.07": "nemo_other",
    "nemo-long-seq": "nemo_other",
    "megatron-bridge": "nemo_other",
    "torchtune": "torchtune",
    "llm.q": "llmq",
    "mlperf-training": "mlperf_training_amd",
}


def external_llm() -> list[Pair]:
    """Published LLM training (bench_external_llm.py), tokens/s per GPU; its flagged rows put
    back where dlrig can express them."""
    import bench_external_llm as llm

    pairs = []
    for r in llm.read_rows(llm.DATA):
        try:
            p = llm.predict(r)
        except DlrigError:  # a flagged layout dlrig refuses: it stays out of both figures
            if not r.flag:
                raise
            continue
        pairs.append(
            Pair(
                LLM_SOURCES[r.source],
                f"{r.model} {r.gpus}x {r.gpu} s{r.seq_len}",
                r.measured,
                p.tokens_per_gpu,
                not r.flag,
                r.gpus,
                catalog_name(r.gpu),
            )
        )
    return pairs


def fsdp_qlora() -> list[Pair]:
    """Answer.AI's FSDP + QLoRA benchmarks (bench_fsdp_qlora.py), tokens/s per GPU."""
    import bench_fsdp_qlora as fq

    return [
        Pair(
            fq.SOURCE,
            f"{p.row.model} {p.row.finetune} {p.row.gpus}x {p.row.gpu} s{p.row.seq_len} "
            f"mb{p.row.micro_batch}",
            p.row.measured,
            p.tokens_per_gpu,
            gpus=p.row.gpus,
            gpu=catalog_name(p.row.gpu),
        )
        for p in fq.predictions()
    ]


def serving() -> list[Pair]:
    """Published decode and serving speeds (bench_serving.py): batch-1 and maximum-throughput
    points, llama-bench prompt processing, TensorRT-LLM's rows the profiles were not chosen on,
    vLLM's sweeps and GPUStack's vLLM baselines."""
    import bench_serving as sv

    from dlrig.workloads.serving import Engine

    pairs = []
    by_engine = {Engine.LOCAL: "llama_bench", Engine.VLLM: "vllm_batch1",
                 Engine.SGLANG: "sglang_batch1"}  # fmt: skip
    for p in sv.POINTS:
        source = by_engine.get(p.changes.get("engine"), "trtllm_405b")  # type: ignore[call-overload]
        pairs.append(Pair(source, p.label, p.measured, sv.predict(p)[0]))
    for label, workload, gpu, count, quantization, measured in sv.PROMPT_POINTS:
        predicted = sv.prompt_tokens_per_s(workload, gpu, count, quantization)
        pairs.append(Pair("llama_bench", f"{label}, pp 1024", measured, predicted))
    for label, workload, gpu, count, _, measured_row in sv.HELD_OUT:
        for lengths, m in zip(sv.ISL_OSL, measured_row, strict=True):
            predicted = sv.max_throughput(workload, gpu, count, lengths)
            pairs.append(Pair("trtllm_other", f"{label} {lengths}", m, predicted))
    for label, lengths, m, predicted in sv.perf_overview_rows(sv.TRTLLM_MORE):
        pairs.append(Pair("trtllm_more", f"{label} {lengths}", m, predicted))
    moe_workloads = {row[0]: row[1] for row in sv.TRTLLM_MOE}
    for label, lengths, m, predicted in sv.perf_overview_rows(sv.TRTLLM_MOE):
        pairs.append(Pair("trtllm_moe", f"{label} {lengths}", m, predicted,
                          unit=f"trtllm_moe {moe_workloads[label]}"))  # fmt: skip
    # vLLM's held-out rows: tokens/s per user (1 / time per output token) at a concurrency.
    for label, gpu, structure, isl, osl, quantization, points, cited in sv.VLLM_HELD_OUT:
        source = "vllm_l4" if cited == sv.VLLM_L4 else "vllm_sweeps"
        for users, measured_ms in points:
            est = sv.vllm_estimate(gpu, structure, isl, osl, quantization, users)
            pairs.append(Pair(source, f"{label}, concurrency {users}",
                              1e3 / measured_ms, 1.0 / est.tpot_s))  # fmt: skip
    # GPUStack's vLLM baselines: output tokens/s over each `vllm bench serve` run.
    for label, measured, predicted, _ in sv.sglang_cookbook_rows():
        pairs.append(Pair("sglang_cookbook_moe", label, measured, predicted, gpus=8,
                          gpu="B200 SXM 180GB"))  # fmt: skip
    for row, _, predicted in sv.gpustack_predictions():
        pairs.append(Pair(row.source, row.label, row.measured, predicted,
                          gpus=row.gpus, gpu=catalog_name(row.gpu)))  # fmt: skip
    return pairs


# Serving sources of mixture-of-experts models, whose estimates carry an interval of their
# own (serving.MOE_RATIO_BAND, moe_serving_band): they set no dense interval, and
# bench_accuracy judges the serving kind also without them and on them alone.
MOE_SOURCES = ("trtllm_moe", "gpustack_vllm_moe", "gpustack_vllm_moe_seen", "sglang_cookbook_moe")


def _calibration_sources(keys: Iterable[str]) -> tuple[str, ...]:
    """Those of the serving sources `keys` some constant other than an interval was chosen
    on (bench/provenance.toml)."""
    sources = provenance.sources()
    return tuple(
        key
        for key in keys
        if sources[key].kind == "serving"
        and any("RATIO_BAND" not in c.name for c in provenance.set_on([key]))
    )


def serving_calibration_sources() -> tuple[str, ...]:
    """The serving sources some constant other than the interval was chosen on
    (bench/provenance.toml: the engines' shares and overheads, the decode step's structure):
    those the serving interval is set on, as calibrate.band_sources picks the training ones,
    less the mixtures of experts (MOE_SOURCES), whose figures carry their own."""
    return _calibration_sources(k for k in provenance.sources() if k not in MOE_SOURCES)


def moe_calibration_sources() -> tuple[str, ...]:
    """The mixture-of-experts serving sources some constant was chosen on: those the MoE
    interval is set on."""
    return _calibration_sources(MOE_SOURCES)


def _moe_residuals(pairs: list[Pair]) -> list[Any]:
    """The MoE calibration rows as the interval's method takes them: each model of TensorRT-
    LLM's table a unit of its own (Pair.band_unit), so the unit left out in turn is a model the
    others never showed, as a new mixture of experts is to the shipped band."""
    import interval_band

    sources = moe_calibration_sources()
    return [
        interval_band.Residual(p.band_unit, 1, p.ratio)
        for p in pairs
        if p.source in sources and p.interval is None
    ]


def moe_serving_band() -> tuple[float, float]:
    """The mixture-of-experts serving interval by the serving interval's method
    (serving_band) over the MoE calibration rows, each model a unit (_moe_residuals):
    serving.MOE_RATIO_BAND, rounded to 3 places."""
    import interval_band

    band = interval_band.band(_moe_residuals(serving()))
    return round(band.low, 3), round(band.high, 3)


def moe_left_out_bands(pairs: list[Pair]) -> dict[str, tuple[float, float]]:
    """For each MoE calibration unit (Pair.band_unit), the band the other units give."""
    return _left_out_bands(_moe_residuals(pairs))


def serving_band() -> tuple[float, float]:
    """The serving interval as the training one is set (scripts/interval_band.py): the 10th
    and 90th percentile of measured / predicted over the serving points of the calibration
    sources (NVIDIA's and AMD's: every serving source serving_calibration_sources names), each
    source weighing 1, widened until the sources, each left out in turn, have 80% of their rows
    inside the others' band: serving.SERVING_RATIO_BAND, rounded to 3 places."""
    import interval_band

    sources = serving_calibration_sources()
    band = interval_band.band(
        [
            interval_band.Residual(p.source, 1, p.ratio)
            for p in serving() + amd_serving() + mlperf_offline()
            if p.source in sources
        ]
    )
    return round(band.low, 3), round(band.high, 3)


def serving_left_out_bands(pairs: list[Pair]) -> dict[str, tuple[float, float]]:
    """For each serving calibration source, the band the other serving calibration sources
    give (interval_band at the widening they find among themselves): what judges it as if it
    were new, as memory_left_out_bands does for peak memory."""
    import interval_band

    sources = serving_calibration_sources()
    residuals = [
        interval_band.Residual(p.source, 1, p.ratio)
        for p in pairs
        if p.source in sources and p.interval is None
    ]
    return _left_out_bands(residuals)


def arrivals() -> list[Pair]:
    """MLPerf Server runs (bench_arrivals.py): the requests/s each passed at its p99 bounds
    against dlrig's largest rate meeting them, with that rate's interval."""
    import bench_arrivals as ar

    pairs = []
    for run in ar.HELD_OUT:
        load = ar.predict(run)
        low, high = load.max_requests_per_s_low, load.max_requests_per_s_high
        assert load.max_requests_per_s is not None and low is not None and high is not None
        pairs.append(
            Pair(
                "mlperf_server",
                run.label,
                run.samples_per_s,
                load.max_requests_per_s,
                gpus=run.count,
                interval=(low, high),
            )
        )
    return pairs


def ttft() -> list[Pair]:
    """vLLM's time to first token at each client concurrency (bench_serving.TTFT_POINTS) and
    SGLang's for one user (SGLANG_TTFT_POINTS), in seconds: a latency's error is its time's,
    predicted / measured - 1."""
    import bench_serving as sv

    vllm = [
        Pair("vllm_ttft", f"{label}, concurrency {users}", measured_ms / 1e3, predicted_ms / 1e3)
        for label, users, measured_ms, predicted_ms, _ in sv.ttft_rows()
    ]
    sglang = [
        Pair("sglang_ttft", label, measured_ms / 1e3, predicted_ms / 1e3)
        for label, measured_ms, predicted_ms, _ in sv.sglang_ttft_rows()
    ]
    return vllm + sglang


def mlperf_offline() -> list[Pair]:
    """MLPerf Offline runs (bench_arrivals.py): total output tokens/s with every sample queued."""
    import bench_arrivals as ar

    return [
        Pair(
            "mlperf_offline",
            run.label,
            run.tokens_per_s,
            ar.offline_tokens_per_s(run),
            gpus=run.count,
            gpu=run.gpu,
        )
        for run in ar.OFFLINE
    ]


def amd_serving() -> list[Pair]:
    """AMD's vLLM tables and Oracle's OCI sweep on 8x MI300X (bench_amd.py): output tokens/s
    of all users, as published or a latency row's batch x output tokens over its time."""
    import bench_amd as amd

    return [
        Pair(
            p.row.source,
            p.row.label,
            p.row.measured_tokens_per_s,
            p.tokens_per_s,
            gpus=p.row.gpus,
            gpu=catalog_name(p.row.gpu),
        )
        for p in amd.predictions()
    ]


ADAPTERS: dict[str, Callable[[], list[Pair]]] = {
    "lambda_2025": lambda_2025,
    "nvidia_dle": nvidia_dle,
    "dle_frameworks": dle_frameworks,
    "neusight": neusight,
    "h200_jobs": h200_jobs,
    "external_llm": external_llm,
    "fsdp_qlora": fsdp_qlora,
    "serving": serving,
    "arrivals": arrivals,
    "mlperf_offline": mlperf_offline,
    "amd_serving": amd_serving,
    "ttft": ttft,
    "memory": memory,
}


def every_pair() -> list[Pair]:
    return [pair for adapter in ADAPTERS.values() for pair in adapter()]
