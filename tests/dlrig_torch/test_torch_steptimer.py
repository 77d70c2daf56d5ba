"""StepTimer on tiny real training loops (CPU): the slow loader, the fast one, the reader."""

from __future__ import annotations

import sys
import time

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from dlrig.enums import Bottleneck
from dlrig.torch import Prefetcher, StepTimer
from dlrig.torch.advice import LoaderSettings, judge_loop

# Verdicts from CPU time and wall time: run alone, not beside other tests (Makefile `test`).
pytestmark = pytest.mark.serial


def _burn_cpu(seconds: float) -> None:
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1


class Samples(Dataset[torch.Tensor]):
    """32 features a sample; `mode` says what each `__getitem__` costs."""

    def __init__(self, mode: str, cost_s: float = 0.004, n: int = 96) -> None:
        self.mode, self.cost_s, self.n = mode, cost_s, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> torch.Tensor:
        if self.mode == "burn":  # CPU preprocessing (decode, augment)
            _burn_cpu(self.cost_s)
        elif self.mode == "sleep":  # waiting on a slow read: the CPU idles
            time.sleep(self.cost_s)
        return torch.full((32,), float(index))


def _train(loader: DataLoader[torch.Tensor], width: int = 32) -> StepTimer:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, width), nn.ReLU(), nn.Linear(width, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    timer = StepTimer()
    for batch in timer.loader(loader):
        with timer.step():
            loss = model(batch).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return timer


def test_cpu_burning_dataset_is_cpu_preprocessing_with_worker_advice() -> None:
    # 8 samples x 4 ms of CPU per batch = 32 ms of loading against a ~0.1 ms step.
    timer = _train(DataLoader(Samples("burn"), batch_size=8, num_workers=0))
    report = timer.report()
    assert report.bottleneck is Bottleneck.CPU_PREPROCESSING
    assert report.steps == 12
    assert report.data_wait_s > 5 * report.compute_s
    assert report.loader is not None and report.loader.num_workers == 0
    assert any("num_workers=0" in line for line in report.advice)
    assert report.to_dict()["bottleneck"] == "cpu_preprocessing"


def test_sleeping_dataset_waits_on_reads_so_storage() -> None:
    timer = _train(DataLoader(Samples("sleep", cost_s=0.003), batch_size=8))
    report = timer.report()
    assert report.bottleneck is Bottleneck.STORAGE
    assert report.loader_cpu_busy is not None and report.loader_cpu_busy < 0.5
    assert any("NVMe" in line for line in report.advice)


def test_fast_loader_is_gpu_compute_and_says_the_cpu_computes() -> None:
    # A free loader and a 1024-wide MLP: the step is all the time there is.
    timer = _train(DataLoader(Samples("free", n=256), batch_size=64), width=1024)
    report = timer.report()
    assert report.bottleneck is Bottleneck.GPU_COMPUTE
    assert report.device_is_cpu
    assert report.compute_device.startswith("cpu")
    assert "the device computing is the CPU" in str(report)
    assert report.to_dict()["device_is_cpu"] is True


def test_workers_burning_cpu_are_measured_busy() -> None:
    loader = DataLoader(Samples("burn", cost_s=0.01, n=64), batch_size=8, num_workers=2)
    report = _train(loader).report()
    assert report.bottleneck is Bottleneck.CPU_PREPROCESSING
    assert report.loader_cpu_busy is not None and report.loader_cpu_busy > 0.5
    assert any("persistent_workers=False" in line for line in report.advice)


def test_h2d_context_counts_copies_and_report_renders() -> None:
    timer = StepTimer()
    for batch in timer.loader([torch.ones(4)] * 3):
        with timer.h2d():
            batch = batch.to("cpu")
        with timer.step():
            batch.sum()
    report = timer.report()
    assert report.steps == 3
    assert report.h2d_s > 0
    assert "3 steps" in str(report)


def test_pcie_advice_names_pin_memory_when_copies_dominate_on_a_gpu() -> None:
    loader = LoaderSettings(
        num_workers=4, pin_memory=False, prefetch_factor=2, persistent_workers=True
    )
    verdict = judge_loop(
        data_wait_s=0.1,
        h2d_s=2.0,
        compute_s=1.0,
        loader=loader,
        loader_cpu_busy=0.9,
        device_is_cpu=False,
        cpu_count=16,
    )
    assert verdict.bottleneck is Bottleneck.PCIE
    assert any("pin_memory=True" in line for line in verdict.advice)


def test_prefetcher_passes_batches_through_on_cpu() -> None:
    batches = [torch.arange(3), (torch.ones(2), {"y": torch.zeros(1)})]
    out = list(Prefetcher(batches, "cpu"))
    assert out[0] is batches[0] and out[1] is batches[1]


def test_timer_reads_the_settings_of_the_loader_inside_a_prefetcher() -> None:
    loader = DataLoader(Samples("free", n=8), batch_size=4, num_workers=0, pin_memory=False)
    timer = StepTimer()
    assert len(list(timer.loader(Prefetcher(loader, "cpu")))) == 2
    settings = timer.report().loader
    assert settings is not None and settings.num_workers == 0 and settings.batch_size == 4


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_prefetcher_copies_ahead_on_a_side_stream_and_times_the_copies() -> None:
    loader = DataLoader(Samples("free", n=64), batch_size=16, pin_memory=True)
    timer = StepTimer("cuda")
    seen = []
    for batch in timer.loader(Prefetcher(loader, "cuda", timer=timer)):
        with timer.step():
            assert batch.device.type == "cuda"
            seen.append(batch.sum().item())
    expected = [float(sum(range(i, i + 16)) * 32) for i in range(0, 64, 16)]
    assert seen == expected
    report = timer.report()
    assert report.h2d_s > 0 and not report.device_is_cpu
    assert report.compute_device.startswith("cuda:0 (")


def test_lightning_callback_hooks_time_a_fake_trainer(monkeypatch: pytest.MonkeyPatch) -> None:
    # Lightning is not installed here: a stand-in module gives the Callback base class, and the
    # hooks are called in Lightning's order (fetch the batch, start, step, end).
    import importlib
    import types

    fake = types.ModuleType("lightning.pytorch.callbacks")
    fake.Callback = type("Callback", (), {})  # type: ignore[attr-defined]
    for name in ("lightning", "lightning.pytorch"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "lightning.pytorch.callbacks", fake)
    monkeypatch.delitem(sys.modules, "dlrig.torch.lightning", raising=False)
    module = importlib.import_module("dlrig.torch.lightning")
    callback = module.StepTimerCallback()
    pl_module = types.SimpleNamespace(device=torch.device("cpu"))
    callback.on_train_epoch_start(None, pl_module)
    for i in range(3):
        time.sleep(0.02)  # the data wait: Lightning fetching the batch
        callback.on_train_batch_start(None, pl_module, None, i)
        time.sleep(0.005)  # the step
        callback.on_train_batch_end(None, pl_module, None, None, i)
    callback.on_train_end(None, pl_module)
    report = callback.report
    assert report is not None and report.steps == 3
    assert report.data_wait_s >= 0.06 and report.compute_s >= 0.015
    # The training thread slept through the waits (a loader blocked on reads): storage.
    assert report.loader_cpu_busy is not None and report.loader_cpu_busy < 0.5
    assert report.bottleneck is Bottleneck.STORAGE
    monkeypatch.delitem(sys.modules, "dlrig.torch.lightning")


def test_a_plain_cuda_device_is_reported_with_its_index(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a lent H200, StepTimer("cuda") reported "cuda (NVIDIA H200)": on an 8-GPU box the
    # report must say which card (scripts/gpu-check, pytest -m gpu). CUDA is faked here.
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")
    timer = StepTimer("cuda")
    assert timer._resolved_device() == torch.device("cuda", 3)
    assert StepTimer("cuda:1")._resolved_device() == torch.device("cuda", 1)
    assert StepTimer("cpu")._resolved_device() == torch.device("cpu")
