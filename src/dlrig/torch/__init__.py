"""dlrig inside a PyTorch training loop: count a model, time its steps, prefetch its batches.

Nothing here imports torch until a name is used (module `__getattr__`), so `import dlrig.torch`
stays cheap and works without the `torch` extra until one of these is touched (`describe`
lives in `modelblock.py`: a submodule named like the function would shadow it here):

- `describe(model, example_input)`: a workload's model block (params, FLOPs, activation bytes),
  counted on the meta device.
- `StepTimer`: data wait vs host-to-device copy vs compute per step, with a verdict in the
  bottleneck vocabulary and advice read from the DataLoader's settings.
- `Prefetcher(loader, device)`: the next batch's pinned copy overlapped with the current step.
- `StepTimerCallback`: the same timer as a Lightning callback (only with Lightning installed).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlrig.torch.modelblock import describe
    from dlrig.torch.prefetch import Prefetcher
    from dlrig.torch.steptimer import StepReport, StepTimer

__all__ = ["Prefetcher", "StepReport", "StepTimer", "StepTimerCallback", "describe"]

_EXPORTS = {
    "describe": "dlrig.torch.modelblock",
    "StepTimer": "dlrig.torch.steptimer",
    "StepReport": "dlrig.torch.steptimer",
    "Prefetcher": "dlrig.torch.prefetch",
    "StepTimerCallback": "dlrig.torch.lightning",
}


def __getattr__(name: str) -> Any:
    """Import the module behind an exported name on first use."""
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'dlrig.torch' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
