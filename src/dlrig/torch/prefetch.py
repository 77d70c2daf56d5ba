"""`Prefetcher(loader, device)`: copy the next batch to the GPU while the current step runs.

The asynchronous loading of DISK.2 and the pinned memory of PCIE.1 in one wrapper: each batch is
pinned (unless the DataLoader already did it with `pin_memory=True`) and copied on a side CUDA
stream with `non_blocking=True`, one batch ahead; the training stream waits for that copy only
when it uses the batch, and the batch's memory is tied to the training stream
(`record_stream`) so the caching allocator does not reuse it early. On a CPU device there is
nothing to copy and batches pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch

from dlrig.torch.steptimer import StepTimer


class Prefetcher:
    """Iterate over `loader`'s batches already on `device`, the next copy overlapping the step.

    Batches may be tensors or (nested) tuples, lists and dicts of them; other values pass
    through. With a `timer`, the copy time (CUDA events on the side stream) is added to its
    `h2d_s`: time the link was busy, mostly hidden behind compute.
    """

    def __init__(
        self, loader: Iterable[Any], device: str | torch.device, *, timer: StepTimer | None = None
    ) -> None:
        self.loader = loader
        self.device = torch.device(device)
        self.timer = timer

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        if self.device.type != "cuda":
            yield from self.loader
            return
        yield from self._overlapped()

    def _overlapped(self) -> Iterator[Any]:
        side = torch.cuda.Stream(device=self.device)  # type: ignore[no-untyped-call]
        events: list[tuple[Any, Any]] = []
        iterator = iter(self.loader)

        def copy_next() -> Any:
            try:
                batch = next(iterator)
            except StopIteration:
                return _END
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            with torch.cuda.stream(side):
                start.record(side)
                moved = _move(batch, self.device)
                end.record(side)
            events.append((start, end))
            return moved

        upcoming = copy_next()
        try:
            while upcoming is not _END:
                current = upcoming
                torch.cuda.current_stream(self.device).wait_stream(side)
                _record_stream(current, torch.cuda.current_stream(self.device))
                upcoming = copy_next()
                yield current
        finally:
            if self.timer is not None and events:
                side.synchronize()
                self.timer.add_h2d(sum(s.elapsed_time(e) for s, e in events) / 1e3)


_END = object()


def _move(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        host = value if value.is_pinned() or value.device.type != "cpu" else value.pin_memory()
        return host.to(device, non_blocking=True)
    if isinstance(value, Mapping):
        return {k: _move(v, device) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(_move(v, device) for v in value))
    if isinstance(value, list | tuple):
        return type(value)(_move(v, device) for v in value)
    return value


def _record_stream(value: Any, stream: Any) -> None:
    if isinstance(value, torch.Tensor):
        value.record_stream(stream)
    elif isinstance(value, Mapping):
        for v in value.values():
            _record_stream(v, stream)
    elif isinstance(value, list | tuple):
        for v in value:
            _record_stream(v, stream)
