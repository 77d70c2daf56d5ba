"""Shared by scripts/calibrate.py and bench/bench_accuracy.py: read the calibration CSVs and map
Lambda's benchmark rows (model names, units, GPU names) onto dlrig's zoo and catalog."""

from __future__ import annotations

import csv
import dataclasses
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from dlrig.catalog.loader import Catalog
from dlrig.catalog.schema import GPU, Platform
from dlrig.enums import CoolerType, FormFactor, Precision
from dlrig.errors import UnknownPartError
from dlrig.machine.model import Build, GPUGroup, Measured
from dlrig.workloads import Workload, resolve_workload

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO / "data" / "calibration"
LAMBDA_FILES = ("lambda_pytorch_train_v0_2022.csv", "lambda_pytorch_train_v1_2024.csv")

# Vendor/cloud system prefixes and GPU counts in Lambda's `gpu` labels ("Dell 8x H100 80GB SXM5").
_LABEL_PREFIX = re.compile(
    r"^(?:1CC|DellTexas|Dell|RAIDZ1|SMC|LambdaCloud|Lambda Cloud —|Linode Cloud —|LambdaBM|ASUS"
    r"|LENNOVO)\s*"
)
_LABEL_COUNT = re.compile(r"^\d+x\s*")

# Lambda model name -> (zoo workload, throughput units per sample, document overrides).
# Lambda's NCF is its DLE fork's, which trains "fp16" with apex amp O2 and apex's
# DistributedDataParallel (LambdaLabsML/DeepLearningExamples@b5e1251 PyTorch/Recommendation/
# NCF/ncf.py: `amp.initialize(model, optimizer, opt_level="O2")`, then `DDP(model)`), so its
# all-reduce moves the 16-bit model's gradients; the zoo's NCF is NVIDIA's, under autocast.
# Units per sample: workloads_reference.csv's forward_gflops_per_sample /
# forward_gflops_per_throughput_unit (GNMT counts 100 source+target tokens per sentence pair,
# Tacotron2 800 mel frames, WaveGlow 8000 audio samples, Transformer-XL target tokens); NCF
# counts more samples than it trains (ncf_counted_per_trained).
# Tacotron2's 800 is the padded frames its decoder runs, not what Lambda's logs count: DLE's
# train.py adds torch.sum(output_lengths) a batch, and over every Tacotron2 FP32 log of
# lambdal/deeplearning-benchmark@aa5addb6 (1,726 iterations) that is 564.6 frames a sample.
# The fitted per-kernel costs absorb the 1.42x: read as 565, the fit moves gpu_kernel_s 36 ->
# 26 us and host_kernel_s 40 -> 30 us, and Lambda's leave-one-source-out rows beyond 25% go
# 392 -> 536 (2026-12-07; the 2022 Mask R-CNN and GNMT rows turn fast), so 800 stays until
# the per-kernel cost is modelled by software era (bench/provenance.toml).
LAMBDA_MODELS: dict[str, tuple[str, float, dict[str, object]]] = {
    "resnet50": ("resnet50", 1.0, {}),
    "ssd": ("ssd300", 1.0, {}),
    "maskrcnn": ("maskrcnn", 1.0, {}),
    "gnmt": ("gnmt", 100.0, {}),
    "tacotron2": ("tacotron2", 800.0, {}),
    "waveglow": ("waveglow", 8000.0, {}),
    "bert_base_squad": ("bert-base-squad", 1.0, {}),
    "bert_large_squad": ("bert-large-squad", 1.0, {}),
    "transformerxlbase": ("transformer-xl-base", 192.0, {}),
    # Lambda runs Transformer-XL large at tgt_len = mem_len = 256 (the zoo preset: DLE's 384).
    "transformerxllarge": ("transformer-xl-large", 256.0, {"seq_len": 256}),
    "ncf": ("ncf", 1.0, {"gradient_precision": "16bit"}),
}

# How each Lambda job steps its optimizer (dlrig.workloads.model.OptimizerStep), from the code it
# ran (LambdaLabsML/DeepLearningExamples@lambda/benchmark, c1781a37) and the container its log
# names. DLE's BERT SQuAD fine-tuning takes apex FusedAdam with --fp16 (fused) and otherwise
# BertAdam: a Python loop over the tensors stepping each one op by op with decoupled weight
# decay, as AdamW, after `clip_grad_norm_(p, ...)` on that tensor alone (PyTorch/LanguageModeling/
# BERT/run_squad.py `optimizer = BertAdam(...)` outside `if args.fp16`; optimization.py
# BertAdam.step; its separate learning-rate product and negation, ~4 element moves and 2
# kernels a tensor more, are left out). Before PyTorch 1.10 that clip waits on the GPU
# (compute.CLIP_OPS_PER_TENSOR): Lambda's v0 logs name NGC builds 9332039, 16972326 and 21060478
# (2020-03 to 2021-12, PyTorch 1.4 to 1.9), except the RTX A4500 and A5500 runs of 2022-06, build
# 25165078 (PyTorch 1.12, python3.8: results/A4500/PyTorch_bert_large_squad_FP32/
# 30-06-2022_20-27-53.txt); v1 ran PyTorch 2 (NGC 23-24).
BERT_SQUAD = {"bert_base_squad", "bert_large_squad"}
LAMBDA_V0_PYTORCH_1_12 = {"RTX A4500", "RTX A5500"}


# WaveGlow trains with `torch.optim.Adam(model.parameters(), ...)` (PyTorch/SpeechSynthesis/
# Tacotron2/train.py): a per-tensor loop on the PyTorch 1 of Lambda's v0 containers, the foreach
# path on v1's PyTorch 2 (its default on CUDA), after a `clip_grad_norm_` over every tensor
# at once. Tacotron2 runs the same code over 28 M parameters, whose step is a rounding error
# beside its recurrent decoder (left out).
def lambda_optimizer(
    lambda_model: str, precision: Precision, version: str, label: str
) -> dict[str, str]:
    """The workload fields of the optimizer step this Lambda job ran (BERT_SQUAD's BertAdam,
    WaveGlow's torch.optim.Adam), empty where the zoo's fused step is what ran."""
    if lambda_model == "waveglow":
        return {"optimizer_step": "per_tensor" if version == "v0" else "foreach"}
    if lambda_model not in BERT_SQUAD or precision is not Precision.TF32:
        return {}
    synced = version == "v0" and gpu_label(label) not in LAMBDA_V0_PYTORCH_1_12
    return {
        "optimizer": "adamw",
        "optimizer_step": "per_tensor_synced" if synced else "per_tensor",
    }


# What the transformer code of each Lambda run ran beside the zoo's (today's DLE code on PyTorch
# 1.12 or later). v0 ran the DeepLearningExamples copy inside each NGC container
# (lambdal/deeplearning-benchmark pytorch/scripts/config_v0/*.sh: "examples/bert"; every v0 BERT
# log lists that directory without DLE's `distillation/`, added by a9e2c1d5 on 2022-03-02, e.g.
# results/A100_80GB_SXM4/PyTorch_bert_large_squad_FP16/*.txt, build 21060478) on PyTorch 1.4-1.9
# (sys_pytorch.txt), except the RTX A4500/A5500 runs' 1.12 (LAMBDA_V0_PYTORCH_1_12); v1 ran
# LambdaLabsML/DeepLearningExamples@c1781a37 (lambda/benchmark, BERT as of a9e2c1d5 plus
# bca2927e) on NGC 22.09-24.03 (PyTorch 1.13-2.3), its logs listing `distillation/`.
# - Before PyTorch 1.12, F.linear on a 3-D activation ran the matmul and then `output += bias`
#   in a kernel of its own (pytorch/pytorch#39661; fused into addmm by #72728): every biased
#   linear of BERT and of Transformer-XL's feed-forward on v0's PyTorch 1.4-1.9.
#   DLE's BERT before a9e2c1d5 also adds the intermediate layer's bias apart from its matmul
#   on any PyTorch (modeling.py LinearActivation: `F.linear(input, self.weight, None)`, then
#   bias_gelu_training's `bias + y`), which the 1.12 rows leave uncounted.
# - BERT before a9e2c1d5 copies Q, K and V head-major (`permute` then `torch.matmul`); since
#   then it runs sequence-first and bmm reads them in place (the zoo's `eager_strided`).
# - Every v0 Pascal, Turing and Volta system ran NGC 20.01 on CUDA 10.2 (cuBLAS 10), every v0
#   Ampere one CUDA 11.1-11.4 and every v1 system CUDA 11.8 or later (the `CUDA Version` line of
#   each run's sys_pytorch.txt, 2026-12-07): a 16-bit GEMM with a dimension not a multiple of 8
#   runs on the CUDA cores there (`unaligned_tensor_cores: false`). Only Transformer-XL's
#   267,735-word head has one among Lambda's models, and its v0 fp16 rows on those systems ran
#   at about half the rate the same cards reach in v1 (CUDA 11.8), where fp32 moved little:
#   Quadro RTX 8000 base fp16 9,290 -> 18,223 tok/s and large 4,109 -> 7,853, against fp32
#   6,124 -> 6,623 and 2,158 -> 2,515 (results/QuadroRTX8000{,_v1}/PyTorch_transformerxl*).
#   These rows were left out as a stack dlrig did not model until 2026-12-07.
LAMBDA_V0_CUDA10_ARCHITECTURES = {"Pascal", "Turing", "Volta"}


def lambda_code(lambda_model: str, version: str, label: str, architecture: str) -> dict[str, bool]:
    """Workload fields where the code a Lambda row ran differs from the zoo's (the note
    above): empty for v1."""
    if version != "v0":
        return {}
    fields = {}
    if architecture in LAMBDA_V0_CUDA10_ARCHITECTURES:
        fields["unaligned_tensor_cores"] = False
    if lambda_model in BERT_SQUAD | TRANSFORMER_XL_REPLICAS:
        fields["bias_epilogue"] = gpu_label(label) in LAMBDA_V0_PYTORCH_1_12
    if lambda_model in BERT_SQUAD:
        fields["strided_heads"] = False
    return fields


# Lambda's Tacotron2/WaveGlow "fp16" runs ignore their AMP flag (workloads_reference.csv).
NOT_MIXED_PRECISION = {"tacotron2", "waveglow"}


# Lambda's NCF throughput counts every sample of an epoch, but its processes train whole batches
# only. Both of its NCF codes give each of the n processes 1/n of the epoch's samples, split that
# share into batches of the per-GPU batch and drop the last ("the last batch will almost certainly
# be smaller, drop it"), and log all of the epoch's samples over the epoch's time
# (`epoch_samples / train_time`): v1, LambdaLabsML/DeepLearningExamples@c1781a37 (lambda/benchmark)
# PyTorch/Recommendation/NCF/dataloading.py TrainDataloader.get_epoch_data and ncf.py; v0, whose
# logs name the earlier NVLOG ncf.py with apex O2, NVIDIA/DeepLearningExamples@70c51ad7
# dataloading.py prepare_epoch_train_data and the same count. Lambda runs 2 epochs and reports
# the best (`best_train_throughput`, pytorch/results/*/PyTorch_ncf_*/*.txt @aa5addb6). Where a
# GPU's share is one batch or less, no step trains at all: the 8x A100 80GB SXM4 fp16 run
# (global batch 120,000,000, 15,000,000 a GPU against a 12,413,606-sample share) logged
# 7.0e9 and 1.09e10 samples/s, 253x its 1-GPU rate (results/8xA100_80GB_SXM4/PyTorch_ncf_FP16/
# 26-11-2021_08-13-09.txt). The epoch: ML-20m's 20,000,263 ratings less the one test rating
# held out for each of its 138,493 users (GroupLens, ml-20m README.txt; DLE NCF README, leave-
# one-out test set), each with 4 negatives (the logs' `negative_samples : 4`): 99,308,850,
# which the logs agree with (Dell 8x H100 SXM5 fp32, first epoch: 1.530e8 samples/s x 0.649 s).
NCF_EPOCH_SAMPLES = (20_000_263 - 138_493) * (1 + 4)

# Its epoch is timed with time.time() and no torch.cuda.synchronize() (both codes above), so
# the timer stops when the host has queued the epoch's last step. On PyTorch 1.13 (every v1 run
# of 2022-2023) something in the step waits for the GPU and the timer holds the epoch's work:
# the validation that follows takes 0.03-0.3 s. On PyTorch 2 (the 2024 H100 SXM5 servers of Dell,
# DellTexas, SMC, 1CC and RAIDZ1, NGC 24.03, and Lambda Cloud's 8x H100, 2.1) it does not: on one
# GPU the epoch logs 1.49 s and its validation 0.59 s where Lambda's 2023 H100 SXM5 logged 2.02
# and 0.10 s (the same 2.1 s in all), and on 4 and 8 GPUs the epoch logs 0.004-0.016 s for a
# step of 8-10 million samples a GPU (pytorch/results/*_H100_80GB_SXM5_v1/PyTorch_ncf_*/*.txt
# and sys_pytorch.txt @aa5addb6). Their throughput is of the host's queueing, not of training:
# left out of the cleaned rows. Every row predicts them as they ran (AS_RUN's note): the
# validation, which waits for the GPU, took what the timer missed, about 0.49 s on 1, 2 and 4
# GPUs at 8,000,000 a GPU (fp32 epoch + validation: 1.49 + 0.59, 0.50 + 0.55, 0.010 + 0.52 s;
# the 2023 server's 2.02 + 0.10, 1.02 + 0.05, 0.51 + 0.03) and 0.16 s, its one step, on 8 GPUs
# (0.004-0.006 + 0.178 s against 0.17 + 0.01): the last three steps were still queued.
NCF_UNSYNCED_TIMING = re.compile(r"^(?:1CC|DellTexas|Dell|SMC|RAIDZ1) |^LambdaCloud 8x H100")
NCF_UNSYNCED = "ncf on PyTorch 2 timed before the GPU finished its work (logs)"
NCF_NO_STEP = "ncf epoch share of a GPU is one batch or less: no step trained (DLE drops it)"


def ncf_epoch_steps(batch_per_gpu: int, num_gpus: int) -> int:
    """Steps each of Lambda's NCF processes trains in an epoch: the whole batches of its share
    (the last, partial one dropped); 0 where its share is one batch or less."""
    share = int(NCF_EPOCH_SAMPLES / num_gpus)  # what process 0 gets (dataloading.py)
    return max(math.ceil(share / batch_per_gpu) - 1, 0)


def ncf_counted_per_trained(batch_per_gpu: int, num_gpus: int) -> float | None:
    """Samples Lambda's NCF counts per sample it trains at this per-GPU batch on `num_gpus`
    (NCF_EPOCH_SAMPLES over the whole batches the processes train); None where no step trains."""
    steps = ncf_epoch_steps(batch_per_gpu, num_gpus)
    if steps < 1:
        return None
    return NCF_EPOCH_SAMPLES / (num_gpus * steps * batch_per_gpu)


# Lambda's 2022-2025 BERT SQuAD throughput counts the sequences --max_steps would have trained,
# not those that ran: the LambdaLabsML fork's run_squad.py logs `training_sequences_per_second`
# as train_batch_size x max_steps x world size / time_to_train whenever --max_steps is set, and
# its loop trains until global_step > max_steps (101 steps) or the end of num_train_epochs,
# whichever comes first (LambdaLabsML/DeepLearningExamples@b5e1251, PyTorch/LanguageModeling/
# BERT/run_squad.py, main). Its configs pass 2 epochs and --max_steps 100 (the "2.0" and "100"
# of every bert_*_squad params block in pytorch/scripts/config_v1 and config_v2); SQuAD v1.1
# gives 88,641 training features at 384 tokens and a 128 stride (the logs' `training_features`),
# dealt ceil(88,641 / n) to each of n processes by DistributedSampler. The logs agree: 8x A100
# 80GB SXM4 at 320 a GPU, 59.898 s x 4,273.9 = 256,000 = 100 x 320 x 8 counted where its 2 x 35
# steps trained 177,296; 8x H200 at 592 a GPU, 19 steps an epoch ("Iteration 0/19"), 19,748 a
# second counted over 23.98 s, 2.67x what ran (results/8xA100_80GB_SXM4_v1/ and results_v2/
# ASUS_8xH200_140GB_SXM_lambda-scalar_v2/PyTorch_bert_base_squad_FP16/ @aa5addb6). The 2020-21
# runs (v0) ran the NGC containers' own copies with each system's --max_steps (100 to 10,000 in
# config_v0); those whose logs carry the count (e2e_train_time x training_sequences_per_second
# = max_steps x batch x GPUs within 1%) and whose epochs end first are V0_SQUAD_MAX_STEPS: 8x
# RTX A5500 at 52 a GPU, 131.31 s x 3,168.0 = 416,000 = 1,000 x 52 x 8 counted where 2 x 214
# steps ran. The other v0 rows are taken as read (the NGC 20.01 logs carry no count).
SQUAD_COUNTED_VERSIONS = {"v1", "v2"}
SQUAD_TRAIN_FEATURES = 88_641
SQUAD_EPOCHS = 2
SQUAD_MAX_STEPS = 100
# (Lambda label, GPUs, model, precision label's first 4) -> that run's --max_steps
V0_SQUAD_MAX_STEPS: dict[tuple[str, int, str, str], int] = {
    ("RTX 3090", 4, "bert_base_squad", "fp16"): 1000,
    ("RTX 3090", 8, "bert_base_squad", "fp16"): 1000,
    ("RTX 3090", 8, "bert_base_squad", "fp32"): 1000,
    ("RTX A5000", 4, "bert_base_squad", "fp16"): 1000,
    ("RTX A5500", 4, "bert_base_squad", "fp16"): 1000,
    ("RTX A5500", 8, "bert_base_squad", "fp16"): 1000,
    ("RTX A5500", 8, "bert_base_squad", "fp32"): 1000,
    ("RTX A4000", 8, "bert_large_squad", "fp16"): 5000,
    ("RTX A4500", 8, "bert_large_squad", "fp16"): 5000,
    ("RTX A4000", 16, "bert_large_squad", "fp16"): 5000,
}


def squad_max_steps(rec: dict[str, str], version: str, num_gpus: int) -> int | None:
    """The --max_steps a SQuAD row's log counts by (the note above); None where the row is taken
    as read (another model, or a v0 run whose log carries no count)."""
    if rec["model"] not in BERT_SQUAD:
        return None
    if version in SQUAD_COUNTED_VERSIONS:
        return SQUAD_MAX_STEPS
    return V0_SQUAD_MAX_STEPS.get(
        (gpu_label(rec["gpu"]), num_gpus, rec["model"], rec["precision"][:4])
    )


def squad_counted_per_trained(
    batch_per_gpu: int, num_gpus: int, max_steps: int = SQUAD_MAX_STEPS
) -> float:
    """Sequences Lambda's SQuAD rows count per sequence trained at this per-GPU batch on
    `num_gpus` under `max_steps`: that many whole batches a process over what its loop trains
    (the note above), each epoch's last batch the rest of its share."""
    share = math.ceil(SQUAD_TRAIN_FEATURES / num_gpus)
    trained, steps = 0, 0
    for _ in range(SQUAD_EPOCHS):
        for start in range(0, share, batch_per_gpu):
            if steps > max_steps:
                break
            trained += min(batch_per_gpu, share - start)
            steps += 1
    return max_steps * batch_per_gpu / trained


# Rows whose precision label is not what ran, left out (and counted) with the evidence:
# Lambda's v1 NCF "fp16" runs on 80 GB cards ran without mixed precision. Their config
# (lambdal/deeplearning-benchmark pytorch/scripts/config_v1/config_pytorch_80GB.sh, commit
# 357c49a7, read 2026-12-03; the 2x/4x/8x 80GB configs source it) gives
# PyTorch_ncf_FP16_PARAMS no --amp, where config_pytorch_48GB.sh has it, and DLE ncf.py only
# autocasts with --amp. The throughputs agree: fp16 over fp32 is 1.05-1.07x on A100 80GB and
# H100 SXM5, against 1.5-1.96x on A100 40GB, RTX A6000 and RTX 6000 Ada in the same run.
def _mislabeled(rec: dict[str, str]) -> str | None:
    if (
        rec["model"] == "ncf"
        and rec["precision"].startswith("fp16")
        and (rec.get("lambda_version") or "") == "v1"
        and "80GB" in rec["gpu"]
    ):
        return "mislabeled ncf fp16 ran without --amp on 80GB cards (v1 config_pytorch_80GB.sh)"
    if rec["model"] in TRANSFORMER_XL_REPLICAS and rec["num_gpus"] != "1":
        return "transformer-xl multi-GPU ran without --multi_gpu ddp (replicas, no all-reduce)"
    return None


# Lambda's multi-GPU Transformer-XL rows are not data-parallel training: DLE's train.py wraps
# the model in DistributedDataParallel only under `--multi_gpu ddp` (else `para_model = model`:
# NVIDIA/DeepLearningExamples PyTorch/LanguageModeling/Transformer-XL/pytorch/train.py), Lambda's
# configs never pass it, and every one of its Transformer-XL logs records `multi_gpu=None`
# (lambdal/deeplearning-benchmark pytorch/results/*/PyTorch_transformerxl*/, v0 and v1, read
# 2026-12-03). Each GPU trains its own copy with no gradient exchange, which is why they scale
# 7.5x on 8 RTX 2080 Ti without peer-to-peer while BERT and GNMT lose 30-45% there.
TRANSFORMER_XL_REPLICAS = {"transformerxlbase", "transformerxllarge"}


# Lambda's v0 Tacotron2 and WaveGlow "fp16" runs on its 2020 systems did run mixed precision,
# unlike the rest (NOT_MIXED_PRECISION): their logs record `"amp_run": true` (or `amp : True`)
# and apex's "Selected optimization level O1" on every GTX 1080 Ti, Turing, V100, RTX 3070 and
# RTX 3080 system, single and multi-GPU, and `amp : False` on the RTX 3090, A100, RTX A-series,
# RTX 3080 Max-Q and every v1 system (lambdal/deeplearning-benchmark pytorch/results/*/
# PyTorch_{tacotron2,waveglow}_FP16/*.txt @aa5addb6, read 2026-12-04). The throughputs agree:
# WaveGlow fp16 over fp32 is 2.0-2.07x on V100 32GB, Quadro RTX 8000/6000/5000 and TITAN RTX,
# which full precision cannot reach on a card without TF32; Tacotron2's fp16 iteration on the
# Quadro RTX 8000 (batch 336, 6.05 s) is 3x faster per sample than its fp32 one (168, 9.3 s).
AMP_RAN_ARCHITECTURES = {"Pascal", "Turing", "Volta"}
AMP_RAN_GPUS = {"GeForce RTX 3070", "GeForce RTX 3080"}
APEX_O1_RAN = "mislabeled tacotron2/waveglow fp16 ran apex amp O1 on v0 2020 systems (logs)"

# Which software each of those runs had (their sys_pytorch.txt, same commit): the RTX 3070 and
# 3080 systems NGC 20.10 (PyTorch 1.7.0a0+7036e91, CUDA 11.1, cuDNN 8), every Pascal, Turing
# and Volta one NGC 20.01 (PyTorch 1.4.0a0+a5b4d78, CUDA 10.2, cuDNN 7.6.5). Both count the
# unit dlrig reads: WaveGlow's `train_iter_items/sec` is batch x `segment_length` (8000 in
# every run's args) over the iteration (Quadro RTX 8000, batch 52: 416,000 samples in 4.47 s;
# RTX 3080, batch 4: 32,000 in 0.47 s), as in v1 (Quadro RTX 8000, batch 32: 256,000 in
# 5.43 s); and O1 kept fp32 weights (`cast_model_type : None`, `master_weights : None`).
# On NGC 20.10 they ran as dlrig's fp16 predicts (leave-one-source-out: Tacotron2 -0.16 to
# +0.24, WaveGlow +0.02 and +0.11). On NGC 20.01 they ran at ~0.55 of it, by two separate
# causes the runs' nvidia-smi logs (*_monitor.csv, GPU busy share each second) tell apart:
# Tacotron2 waited on the host (busy a median 46% on the RTX 2080 Ti and 54% on the RTX 2080
# Max-Q, against 76% and 92% in fp32), WaveGlow on its kernels (76% on the RTX 2080 Ti and 94%
# on the V100, as fp32's 78% and 97%). NVIDIA's own machine shows the same gap on that era's
# container: DeepLearningExamples' DGX-1 (V100 16GB), NGC 19.12 as README @77a1bb91 labels it
# (its WaveGlow figure first appeared under 19.05, @979e2918), apex O1, WaveGlow 81,503
# samples/s at batch 10 and Tacotron2 15,313 mel frames/s at batch 104, against dlrig's
# 145,996 and 26,642 (+0.79, +0.74), where its FP32 runs (36,671 at 4, 9,674 at 48) come out
# +0.11 and +0.12 (PyTorch/SpeechSynthesis/Tacotron2/README.md @77a1bb91, training
# performance). A stack dlrig does not model, as the same container's Tacotron2 fp32 rows: the
# NGC 20.10 rows are predicted as the fp16 they ran; the NGC 20.01 ones keep
# lambda_precision's full precision, whose prediction their step happened to
# run near (as fp16 too, the 61 rows and the fits that take them in raised the Lambda
# leave-one-source-out all-rows p90 from 32.5% to 40.2%: 2026-12-07).
# O1 itself is not the gap: what it adds to a WaveGlow step is what dlrig's fp16 step already
# counts for autocast over fp32 weights (compute.weight_cast_bytes). Apex caches the cast of a
# Parameter for the iteration and casts anything else at each call (apex/amp/utils.py
# should_cache, cached_cast, NVIDIA/apex@01802f62); WaveGlow's weight-normed conv weights are
# computed tensors, cast at their one call a forward, as autocast casts them. Its convolutions
# are on O1's fp16 list (lists/functional_overrides.py @47e9cae5) and WN's adds and gates see
# fp16 on both sides, so beyond the weights it casts only the 2-8-channel audio halves of each
# flow (exp on the fp32 list, mul, add and cat promoting: lists/torch_overrides.py @03421e87).
# That is 268,294,760 weights x 12 B = 3.2 GB a step (about 4 ms on a V100 against the logged
# 2.39 s at batch 30) and some 700 cast kernels a forward (2-7% of these steps at the fitted
# gpu_kernel_s); its Python wrappers run on a host these kernel-bound steps do not wait on.
# Modelled as run, then, an NGC 20.01 WaveGlow row is the fp16 prediction, +0.48 to +0.90 on one
# GPU. The container is what differs: NVIDIA's DGX-1 ran the same amp.initialize(opt_level="O1")
# loop (train.py @979e2918 and @f0c8bc57) at 81,503 samples/s at batch 10 on cuDNN 7's NGC 19.05
# (README.md @979e2918, the figures later READMEs keep under 19.06 and 19.12) and at 105,873 on
# NGC 20.06 (@f0c8bc57): 1.30x, where FP32 went 36,671 -> 33,761. And the logs time
# the halves of Lambda's 20.01 steps (train_iter_start, train_iteration_loss, train_iter_stop):
# on the V100 the forward took 21 ms a sample in fp16 (batch 30) against 51 in fp32 (batch 15),
# the backward with the optimizer 58 against 114, where the 3080's 20.10 run (0.126 and 0.343 s
# at batch 4) is a step dlrig predicts within 10%
# (results/{V100,3080}/PyTorch_waveglow_FP{16,32}/*.txt @aa5addb6).
APEX_O1_CURRENT_STACK_GPUS = AMP_RAN_GPUS


# The same v0 stack (NGC 20.01: PyTorch 1.4.0a0+a5b4d78, cuDNN 7.6.5 in every v0 Turing and
# Volta system's sys_pytorch.txt) ran SSD300 in fp32 about 1.3-1.4x faster than the cuDNN 8
# containers on the same cards, where mixed precision did not move. NVIDIA measured it on one
# DGX-1: V100 SXM2 16GB, batch 32, fp32 133.67 img/s in NGC 19.08 and 108.27 in NGC 21.05
# (mixed 215.30 and 212.95; NVIDIA/DeepLearningExamples PyTorch/Detection/SSD/README.md at
# 4cce4d88 and 0b3f770b), 107.22 in 22.10 (bench/data/external_training.csv). Lambda's Quadro
# RTX 8000 went from 116.8 (v0, batch 158) to 81.4 img/s (v1, batch 144; fp16 180 -> 182).
# dlrig predicts the current cuDNN; the cuDNN 7 fp32 rows are that superseded stack.
CUDNN7_FP32_SSD_ARCHITECTURES = {"Turing", "Volta"}
CUDNN7_FP32_SSD = "ssd fp32 on v0 Turing/Volta ran cuDNN 7.6.5 at 1.3-1.4x its cuDNN 8 rate"
# How much faster that stack ran the job than the cuDNN 8 ones, as NVIDIA measured it on its
# DGX-1 (the figures above): NGC 19.08 (cuDNN 7.6) over NGC 21.05 (cuDNN 8.2), both NCHW,
# 133.67 / 108.27 img/s on one GPU (532.05 / 425.07 on four, 1,060.33 / 846.58 on eight:
# 1.25). Not 22.10's 107.22: that release made channels_last its default, which Lambda's 2024
# code never ran (data/calibration/README.md). `cleaned=False` predicts those rows at this
# speed (LambdaRow.measured_stack_speed): what ran, and how fast that software runs the job,
# both from outside dlrig. NVIDIA's pair is a V100; Lambda's Turing cards ran the same
# container. Chosen with the rows in view (bench/provenance.toml).
CUDNN7_FP32_SSD_SPEED = 133.67 / 108.27


# Lambda's own H100 SXM5 server ran in February 2023 on the first CUDA with Hopper kernels
# (sys_pytorch.txt: CUDA 11.8, driver 525.85, PyTorch 1.13); five vendors' H100 SXM5 servers
# ran the same jobs at the same batches in 2024 on NGC 24.03 (CUDA 12.4, PyTorch 2.3). They
# agree with one another within 3% on 11 of the 16 one-GPU jobs and within 6% on 14 (Tacotron2
# spreads 23-32%), and their median lies 3-36% above the 2023 server on every job: ResNet-50
# 1.07-1.08x, SSD 1.11-1.12x, BERT 1.03-1.07x, GNMT 1.03-1.13x, WaveGlow 1.19-1.26x; NCF's
# 1.34-1.36x is its timer stopping early on PyTorch 2 (NCF_UNSYNCED_TIMING), not a faster step
# (lambda_pytorch_train_v1_2024.csv). dlrig predicts current software; the
# 2023 server is that stack, superseded on the same hardware: its rows are left out, counted.
EARLY_HOPPER_STACK_LABELS = {"H100 80GB SXM5"}


# The same 2020 stack ran Tacotron2 in full precision 1.77x slower than Lambda's 2022 one on
# the same card: the Quadro RTX 8000 made 10,016 mel frames/s at batch 168 (v0, NGC 20.01)
# and 17,717 at batch 136 (v1), 79.9 against 45.2 ms a sample, where its other full-precision
# jobs moved 0.91-1.17x (GNMT 0.99x, WaveGlow 0.96x, BERT-large 1.09x; SSD's cuDNN 7 gap
# above aside) (lambda_pytorch_train_v{0_2022,1_2024}.csv). Its small-batch runs (RTX 2080
# Ti at 36, the Max-Q laptops at 24) hide it under the host's launch floor; the large-batch
# ones (TITAN RTX, Quadro RTX 5000/6000/8000 at 52-168) measure it. Every v0 Turing, Volta
# and Pascal row of it ran that stack: left out and counted.
SLOW_TACOTRON2_STACK_ARCHITECTURES = {"Pascal", "Turing", "Volta"}


# Lambda's 2021 runs of the RTX A4000, RTX A5000 and A40 (sys_pytorch.txt: PyTorch
# 1.9.0a0+df837d0) ran GNMT and WaveGlow in full precision at 0.41-0.71 of the rate of the
# card a step up on the 2020 and 2022 stacks (PyTorch 1.7 and 1.10), far below what the
# hardware differs by, while their mixed-precision GNMT and their convnets kept to it
# (single-GPU rows of lambda_pytorch_train_v0_2022.csv, same batch on both cards):
#   A5000 / A5500: GNMT fp32 27,205 / 47,266 tok/s (1.74x), fp16 1.12x; WaveGlow fp32 2.34x;
#                  ResNet-50 fp16 1.05x, SSD fp16 1.07x
#   A4000 / A4500: GNMT fp32 2.05x, fp16 1.30x; WaveGlow fp32 2.43x; ResNet-50 fp16 1.34x
#   A40 / A6000:   GNMT fp32 1.57x, fp16 1.04x; WaveGlow fp32 1.41x; ResNet-50 fp16 1.19x
# The A100s on the same stack ran GNMT at their 2024 rate (TF32 124,186 against 129,911 tok/s
# on the A100 80GB SXM4). A measurement of that stack on those cards, superseded on the same
# tier of hardware: left out and counted.
SLOW_FP32_STACK_RUNS = {
    (model, gpu) for model in ("gnmt", "waveglow") for gpu in ("RTX A4000", "RTX A5000", "RTX A40")
}


# Lambda's 2020 "fp16" BERT-large runs on 2, 4 and 8 RTX 2080 Ti (bridged or not, both runs of
# each) started one process without torch.distributed.launch and without --fp16: every log
# reads "python run_squad.py ... --train_batch_size=2" and "n_gpu: 1, distributed training:
# False, 16-bits training: False", and the throughput stays at 6.05-6.41 sequences/s whatever
# the GPU count (results/{2,4,8}x2080Ti{,NVlink}_trt{,2}/PyTorch_bert_large_squad_FP16/*.txt,
# lambdal/deeplearning-benchmark@aa5addb6, read 2026-12-04). One GPU in fp32, labeled otherwise.
SINGLE_PROCESS_RUNS = {
    ("bert_large_squad", "fp16", "RTX 2080Ti"),
    ("bert_large_squad", "fp16", "RTX 2080Ti NVLink"),
}


# Lambda v0 runs that crashed: their logs end in "RuntimeError: CUDA out of memory" a few
# iterations in, and the throughput Lambda tabulated averages those iterations, the first
# (cuDNN's autotuning, 26.4 s on the RTX A4000 against ~2 s a step later) among them. WaveGlow
# "fp16" at batch 10 on 1-16 RTX A4000 and on the RTX 3080 Max-Q (one iteration each: 3,029
# samples/s on one A4000 against 24,262 at batch 5 in fp32), and at batch 32 on 1, 2 and 4
# RTX A40 (19, 9 and 4 iterations). Found by scanning every pytorch/results/*/*.txt for the
# error and matching the throughput it logged (lambdal/deeplearning-benchmark@aa5addb6, e.g.
# results/A4000/PyTorch_waveglow_FP16/26-06-2021_15-54-57.txt, read 2026-12-04).
CRASHED_RUNS = {
    ("waveglow", "fp16", "RTX A4000", "10"),
    ("waveglow", "fp16", "RTX 3080 Max-Q", "10"),
    ("waveglow", "fp16", "RTX A40", "32"),
}

# Rows whose batch Lambda's table gets wrong or leaves blank, taken from the logs of the runs
# whose throughput it gives (lambdal/deeplearning-benchmark@aa5addb6, read 2026-12-04):
# - Tacotron2 on the RTX 3080 Max-Q is tabulated at batch 2; its logs run `batch_size : 48`
#   ("fp16") and 52 ("fp32") at the 9,254 and 9,486 mel frames/s the table gives
#   (results/3080Max-Q/PyTorch_tacotron2_FP16/20-05-2021_06-19-51.txt and the three FP32 runs
#   it averages).
# - The v0 RTX 3090's single-GPU rows have no batch; each throughput is the mean of the two
#   runs in results/3090/PyTorch_<model>_<precision>/ (ResNet-50 "fp16": 796.34 and 806.99
#   img/s at `batch_size : 448`, tabulated 801), which ran the batches below. WaveGlow fp32
#   averages a batch-10 and a batch-8 run, so it stays out.
BATCH_FROM_LOGS = {
    ("tacotron2", "fp16", "RTX 3080 Max-Q", "2"): "48",
    ("tacotron2", "fp32", "RTX 3080 Max-Q", "2"): "52",
    **{
        (model, precision, "RTX 3090", ""): batch
        for model, precision, batch in (
            ("resnet50", "fp16", "448"),
            ("resnet50", "fp32", "224"),
            ("ssd", "fp16", "140"),
            ("ssd", "fp32", "80"),
            ("maskrcnn", "fp16", "16"),
            ("maskrcnn", "fp32", "12"),
            ("gnmt", "fp16", "464"),
            ("gnmt", "fp32", "288"),
            ("ncf", "fp16", "4278184"),
            ("ncf", "fp32", "2516582"),
            ("bert_base_squad", "fp16", "52"),
            ("bert_base_squad", "fp32", "26"),
            ("bert_large_squad", "fp16", "16"),
            ("bert_large_squad", "fp32", "8"),
            ("transformerxlbase", "fp16", "24"),
            ("transformerxlbase", "fp32", "14"),
            ("transformerxllarge", "fp16", "8"),
            ("transformerxllarge", "fp32", "4"),
            ("tacotron2", "fp16", "80"),
            ("tacotron2", "fp32", "80"),
            ("waveglow", "fp16", "12"),
        )
    },
}


def apex_o1_as_run(gpu: GPU) -> tuple[Precision | None, int | None, bool] | None:
    """What an apex amp O1 Tacotron2/WaveGlow row (APEX_O1_RAN) is predicted as with every row
    put back: the fp16 it ran on NGC 20.10 (APEX_O1_CURRENT_STACK_GPUS); None on NGC 20.01,
    whose mixed precision dlrig does not model (the note above)."""
    return (Precision.FP16, None, False) if gpu.name in APEX_O1_CURRENT_STACK_GPUS else None


def _run_key(rec: dict[str, str]) -> tuple[str, str, str, str]:
    return (rec["model"], rec["precision"][:4], gpu_label(rec["gpu"]), rec["batch_size_per_gpu"])


def _mislabeled_for(rec: dict[str, str], gpu: GPU, version: str) -> str | None:
    if (
        rec["model"] in NOT_MIXED_PRECISION
        and rec["precision"].startswith("fp16")
        and version == "v0"
        and (gpu.architecture in AMP_RAN_ARCHITECTURES or gpu.name in AMP_RAN_GPUS)
    ):
        return APEX_O1_RAN
    if (
        (rec["model"], rec["precision"][:4], gpu_label(rec["gpu"])) in SINGLE_PROCESS_RUNS
        and rec["num_gpus"] != "1"
        and version == "v0"
    ):
        return "bert-large fp16 on 2-8 RTX 2080 Ti ran one fp32 process (logs)"
    if rec["model"] == "ncf" and version == "v1" and NCF_UNSYNCED_TIMING.match(rec["gpu"].strip()):
        return NCF_UNSYNCED
    if version == "v1" and rec["gpu"].strip() in EARLY_HOPPER_STACK_LABELS:
        return "H100 SXM5 on CUDA 11.8 (Lambda, 2023) ran 3-36% below five 2024 H100 SXM5 servers"
    if (
        rec["model"] == "tacotron2"
        and lambda_precision(rec["model"], rec["precision"]) is Precision.TF32
        and version == "v0"
        and gpu.architecture in SLOW_TACOTRON2_STACK_ARCHITECTURES
    ):
        return "tacotron2 fp32 on v0 Turing/Volta/Pascal ran NGC 20.01 at 0.57 of its v1 rate"
    if (
        (rec["model"], gpu_label(rec["gpu"])) in SLOW_FP32_STACK_RUNS
        and lambda_precision(rec["model"], rec["precision"]) is Precision.TF32
        and version == "v0"
    ):
        return (
            "gnmt/waveglow fp32 on v0 RTX A4000/A5000/A40 ran PyTorch 1.9 at 0.41-0.71 of its tier"
        )
    if (
        rec["model"] == "ssd"
        and rec["precision"].startswith("fp32")
        and version == "v0"
        and gpu.architecture in CUDNN7_FP32_SSD_ARCHITECTURES
    ):
        return CUDNN7_FP32_SSD
    return None


# What the logs say ran, for the rows they show mislabeled (the comments above give each log):
# `cleaned=False` puts such a row back predicted as that job, not as its label reads; apex amp
# O1's Tacotron2/WaveGlow rows only where they ran the software dlrig models (apex_o1_as_run).
# NCF's epochs on PyTorch 2 (NCF_UNSYNCED) are predicted as their timer read them: the host's
# clock when it had queued the epoch's last step (dlrig.model.launch_queue), which is the GPU's
# work less the steps still queued where the epoch outlasts the launch queue (one GPU: 12 steps
# at 8,000,000, 3 of them queued) and the host's launching alone where the queue holds it all
# (4 and 8 GPUs: 3 steps and 1). LambdaRow.unsynced_epoch_steps carries the epoch's steps.
# reason -> (precision as run, GPUs that trained, each GPU its own replica)
AS_RUN: dict[str, tuple[Precision | None, int | None, bool]] = {
    "transformer-xl multi-GPU ran without --multi_gpu ddp (replicas, no all-reduce)": (
        None,
        None,
        True,
    ),
    "mislabeled ncf fp16 ran without --amp on 80GB cards (v1 config_pytorch_80GB.sh)": (
        Precision.TF32,
        None,
        False,
    ),
    "bert-large fp16 on 2-8 RTX 2080 Ti ran one fp32 process (logs)": (Precision.TF32, 1, False),
}


# Lambda GPU label -> catalog name (None: no catalog entry; the row is left out and listed).
# "V100 32GB" is the SXM2 module: every one of its 1-8 GPU runs logs `Tesla_V100-SXM2-32GB` on
# a Supermicro X11DGO-T, the board of Supermicro's 8-way NVLink V100 SXM2 servers
# (lambdal/deeplearning-benchmark pytorch/results/{,2x,4x,8x}V100/sys_pytorch.txt @aa5addb6).
LAMBDA_GPUS: dict[str, str] = {
    "V100 32GB": "Tesla V100 SXM2 32GB",
    "RTX 8000": "Quadro RTX 8000",
    "RTX 6000": "Quadro RTX 6000",
    "RTX 5000": "Quadro RTX 5000",
    "Titan RTX": "NVIDIA TITAN RTX",
    "RTX 3090": "GeForce RTX 3090",
    "RTX 3080": "GeForce RTX 3080",
    "RTX 3070": "GeForce RTX 3070",
    "RTX 2080Ti": "GeForce RTX 2080 Ti",
    "GTX 1080Ti": "GeForce GTX 1080 Ti",
    "A100 40GB PCIe": "A100 PCIe 40GB",
    "A100 80GB PCIe": "A100 PCIe 80GB",
    "A100 40GB SXM4": "A100 SXM4 40GB",
    "A100 80GB SXM4": "A100 SXM4 80GB",
    "RTX A6000": "NVIDIA RTX A6000",
    # Lambda v1 (2024) labels, after the system prefix and the "Nx " count are stripped.
    "H100 80GB SXM5": "H100 SXM5 80GB",
    "H100 80GB PCIe Gen5": "H100 PCIe 80GB",
    # Lambda's 2025 labels (bench/data/lambda_v2_2025.csv): its "192GB" B200 is the HGX B200
    # module, 180 GB usable (NVIDIA DGX B200 datasheet: 1,440 GB over eight GPUs).
    "H100 80GB PCIe": "H100 PCIe 80GB",
    "B200 192GB SXM5": "B200 SXM 180GB",
    "H200 140GB SXM": "H200 SXM 141GB",
    "RTX 4090": "GeForce RTX 4090",
    "RTX 6000 Ada": "NVIDIA RTX 6000 Ada Generation",
    "A10": "NVIDIA A10",
    "Quadro RTX 8000": "Quadro RTX 8000",
    "V100 16GB": "Tesla V100 SXM2 16GB",
    "RTX 8000 NVLink": "Quadro RTX 8000",
    "RTX 2080Ti NVLink": "GeForce RTX 2080 Ti",
    # AWS instances: p3 = V100 SXM2 16GB, p4d = A100 SXM4 40GB (AWS instance-type pages).
    "p3.8xlarge": "Tesla V100 SXM2 16GB",
    "p3.16xlarge": "Tesla V100 SXM2 16GB",
    "p4d.24xlarge": "A100 SXM4 40GB",
    "LambdaCloud RTX A6000": "NVIDIA RTX A6000",
    "RTX A5500": "NVIDIA RTX A5500",
    "RTX A5000": "NVIDIA RTX A5000",
    "RTX A4500": "NVIDIA RTX A4500",
    "RTX A4000": "NVIDIA RTX A4000",
    "RTX A40": "NVIDIA A40",
    "RTX 3080 Max-Q": "GeForce RTX 3080 Laptop GPU",
    "RTX 2080 SUPER MAX-Q": "GeForce RTX 2080 Super Max-Q",
    "RTX 2080 MAX-Q": "GeForce RTX 2080 Max-Q",
    "RTX 2070 MAX-Q": "GeForce RTX 2070 Max-Q",
}

# The GPU a system's own log names where Lambda's label says another: the 2025 "8x H200 140GB
# SXM" servers of ASUS (board K15PG-D24), Lenovo and Supermicro (H14DSG-O-CPU) report "GPU:
# NVIDIA_H200_NVL", the 600 W PCIe H200 NVL, where Lambda's own ENG04 H200s report
# "NVIDIA_H200" on an HGX baseboard (Supermicro X13DEG-OAD) (lambdal/deeplearning-benchmark
# @aa5addb6 pytorch/results_v2/{ASUS,LENNOVO,SMC}_8xH200_140GB_SXM_lambda-scalar_v2/ and
# LambdaBM_ENG04_*xH200_140GB_SXM_h200_v2/sys_pytorch.txt, read 2026-12-06). Those rows run as
# the logged card, in the PCIe server its form takes (lambda_platform).
LOGGED_GPUS: dict[str, str] = {
    "ASUS 8x H200 140GB SXM": "H200 NVL 141GB",
    "LENNOVO 8x H200 140GB SXM": "H200 NVL 141GB",
    "SMC 8x H200 140GB SXM": "H200 NVL 141GB",
}

# The servers Lambda's multi-GPU rows ran in, as catalog platforms: SXM cards sit on their
# vendor's baseboard (V100 SXM2: NVLink hybrid cube-mesh as in DGX-1 and AWS p3; A100 SXM4:
# NVSwitch as in DGX A100 and AWS p4d; H100 SXM5: NVSwitch HGX boards, Lambda Hyperplane and
# the Dell/Supermicro HGX systems its labels name; B200: the HGX B200 board of DGX B200).
# PCIe cards from 4 up, and every cloud or vendor system, ran in rack servers (Lambda
# Blade/Scalar, cloud instances) whose fan wall cools them; 2 or 3 PCIe cards ran in a desktop
# workstation (Lambda Vector): no platform.
SXM_PLATFORMS = {
    "Tesla V100 SXM2 16GB": "NVIDIA DGX-1 (V100)",
    "Tesla V100 SXM2 32GB": "NVIDIA DGX-1 (V100)",
    "A100 SXM4 40GB": "NVIDIA DGX A100 (320GB)",
    "A100 SXM4 80GB": "NVIDIA DGX A100 (320GB)",
    "H100 SXM5 80GB": "Supermicro SYS-821GE-TNHR",
    "B200 SXM 180GB": "NVIDIA DGX B200",
    # HGX H200 keeps HGX H100's 8-GPU NVSwitch board (900 GB/s NVLink 4 a GPU: NVIDIA's HGX
    # specification lists both at the same NVLink/NVSwitch figures).
    "H200 SXM 141GB": "Supermicro SYS-821GE-TNHR",
}
PCIE_SERVER = "Supermicro SYS-421GE-TNRT"
# Lambda's LambdaCloud and Linode rows ran in KVM virtual machines: their logs name QEMU's CPU
# models ("AMD EPYC Processor (with IBPB)", "Intel Core Processor (Broadwell)", "AMD
# EPYC-Rome Processor") and no motherboard, where Lambda's own servers name theirs (Supermicro
# H12DSG-O-CPU) (lambdal/deeplearning-benchmark@aa5addb6 pytorch/results/LambdaCloud_*/ and
# Linode_*/sys_pytorch.txt, read 2026-12-04). A VM's PCIe GPUs have no peer-to-peer: "within a
# virtual machine, information about the host PCIe bridge is lost" and "the NVIDIA driver does
# not utilize PCIe P2P unless it detects hardware support" (cloud-hypervisor/cloud-hypervisor
# PR #6235), so NCCL stages their collectives through host memory. Their PCIe rows run in the
# PCIe server without it (Platform.peer_to_peer); NVLink between SXM cards needs no PCIe path.
_CLOUD_VM_LABEL = re.compile(r"^(?:LambdaCloud|Linode)")
_SYSTEM_LABEL = re.compile(r"^(?:1CC|DellTexas|Dell|RAIDZ1|SMC|LambdaCloud|Linode|p3\.|p4d\.)")

# Lambda's benchmark script exported NCCL_P2P_DISABLE=1 before every job from 2022-10-16, when
# it added the RTX 4090 (lambdal/deeplearning-benchmark 0a684b62, pytorch/scripts/
# benchmark_pytorch.sh, eight `export NCCL_P2P_DISABLE=1` lines), until 2023-02-06, when it
# commented them out (aad0d1cd). NCCL then "disables the peer to peer (P2P) transport, which
# uses CUDA direct access between GPUs, using NVLink or PCI" (NCCL environment variables
# docs), so every collective crossed host memory, NVLink or not. The multi-GPU v1 runs whose
# logs are dated inside that window (results/<dir>/*/DD-MM-YYYY_*.txt, read 2026-12-04) and
# that scale like it: the 2x/4x/8x A100 80GB SXM4 (2022-11-19; GNMT TF32 keeps 0.60 of its
# 1-GPU rate a GPU on 2 NVSwitch-joined GPUs, where the vendors' 2024 H100 SXM5 servers keep
# 0.98-0.99), 2x A100 80GB PCIe (2022-12-14), 2x RTX A6000 (2022-12-15; GNMT 0.64), LambdaCloud
# 2x/4x/8x V100 (2022-12-16) and 2x RTX 6000 Ada (2023-01-12; GNMT 0.81, where its 4 and 8
# GPUs of 2023-03-22 keep 0.96 and 0.91). The 2x RTX 3090 and 4090 (October 2022) have no P2P
# anyway. The H100 PCIe runs (2022-11-30) show none of it (0.89-1.00 on 2-8 GPUs, BERT-large
# and GNMT among them): they stay as run with P2P.
NCCL_P2P_DISABLED_RUNS: dict[tuple[str, int], str] = {
    **{("A100 80GB SXM4", n): "2022-11-19" for n in (2, 4, 8)},
    ("A100 80GB PCIe", 2): "2022-12-14",
    ("RTX A6000", 2): "2022-12-15",
    ("LambdaCloud 2x V100 16GB", 2): "2022-12-16",
    ("LambdaCloud 4xV100 16GB", 4): "2022-12-16",
    ("LambdaCloud 8xV100 16GB", 8): "2022-12-16",
    ("RTX 6000 Ada", 2): "2023-01-12",
}


def nccl_p2p_disabled(label: str, num_gpus: int, version: str) -> Measured | None:
    """What the run's NCCL_P2P_DISABLE=1 leaves of its peer-to-peer (NCCL_P2P_DISABLED_RUNS):
    none, as a probe finding no peer access records it; None for every other row."""
    taken = NCCL_P2P_DISABLED_RUNS.get((label.strip(), num_gpus)) if version == "v1" else None
    if taken is None:
        return None
    return Measured(taken=taken, source="Lambda's run with NCCL_P2P_DISABLE=1", peer_to_peer=False)


@dataclass(frozen=True)
class LambdaRow:
    """One usable measurement (1 to 16 GPUs of one node), mapped onto dlrig's types."""

    lambda_model: str
    lambda_gpu: str
    gpu: GPU
    workload: Workload
    units_per_sample: float
    measured_units_per_s: float
    num_gpus: int = 1
    version: str = "v0"
    platform: Platform | None = None
    measured: Measured | None = None
    replicas: bool = False
    # steps of an epoch its log timed without waiting for the GPU (NCF_UNSYNCED); 0: a timer
    # that waited, so the throughput is the training's
    unsynced_epoch_steps: int = 0
    # why the cleaning leaves this row out, for a row `cleaned=False` put back; None otherwise
    left_out: str | None = None
    # how much faster the software the row ran runs its job than the software dlrig models, as
    # measured outside Lambda's runs (CUDNN7_FP32_SSD_SPEED); 1.0 where nothing measured it
    measured_stack_speed: float = 1.0

    @property
    def older_stack(self) -> bool:
        """Ran Lambda's 2022 software (NGC PyTorch 20.01/20.10: CUDA 11.0-11.1, cuDNN 8.0), two
        years of cuDNN and cuBLAS older than its 2024 run (NGC 22.09/22.10: CUDA 11.8, cuDNN
        8.6), whose kernels today's releases have overtaken in turn; a row whose software's
        speed on its job was measured (measured_stack_speed) takes that measurement instead."""
        return self.version == "v0" and self.measured_stack_speed == 1.0

    @property
    def measured_samples_per_s(self) -> float:
        return self.measured_units_per_s / self.units_per_sample

    def build(self) -> Build:
        """A build of `num_gpus` such GPUs in the server Lambda ran them in (lambda_platform),
        and nothing else: synthetic data, so only the GPUs (and what joins them and cools
        them) are modeled."""
        return Build(
            name=f"{self.num_gpus}x {self.gpu.name}",
            gpus=(GPUGroup(self.gpu, self.num_gpus),),
            platform=self.platform,
            measured=self.measured,
        )


def gpu_label(label: str) -> str:
    """Lambda's GPU label without its system prefix and GPU count ("Dell 8x H100 80GB SXM5" ->
    "H100 80GB SXM5")."""
    return _LABEL_COUNT.sub("", _LABEL_PREFIX.sub("", label.strip())).strip()


def lambda_precision(lambda_model: str, label: str) -> Precision:
    """Lambda's precision label as run: fp32 means TF32 on Ampere (PyTorch's default then);
    Tacotron2/WaveGlow "fp16" ran in full precision."""
    if label.startswith("fp16") and lambda_model not in NOT_MIXED_PRECISION:
        return Precision.FP16
    return Precision.TF32


# Lambda's 2020 "NVLink" servers (8x RTX 2080 Ti, 8x Quadro RTX 8000, cards bridged in pairs)
# measured the same as the same servers unbridged on 2 GPUs: 18 of the 20 RTX 2080 Ti jobs
# within 2.5% (GNMT fp16 59,398 against 59,568 tok/s, WaveGlow fp32 36,477 against 36,555), the
# bridged run never more than 1.5% faster, where a bridge would give GNMT, which loses 29% of
# its per-GPU rate to a host-staged all-reduce there, NVLink's peer-to-peer (v0 csv, "2x RTX
# 2080Ti NVLink" against "2x RTX 2080Ti"). The two GPUs a 2-GPU run took were not a bridged
# pair, so those rows run as the server unbridged; on 4 and 8 GPUs pairwise bridges form no
# ring (interconnect.intra_node_link) either way.
def lambda_platform(label: str, gpu: GPU, num_gpus: int, catalog: Catalog) -> Platform | None:
    """The server a multi-GPU row ran in (SXM_PLATFORMS, PCIE_SERVER), None for one GPU or a
    workstation. Labels ending in "NVLink" run as the same server unbridged (the note above);
    PCIe cards in a cloud VM (_CLOUD_VM_LABEL) as the server without peer-to-peer."""
    if num_gpus < 2:
        return None
    if gpu.form is FormFactor.SXM:
        return catalog.find(Platform, SXM_PLATFORMS.get(gpu.name, PCIE_SERVER))
    if num_gpus < 4 and not _SYSTEM_LABEL.match(label.strip()):
        return None
    server = catalog.find(Platform, PCIE_SERVER)
    if _CLOUD_VM_LABEL.match(label.strip()):
        return server.model_copy(
            update={"name": f"{server.name} as a cloud VM", "peer_to_peer": False}
        )
    return server


# A workstation board has 7 expansion slots (ATX). Three RTX 3090 Founders Editions take 9, so
# Lambda's 3x RTX 3090 workstation cannot have held the catalog's 3-slot open-air board: "3x is
# likely possible with liquid cooling/PCIe extendors" (lambdalabs.com/blog/deep-learning-
# hardware-deep-dive-rtx-30xx). Its cards ran cool: the runs' monitor logs (nvidia-smi
# temperature, utilization, memory each second) read a median 66 C and at most 71 C over the
# 1,097 samples at 90% utilization or more, where Lambda's blower cards ran hot (4x RTX A5000
# a median 84 C, 2x RTX 2080 Ti 86 C) and its two open-air RTX 3080 70 C, at most 80 C
# (lambdal/deeplearning-benchmark@aa5addb6 pytorch/results/{3x3090,4xA5000,2x2080Ti_trt,2x3080}/
# */*_monitor.csv, read 2026-12-04). Cards 15-20 C cooler than the crowded blowers COOL.6 costs
# 10-15% did not lose that: they run as a water-cooled 2-slot edition (COOL.6, "water loses
# nothing"), the catalog's word for cooling that costs no speed. The rows agree: on 3 RTX 3090
# ResNet-50, SSD and Tacotron2, which exchange little, keep 0.95-1.03 of one card's rate a GPU.
WORKSTATION_BOARD_SLOTS = 7


def workstation_edition(gpu: GPU, num_gpus: int, platform: Platform | None) -> GPU:
    """The card as a workstation row ran it: a water-cooled 2-slot edition where `num_gpus` of
    the catalog's reference board would not fit a workstation's slots (the note above)."""
    too_wide = num_gpus * (gpu.slots or 0) > WORKSTATION_BOARD_SLOTS
    if platform is None and too_wide and gpu.cooler is CoolerType.OPEN_AIR:
        return gpu.model_copy(update={"cooler": CoolerType.WATER, "slots": 2})
    return gpu


def read_lambda_rows(
    data_dir: Path,
    catalog: Catalog,
    *,
    multi_gpu: bool = False,
    files: tuple[str, ...] = LAMBDA_FILES,
    cleaned: bool = True,
) -> tuple[list[LambdaRow], dict[str, int]]:
    """Usable rows of `files` in `data_dir` (default: Lambda's v0 2022 and v1 2024 runs): batch
    given and > 0, GPU in the catalog, not flagged; single-GPU only unless `multi_gpu`. A row
    repeated within or across the files (same model, precision, batch, GPU, GPU count and
    throughput) counts once.
    `cleaned=False` puts back every row left out on evidence about how it ran (the file's flags,
    the mislabeled, superseded-stack, crashed and superlinear rows: `_is_cleaning`), each
    predicted as the job its logs say ran where they say it (AS_RUN: replicas, the precision
    or GPU count that ran, an epoch timed before the GPU finished), else as its label reads;
    what cannot be predicted at all (no batch, a fractional batch, no throughput, a GPU or
    model dlrig does not know, a repeat) stays out either way.
    Returns the rows and the count of rows left out by reason."""
    rows: list[LambdaRow] = []
    skipped: dict[str, int] = {}
    seen: set[tuple[str, str, str, str, str, str]] = set()
    cache: dict[tuple[object, ...], Workload] = {}
    for name in files:
        with (data_dir / name).open() as fh:
            for rec in csv.DictReader(fh):
                logged = BATCH_FROM_LOGS.get(_run_key(rec))
                if logged is not None:
                    rec = {**rec, "batch_size_per_gpu": logged}
                if rec["mode"] != "train" or (rec["num_gpus"] != "1" and not multi_gpu):
                    continue
                reason = _skip_reason(rec)
                # A flagged row may be mislabeled too: what its logs say ran stands either way.
                as_run = AS_RUN.get(_mislabeled(rec) or "") if not cleaned else None
                left_out = None
                if not cleaned and _is_cleaning(reason):
                    left_out, reason = reason, None
                gpu = None
                label = gpu_label(rec["gpu"])
                if reason is None:
                    try:
                        logged = LOGGED_GPUS.get(rec["gpu"].strip())
                        gpu = catalog.find(GPU, logged or LAMBDA_GPUS.get(label, label))
                    except UnknownPartError:
                        reason = f"GPU not in catalog: {rec['gpu']}"
                version = rec.get("lambda_version") or name.split("_")[3]
                unsynced = False
                stack_speed = 1.0
                if reason is None and gpu is not None:
                    mislabel = _mislabeled_for(rec, gpu, version)
                    if cleaned:
                        reason = mislabel
                    elif mislabel == CUDNN7_FP32_SSD:
                        stack_speed = CUDNN7_FP32_SSD_SPEED
                    elif mislabel == APEX_O1_RAN:
                        as_run = apex_o1_as_run(gpu) or as_run
                    elif mislabel is not None:
                        as_run = AS_RUN.get(mislabel, as_run)
                        unsynced = mislabel == NCF_UNSYNCED
                    if not cleaned:
                        left_out = left_out or mislabel
                if reason is None and gpu is not None:
                    key = (rec["model"], rec["precision"], rec["batch_size_per_gpu"], gpu.name)
                    dedup = (*key, rec["num_gpus"], rec["throughput"])
                    if dedup in seen:
                        reason = "duplicate of an earlier row"
                    seen.add(dedup)
                if reason is not None or gpu is None:
                    skipped[reason or "unknown"] = skipped.get(reason or "unknown", 0) + 1
                    continue
                ran_precision, ran_gpus, replicas = as_run or (None, None, False)
                num_gpus = ran_gpus or int(rec["num_gpus"])
                platform = lambda_platform(rec["gpu"], gpu, num_gpus, catalog)
                gpu = workstation_edition(gpu, num_gpus, platform)
                zoo_name, units, extra = LAMBDA_MODELS[rec["model"]]
                precision = ran_precision or lambda_precision(rec["model"], rec["precision"])
                batch = int(float(rec["batch_size_per_gpu"]))
                if rec["model"] == "ncf":
                    counted = ncf_counted_per_trained(batch, num_gpus)
                    if counted is None:
                        skipped[NCF_NO_STEP] = skipped.get(NCF_NO_STEP, 0) + 1
                        continue
                    units *= counted
                max_steps = squad_max_steps(rec, version, num_gpus)
                if max_steps is not None:
                    units *= squad_counted_per_trained(batch, num_gpus, max_steps)
                optimizer_fields = lambda_optimizer(rec["model"], precision, version, rec["gpu"])
                code = lambda_code(rec["model"], version, rec["gpu"], gpu.architecture)
                wkey = (zoo_name, precision.value, batch, *optimizer_fields.values(), *code.items())
                if wkey not in cache:
                    doc = {
                        "name": f"{zoo_name} (Lambda)",
                        "model": zoo_name,
                        "batch_size": batch,
                        "precision": precision.value,
                        "dataset": "synthetic",
                        **extra,
                        **optimizer_fields,
                    }
                    cache[wkey] = dataclasses.replace(resolve_workload(doc, "lambda"), **code)
                rows.append(
                    LambdaRow(
                        rec["model"],
                        rec["gpu"],
                        gpu,
                        cache[wkey],
                        units,
                        float(rec["throughput"]),
                        num_gpus,
                        version,
                        platform,
                        nccl_p2p_disabled(rec["gpu"], num_gpus, version),
                        replicas,
                        ncf_epoch_steps(batch, num_gpus) if unsynced else 0,
                        left_out,
                        stack_speed,
                    )
                )
    return (_without_superlinear(rows, skipped) if cleaned else rows), skipped


# What cannot be predicted (no batch, no throughput, an unknown model or GPU, a repeat) is not
# cleaning; everything else `read_lambda_rows` leaves out is, and `cleaned=False` puts it back.
_UNPREDICTABLE_PREFIXES = (
    NCF_NO_STEP,
    "model not mapped",
    "batch size missing",
    "batch size per GPU not",
    "no throughput",
    "GPU not in catalog",
    "duplicate",
)


def _is_cleaning(reason: str | None) -> bool:
    return reason is not None and not reason.startswith(_UNPREDICTABLE_PREFIXES)


# The file flags `superlinear_suspect` where a multi-GPU row's scaling over its 1-GPU run
# passes ~1.1 x the GPU count (flagged from 2.23x on 2 GPUs, 4.44x on 4, 8.84x on 8; unflagged
# up to 2.08x, 4.40x, 8.54x), but computes that scaling for one system per job only: the six
# other H100 SXM5 servers' 8-GPU BERT-base fp16 rows measure 10.7-11.5x (9,185-9,928 samples/s
# against 858-877 on one GPU) and carry no flag. Data-parallel GPUs each run the 1-GPU step
# and then exchange gradients, so no GPU of them beats the 1-GPU rate: the same rule is applied
# to every system.
SUPERLINEAR_PER_GPU = 1.1
# Where a card never ran alone, a card at least as fast on every count bounds it: the H200 NVL
# is the H200 SXM's GH100 die with its 141 GB of 4.8 TB/s HBM3e at 600 W instead of 700 W
# (NVIDIA H200 datasheet), so the SXM's 1-GPU run bounds an NVL GPU (LOGGED_GPUS).
BOUNDED_BY = {"H200 NVL 141GB": "H200 SXM 141GB"}


SUPERLINEAR = "superlinear: a GPU above 1.1x its 1-GPU rate (the file's flag, every system)"


def _without_superlinear(rows: list[LambdaRow], skipped: dict[str, int]) -> list[LambdaRow]:
    single: dict[tuple[str, str, str, str], list[tuple[int, float]]] = {}
    for r in rows:
        if r.num_gpus == 1:
            single.setdefault(_card_job(r), []).append(
                (r.workload.batch_size, r.measured_samples_per_s)
            )
    kept = []
    for r in rows:
        # A 1-GPU run of the same job at an equal or larger batch bounds a data-parallel GPU's
        # rate (a larger batch amortizes at least as much); 10% batch slack for Lambda's
        # rounded per-GPU batches (NCF's 10,854,552 alone against 10,000,000 a GPU). Rates in
        # samples trained: NCF counts more samples than it trains (ncf_counted_per_trained).
        model, precision, card, version = _card_job(r)
        runs = single.get((model, precision, card, version)) or single.get(
            (model, precision, BOUNDED_BY.get(card, card), version), []
        )
        alone = [u for b, u in runs if b >= 0.9 * r.workload.batch_size]
        per_gpu = r.measured_samples_per_s / r.num_gpus
        if r.num_gpus > 1 and alone and per_gpu > SUPERLINEAR_PER_GPU * statistics.median(alone):
            skipped[SUPERLINEAR] = skipped.get(SUPERLINEAR, 0) + 1
            continue
        kept.append(r)
    return kept


def _card_job(row: LambdaRow) -> tuple[str, str, str, str]:
    return (row.lambda_model, row.workload.precision.value, row.gpu.name, row.version)


def job_key(row: LambdaRow) -> tuple[str, str, int, str, str]:
    """Same job on the same GPU in the same Lambda run: what a scaling factor divides by."""
    w = row.workload
    return (row.lambda_model, w.precision.value, w.batch_size, row.gpu.name, row.version)


def _skip_reason(rec: dict[str, str]) -> str | None:
    if rec["model"] not in LAMBDA_MODELS:
        return f"model not mapped: {rec['model']}"
    if not rec["batch_size_per_gpu"] or float(rec["batch_size_per_gpu"]) <= 0:
        return "batch size missing or 0"
    if not float(rec["batch_size_per_gpu"]).is_integer():
        return "batch size per GPU not a whole number"
    if not rec["throughput"] or float(rec["throughput"]) <= 0:
        return "no throughput"
    if rec["flag"]:
        return f"flagged {rec['flag'].split(';')[0].split('(')[0]}"
    if _run_key(rec) in CRASHED_RUNS:
        return "run crashed with CUDA out of memory a few iterations in (logs)"
    return _mislabeled(rec)
