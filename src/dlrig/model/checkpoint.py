"""The job's own files on disk: the model's weights (read once at the start) and, when it
trains, its checkpoints (trainable weights and optimizer state, written during the run).

- weights: every parameter as the job stores it (16-bit, 32-bit, or the quantized base of
  QLoRA), model.memory's bytes per frozen parameter;
- one checkpoint: each trainable parameter's weights and optimizer state, i.e. what training
  holds per trainable parameter (model.memory: 16 B for Adam in mixed precision: 16-bit weights
  and gradients, fp32 master weights, two fp32 moments) less the gradients, which are not saved
  (14 B for Adam in mixed precision, 12 B in fp32). A LoRA checkpoint holds its adapters only.
- KEPT_CHECKPOINTS of them on disk at a time, one saved every CHECKPOINT_EVERY_H hours of
  training and one at the end; a save blocks training while it writes (torch.save).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlrig.machine.model import Build
from dlrig.model import memory
from dlrig.model.rates import is_16bit
from dlrig.units import GB, MB
from dlrig.workloads.model import Mode, OptimizerStep, Workload

# Checkpoints kept on disk at a time: the last few, so that a run can go back past a bad step
# (Hugging Face Trainer's save_total_limit, commonly set to 2-3). A stated assumption.
KEPT_CHECKPOINTS = 3
# Hours of training between checkpoints: a stated assumption (a crash loses at most this).
CHECKPOINT_EVERY_H = 1.0


@dataclass(frozen=True)
class JobFiles:
    """The job's files, decimal GB: weights read at the start, one checkpoint, and how many
    checkpoints stay on disk."""

    weights_gb: float
    checkpoint_gb: float
    kept: int

    @property
    def total_gb(self) -> float:
        """What the job's files take on disk at most: the weights and the kept checkpoints."""
        return self.weights_gb + self.kept * self.checkpoint_gb


def job_files(workload: Workload) -> JobFiles:
    """The workload's files on disk (no checkpoints for inference)."""
    sixteen = is_16bit(workload.precision)
    weights = workload.params * memory.frozen_weight_bytes_per_param(
        workload.weight_bits, sixteen, memory.quantized_bits_per_weight(workload)
    )
    if workload.mode is Mode.INFERENCE:
        return JobFiles(weights / GB, 0.0, 0)
    gradient_bytes = 2.0 if sixteen else 4.0
    per_param = (
        memory.trainable_state_bytes_per_param(
            workload.optimizer.value, sixteen, workload.pure_16bit
        )
        - gradient_bytes
    )
    if workload.optimizer_step is OptimizerStep.NONE:  # no moments to save
        per_param -= memory.optimizer_state_bytes_per_param(
            workload.optimizer.value, workload.pure_16bit and sixteen
        )
    trainable = workload.params * workload.trainable_fraction
    return JobFiles(weights / GB, trainable * per_param / GB, KEPT_CHECKPOINTS)


@dataclass(frozen=True)
class JobIO:
    """Seconds the run spends on its files: loading the weights once, saving its checkpoints,
    on the drive that holds the job, at its sequential read and write speeds."""

    load_s: float
    saves: int
    save_s: float
    drive: str
    write_mb_s: float

    @property
    def total_s(self) -> float:
        return self.load_s + self.saves * self.save_s


def job_io(build: Build, workload: Workload, training_h: float) -> JobIO | None:
    """The file time of a run of training_h hours of compute on the build's job drive (the
    dataset drive); None without a drive or a run length. A drive with no stated write speed
    is taken to write as fast as it reads."""
    drive = build.dataset_storage
    if drive is None or not math.isfinite(training_h):
        return None
    files = job_files(workload)
    read_mb_s = build.storage_read_mb_s(drive)
    write_mb_s = (drive.device.write_mb_s or drive.device.read_mb_s) * drive.count
    saves = 0 if files.kept == 0 else math.floor(training_h / CHECKPOINT_EVERY_H) + 1
    return JobIO(
        load_s=files.weights_gb * GB / MB / read_mb_s,
        saves=saves,
        save_s=files.checkpoint_gb * GB / MB / write_mb_s,
        drive=drive.device.name,
        write_mb_s=write_mb_s,
    )
