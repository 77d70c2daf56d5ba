"""`StepTimerCallback`: the StepTimer's split of a training step as a Lightning callback.

Lightning fetches each batch before it calls `on_train_batch_start`, so the data wait is the
time from the end of one batch (or the start of the epoch) to the start of the next, and the
compute is the time from a batch's start to its end (synchronized on a GPU, as `StepTimer.step`
does). At the end of training the report is kept on `callback.report`.

Needs `lightning` (or the older `pytorch_lightning`); importing this module without either
raises one ImportError that says what to install.
"""

from __future__ import annotations

import time
from typing import Any

from dlrig.torch.steptimer import StepReport, StepTimer, thread_busy_s

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the older package name
    try:
        from pytorch_lightning.callbacks import Callback  # type: ignore[import-not-found]
    except ImportError as exc:
        raise ImportError(
            "dlrig.torch.StepTimerCallback needs Lightning: pip install lightning"
        ) from exc


class StepTimerCallback(Callback):  # type: ignore[misc]
    """Times data wait and compute of every training batch; `report` holds the verdict."""

    def __init__(self) -> None:
        super().__init__()
        self.timer = StepTimer()
        self.report: StepReport | None = None
        self._mark_s: float | None = None
        self._mark_busy_s = 0.0

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        """The first batch's wait starts with the epoch; the trainer's loader gives the advice
        its settings."""
        self.timer.use_loader(getattr(trainer, "train_dataloader", None))
        self._mark_s = time.perf_counter()
        self._mark_busy_s = thread_busy_s()

    def on_train_batch_start(
        self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int
    ) -> None:
        """The batch has arrived: what passed since the last mark was the data wait."""
        now_s = time.perf_counter()
        busy_s = thread_busy_s()
        if self._mark_s is not None:
            self.timer.record_wait(now_s - self._mark_s, busy_s - self._mark_busy_s)
        self._mark_s = now_s

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """The step is done (its kernels waited for on a GPU): count it as compute."""
        device = getattr(pl_module, "device", None)
        if device is not None and getattr(device, "type", "") == "cuda":
            import torch

            torch.cuda.synchronize(device)
        now_s = time.perf_counter()
        if self._mark_s is not None:
            self.timer.compute_s += now_s - self._mark_s
            self.timer.steps += 1
        self._mark_s = now_s
        self._mark_busy_s = thread_busy_s()
        self._mark_busy_s = thread_busy_s()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Keep the report for the caller to print or log (`print(callback.report)`)."""
        self.report = self.timer.report()
