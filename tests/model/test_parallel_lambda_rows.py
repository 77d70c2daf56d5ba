"""Which of Lambda's multi-GPU rows measure data-parallel training: its Transformer-XL runs
never wrap the model in DistributedDataParallel (DLE's train.py does so only under
`--multi_gpu ddp`; every Lambda log records `multi_gpu=None`, lambdal/deeplearning-benchmark
pytorch/results, read 2026-12-03), so their multi-GPU rows are independent replicas and are
left out of the scaling benchmark, counted; their 1-GPU rows stay."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dlrig.catalog import load_catalog

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"


def _published(version: str, model: str, precision: str, gpu: str, batch: str) -> float:
    """One 1-GPU throughput as Lambda's file gives it, left-out rows included."""
    import csv

    name = {"v0": "lambda_pytorch_train_v0_2022.csv", "v1": "lambda_pytorch_train_v1_2024.csv"}
    with (DATA / name[version]).open() as fh:
        [rate] = [
            float(r["throughput"]) for r in csv.DictReader(fh)
            if (r["model"], r["precision"][:4], r["gpu"], r["batch_size_per_gpu"], r["num_gpus"])
            == (model, precision, gpu, batch, "1")
        ]  # fmt: skip
    return rate


REASON = "transformer-xl multi-GPU ran without --multi_gpu ddp (replicas, no all-reduce)"


def test_transformer_xl_replicas_are_left_out_and_counted() -> None:
    """301 multi-GPU Transformer-XL rows (297 of 2-8 GPUs, 4 of 16) leave; the 1-GPU ones
    remain for the single-GPU fit."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    txl = [r for r in rows if r.lambda_model.startswith("transformerxl")]
    assert txl and all(r.num_gpus == 1 for r in txl)
    assert skipped[REASON] == 301


def test_all_rows_predict_what_the_logs_say_ran() -> None:
    """bench_accuracy's all-rows figures put the left-out rows back as the job their logs
    record: a Transformer-XL row of 8 GPUs as 8 one-GPU replicas (8x the one-GPU prediction,
    no all-reduce), BERT-large "fp16" on 2-8 RTX 2080 Ti as the one fp32 process that ran
    ("n_gpu: 1 ... 16-bits training: False"), v1 NCF "fp16" on 80 GB cards without --amp
    (config_pytorch_80GB.sh) in full precision."""
    import dataclasses

    sys.path.insert(0, str(REPO / "scripts"))
    from calibrate import predicted_units_per_s
    from calibration_data import read_lambda_rows

    from dlrig.enums import Precision
    from dlrig.model.calibration import default_calibration

    every, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    replicas = [r for r in every if r.replicas]
    assert {r.lambda_model for r in replicas} == {"transformerxlbase", "transformerxllarge"}
    assert all(r.num_gpus > 1 for r in replicas)
    row = next(r for r in replicas if r.num_gpus == 8)
    one = dataclasses.replace(row, num_gpus=1, platform=None, measured=None, replicas=False)
    cal = default_calibration()
    assert predicted_units_per_s(row, cal) == pytest.approx(8 * predicted_units_per_s(one, cal))
    # The file's 6.0 sequences/s on 2, 4 and 8 bridged GPUs (the unbridged server's rows repeat
    # them): one process, one GPU.
    bert = [r for r in every if r.lambda_model == "bert_large_squad"
            and r.lambda_gpu == "RTX 2080Ti NVLink" and r.measured_units_per_s == 6.0
            and r.workload.batch_size == 2 and r.num_gpus == 1]  # fmt: skip
    assert len(bert) == 3
    assert all(r.num_gpus == 1 and r.workload.precision is Precision.TF32 for r in bert)
    ncf_80 = [r for r in every if r.lambda_model == "ncf" and r.version == "v1"
              and "80GB" in r.lambda_gpu]  # fmt: skip
    assert ncf_80 and all(r.workload.precision is Precision.TF32 for r in ncf_80)


def test_no_data_parallel_gpu_beats_its_one_gpu_rate() -> None:
    """The file flags `superlinear_suspect` on one system per job; the six other H100 SXM5
    servers' 8-GPU BERT-base fp16 rows log 9,191-9,928 sequences/s against 812-877 on one GPU
    (10.5-12.2x) without the flag: their log counts 100 steps of 320 on each GPU where 2 x 35
    ran (calibration_data.squad_counted_per_trained, 1.444x), 6,365-6,875 trained (7.3-7.8x).
    The same rule (a GPU above 1.1x its 1-GPU rate at an equal or larger batch, 10% slack for
    Lambda's rounded batches), in samples trained, leaves out no row. NCF's "superlinear" rows
    are its count: the bridged Quadro RTX 8000 server's NCF fp16 logs 19.8 M samples/s a GPU
    on 2 GPUs (batch 10,000,000) against 15.9 M alone (batch 10,854,552), but trains 80 of
    every 99.3 M it counts there and 97.7 alone (calibration_data.ncf_counted_per_trained):
    16.0 M against 15.6 M trained, kept."""
    import statistics

    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import SUPERLINEAR_PER_GPU, job_key, read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    assert not [k for k in skipped if k.startswith("superlinear: ")]
    single: dict[tuple[str, str, int, str, str], list[float]] = {}
    for r in rows:
        if r.num_gpus == 1:
            single.setdefault(job_key(r), []).append(r.measured_samples_per_s)
    for r in rows:
        alone = single.get(job_key(r))
        if r.num_gpus > 1 and alone:
            per_gpu = r.measured_samples_per_s / r.num_gpus
            assert per_gpu <= SUPERLINEAR_PER_GPU * statistics.median(alone)
    ncf = [r for r in rows if r.lambda_gpu == "RTX 8000 NVLink" and r.lambda_model == "ncf"
           and r.workload.precision.value == "fp16"]  # fmt: skip
    assert sorted(r.num_gpus for r in ncf) == [2, 4, 8]
    two = next(r for r in ncf if r.num_gpus == 2)
    assert two.measured_samples_per_s / 2 == pytest.approx(16.0e6, rel=0.01)


def test_three_rtx_3090_in_a_workstation_ran_cool() -> None:
    """Three 3-slot RTX 3090 Founders Editions need 9 expansion slots, more than a workstation
    board's 7, and the cards of Lambda's 18 rows of 3 RTX 3090 (lambda_pytorch_train_v0_2022.csv)
    ran at a median 66 C, at most 71 C, at 90% utilization or more, where its blower cards ran
    84-86 C (pytorch/results/3x3090/*/*_monitor.csv; scripts/calibration_data.py): they map to a
    2-slot water-cooled edition, which does not throttle. Its pairs keep the open-air board."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    from dlrig.enums import CoolerType

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    by_count = {
        n: [r for r in rows if r.gpu.name == "GeForce RTX 3090" and r.num_gpus == n] for n in (2, 3)
    }
    assert len(by_count[3]) == 18
    assert {(r.gpu.cooler, r.gpu.slots) for r in by_count[3]} == {(CoolerType.WATER, 2)}
    assert {r.gpu.cooler for r in by_count[2]} == {CoolerType.OPEN_AIR}


def test_two_gpus_of_lambdas_nvlink_servers_run_as_the_server_unbridged() -> None:
    """On 2 GPUs Lambda's "RTX 2080Ti NVLink" server measures what its unbridged twin does:
    GNMT fp16 59,398 against 59,568 tok/s, WaveGlow fp32 36,477 against 36,555 (v0 csv), where
    a bridge would give GNMT, which loses 29% of its per-GPU rate to the host-staged all-reduce
    of a card without PCIe peer-to-peer, NVLink's. So both rows get the same estimate."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibrate import predicted_units_per_s
    from calibration_data import read_lambda_rows

    from dlrig.model.calibration import default_calibration

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    pair = {
        r.lambda_gpu.strip(): r for r in rows
        if r.lambda_model == "gnmt" and r.workload.precision.value == "fp16" and r.num_gpus == 2
        and r.gpu.name == "GeForce RTX 2080 Ti"
    }  # fmt: skip
    bridged, plain = pair["RTX 2080Ti NVLink"], pair["RTX 2080Ti"]
    assert (bridged.measured_units_per_s, plain.measured_units_per_s) == (59398.0, 59568.0)
    cal = default_calibration()
    assert predicted_units_per_s(bridged, cal) == predicted_units_per_s(plain, cal)


def test_cloud_pcie_rows_run_without_peer_to_peer() -> None:
    """LambdaCloud and Linode ran KVM virtual machines (QEMU CPU models, no motherboard in
    their sys_pytorch.txt): their PCIe rows run in the server without P2P; their SXM V100s keep
    NVLink, which needs no PCIe path, except in the 2022-12 runs made with NCCL_P2P_DISABLE=1
    (the test below); Lambda's own servers keep P2P."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    from dlrig.catalog.schema import FormFactor
    from dlrig.model.interconnect import LinkClass, intra_node_link

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    vms = ("LambdaCloud", "Linode")
    cloud = [r for r in rows if r.num_gpus > 1 and r.lambda_gpu.startswith(vms)]
    pcie = [r for r in cloud if r.gpu.form is not FormFactor.SXM]
    cards = {"Quadro RTX 6000", "NVIDIA RTX A6000", "GeForce GTX 1080 Ti"}
    assert {r.gpu.name for r in pcie} == cards
    for r in cloud:
        link = intra_node_link(r.build(), r.gpu, r.num_gpus)
        sxm = r.gpu.form is FormFactor.SXM and r.measured is None
        assert link is (LinkClass.NVLINK if sxm else LinkClass.PCIE_NO_P2P), r.lambda_gpu
    own = [r for r in rows if r.lambda_gpu == "RTX A6000" and r.num_gpus == 4]
    assert own and all(r.platform is not None and r.platform.peer_to_peer for r in own)


def test_lambdas_ncf_exchanges_the_16bit_models_gradients() -> None:
    """Lambda's DLE fork trains NCF "fp16" with apex amp O2 and apex DDP
    (LambdaLabsML/DeepLearningExamples@b5e1251 Recommendation/NCF/ncf.py): 2 bytes a parameter
    cross in its fp16 rows, 4 in its TF32 ones; the zoo's NCF (NVIDIA's, autocast) keeps 4."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    from dlrig.model.parallelism import gradient_bytes_per_param
    from dlrig.model.rates import is_16bit
    from dlrig.workloads import resolve_workload

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    ncf = [r for r in rows if r.lambda_model == "ncf" and r.num_gpus > 1]
    crossing = {
        (
            r.workload.precision.value,
            gradient_bytes_per_param(r.workload, is_16bit(r.workload.precision)),
        )
        for r in ncf
    }
    assert crossing == {("fp16", 2.0), ("tf32", 4.0)}
    assert gradient_bytes_per_param(resolve_workload({"model": "ncf"}, "test"), True) == 4.0


def test_runs_inside_lambdas_nccl_p2p_disable_window_have_no_peer_to_peer() -> None:
    """Lambda's benchmark_pytorch.sh exported NCCL_P2P_DISABLE=1 from 2022-10-16 (0a684b62) to
    2023-02-06 (aad0d1cd). The 2-GPU RTX 6000 Ada run (2023-01-12) falls inside it and keeps
    0.81 of its 1-GPU GNMT TF32 rate a GPU; the 4-GPU run (2023-03-22) falls after it and keeps
    0.96 (lambda_pytorch_train_v1_2024.csv). Those rows carry a measured block without P2P;
    the rows run after the window, every v0 row, and the H100 PCIe rows (run inside it, but
    scaling as with P2P) do not. The A100 SXM4 keeps 0.60 on 2 NVSwitch-joined GPUs."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)

    def gnmt_per_gpu(label: str, n: int) -> tuple[float, bool]:
        [one] = [r for r in rows if r.lambda_gpu == label and r.num_gpus == 1
                 and r.lambda_model == "gnmt" and r.version == "v1"
                 and r.workload.precision.value == "tf32"]  # fmt: skip
        [row] = [r for r in rows if r.lambda_gpu == label and r.num_gpus == n
                 and r.lambda_model == "gnmt" and r.version == "v1"
                 and r.workload.precision.value == "tf32"]  # fmt: skip
        staged = row.measured is not None and row.measured.peer_to_peer is False
        return row.measured_units_per_s / n / one.measured_units_per_s, staged

    assert gnmt_per_gpu("RTX 6000 Ada", 2) == (pytest.approx(0.81, abs=0.01), True)
    assert gnmt_per_gpu("RTX 6000 Ada", 4) == (pytest.approx(0.96, abs=0.01), False)
    assert gnmt_per_gpu("A100 80GB SXM4", 2) == (pytest.approx(0.60, abs=0.01), True)
    assert all(r.measured is None for r in rows if r.version == "v0")
    # Inside the window by date, but scaling 0.89-1.00 a GPU on 2-8 GPUs: left as run with P2P.
    assert all(r.measured is None for r in rows if r.lambda_gpu == "H100 80GB PCIe Gen5")


def test_v0_ssd_fp32_on_cudnn_7_is_a_superseded_stack() -> None:
    """NVIDIA's DGX-1 ran SSD300 fp32 at batch 32 at 133.67 img/s a V100 in NGC 19.08 (cuDNN 7)
    and 108.27 in 21.05 (cuDNN 8), mixed precision 215.30 and 212.95 (DLE SSD README at 4cce4d88
    and 0b3f770b). Lambda's Quadro RTX 8000 moved the same way: fp32 116.8 -> 81.4 img/s from v0
    (cuDNN 7.6.5) to v1 in its logs (116 and 81 in its tables), fp16 180 -> 182. The 30 v0 fp32
    rows on Turing and Volta are left out and counted; the fp16 ones and the Pascal and Ampere
    fp32 ones stay."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    assert skipped["ssd fp32 on v0 Turing/Volta ran cuDNN 7.6.5 at 1.3-1.4x its cuDNN 8 rate"] == 30
    ssd = [r for r in rows if r.lambda_model == "ssd" and r.version == "v0"]
    kept = {(r.gpu.architecture, r.workload.precision.value) for r in ssd}
    assert ("Turing", "fp16") in kept and ("Volta", "fp16") in kept
    assert ("Pascal", "tf32") in kept and ("Ampere", "tf32") in kept
    assert ("Turing", "tf32") not in kept and ("Volta", "tf32") not in kept
    rtx8000 = {
        (r.version, r.workload.precision.value): r.measured_units_per_s
        for r in rows
        if r.lambda_model == "ssd" and r.gpu.name == "Quadro RTX 8000" and r.num_gpus == 1
    }
    assert rtx8000[("v1", "tf32")] == 81.0
    assert (rtx8000[("v0", "fp16")], rtx8000[("v1", "fp16")]) == (180.0, 182.0)


def test_the_2080_ti_bert_large_fp16_multi_gpu_rows_ran_one_fp32_process() -> None:
    """Every log of Lambda's 2020 "fp16" BERT-large runs on 2, 4 and 8 RTX 2080 Ti reads
    "n_gpu: 1, distributed training: False, 16-bits training: False", and the bridged server's
    table gives 6 sequences/s on 2, 4 and 8 GPUs alike (lambda_pytorch_train_v0_2022.csv): one
    GPU in fp32. Its 3 rows leave, counted; no multi-GPU 2080 Ti BERT-large fp16 row stays."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    assert skipped["bert-large fp16 on 2-8 RTX 2080 Ti ran one fp32 process (logs)"] == 3
    assert not [
        r
        for r in rows
        if r.lambda_model == "bert_large_squad"
        and r.gpu.name == "GeForce RTX 2080 Ti"
        and r.workload.precision.value == "fp16"
        and r.num_gpus > 1
    ]


def test_gnmt_and_waveglow_fp32_on_the_pytorch_1_9_ga10x_runs_are_a_superseded_stack() -> None:
    """Same batch, one card a step up on another stack (lambda_pytorch_train_v0_2022.csv):
    GNMT fp32 on the RTX A5000 (PyTorch 1.9.0a0) 27,205 tok/s against 47,266 on the A5500
    (1.10): 1.74x, where GNMT fp16 differs 1.12x and ResNet-50 fp16 1.05x, the hardware's
    gap. The A100 80GB SXM4 on the same stack ran GNMT TF32 at 124,186 against 129,911 tok/s
    in 2024. The 25 GNMT and WaveGlow full-precision rows of the A4000, A5000 and A40 leave,
    counted; their mixed-precision GNMT rows and their other jobs stay."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    reason = "gnmt/waveglow fp32 on v0 RTX A4000/A5000/A40 ran PyTorch 1.9 at 0.41-0.71 of its tier"
    assert skipped[reason] == 25

    def one_gpu(label: str, model: str, precision: str) -> float:
        [rate] = [r.measured_units_per_s for r in rows if r.lambda_gpu == label
                  and r.num_gpus == 1 and r.lambda_model == model and r.version == "v0"
                  and r.workload.precision.value == precision]  # fmt: skip
        return rate

    assert one_gpu("RTX A5500", "gnmt", "tf32") == 47_266.0
    assert one_gpu("RTX A5500", "gnmt", "fp16") / one_gpu("RTX A5000", "gnmt", "fp16") < 1.15
    resnet = one_gpu("RTX A5500", "resnet50", "fp16") / one_gpu("RTX A5000", "resnet50", "fp16")
    assert resnet == pytest.approx(1.05, abs=0.01)
    kept = {(r.lambda_gpu, r.lambda_model) for r in rows if r.version == "v0"
            and r.workload.precision.value == "tf32"}  # fmt: skip
    assert not kept & {("RTX A5000", "gnmt"), ("RTX A4000", "waveglow"), ("RTX A40", "gnmt")}
    assert ("RTX A5000", "resnet50") in kept  # full-precision convnets stay


def test_lambdas_2023_h100_sxm5_is_the_early_hopper_stack() -> None:
    """Lambda's own H100 SXM5 server (2023, CUDA 11.8) against five vendors' H100 SXM5 servers
    (2024, NGC 24.03) on the same one-GPU jobs (lambda_pytorch_train_v1_2024.csv): ResNet-50
    fp16 at batch 1280 2,616 img/s against 2,787 (median of 2,778-2,793), WaveGlow fp32 1.26x,
    NCF 1.34-1.36x. Its 61 rows leave, counted; the vendors' rows stay."""
    import statistics

    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    reason = "H100 SXM5 on CUDA 11.8 (Lambda, 2023) ran 3-36% below five 2024 H100 SXM5 servers"
    assert skipped[reason] == 61
    assert not [r for r in rows if r.lambda_gpu == "H100 80GB SXM5"]
    vendors = [r.measured_units_per_s for r in rows if r.gpu.name == "H100 SXM5 80GB"
               and r.num_gpus == 1 and r.lambda_model == "resnet50"
               and r.workload.precision.value == "fp16"]  # fmt: skip
    assert len(vendors) == 5 and statistics.median(vendors) == 2_787.0
    own = _published("v1", "resnet50", "fp16", "H100 80GB SXM5", "1280")
    assert own == 2_616.0
    assert statistics.median(vendors) / own == pytest.approx(1.07, abs=0.005)


def test_v0_tacotron2_fp32_before_ampere_is_the_ngc_20_01_stack() -> None:
    """The Quadro RTX 8000 ran Tacotron2 fp32 at 10,016 mel frames/s (batch 168, v0, NGC 20.01)
    and 17,717 (batch 136, v1): 79.9 against 45.2 ms a sample, where its GNMT fp32 moved 0.99x
    and its WaveGlow fp32 0.96x (lambda_pytorch_train_v{0_2022,1_2024}.csv). The 32 v0 Tacotron2
    full-precision rows on Pascal, Turing and Volta leave, counted; Ampere's stay."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, skipped = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    reason = "tacotron2 fp32 on v0 Turing/Volta/Pascal ran NGC 20.01 at 0.57 of its v1 rate"
    assert skipped[reason] == 32
    taco = {(r.version, r.gpu.architecture) for r in rows if r.lambda_model == "tacotron2"}
    assert ("v1", "Turing") in taco and ("v0", "Ampere") in taco
    assert not {("v0", "Turing"), ("v0", "Volta"), ("v0", "Pascal")} & taco
    v1 = [r for r in rows if r.gpu.name == "Quadro RTX 8000" and r.num_gpus == 1
          and r.lambda_model == "tacotron2" and r.workload.batch_size == 136]  # fmt: skip
    assert [r.measured_units_per_s for r in v1] == [17_717.0]
    v0 = _published("v0", "tacotron2", "fp32", "RTX 8000", "168")
    assert v0 == 10_016.0  # 800 frames a sample: 79.9 against 45.2 ms
    assert v0 / 17_717 == pytest.approx(0.57, abs=0.005)
