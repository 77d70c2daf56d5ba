"""`describe(model, example_input)`: a workload's model block counted on the meta device.

The model runs once, forward only, on meta tensors (shapes without data: no memory, no compute),
so a billion-parameter model is counted in seconds on a laptop. What is counted:

- `params`: trainable and frozen parameters, tied weights once.
- `param_bytes`: their storage at their own dtypes.
- `forward_flops_per_sample`: torch's own flop counter (`torch.utils.flop_counter`), which counts
  matrix multiplications and convolutions with one multiply-add as 2 FLOPs (dlrig's unit, see
  `dlrig.units`) and ignores element-wise work; divided by the example's batch size.
- `activation_bytes_per_sample`: the tensors autograd saves for the backward pass (captured with
  `torch.autograd.graph.saved_tensors_hooks`), each storage once, divided by the batch size;
  parameters and buffers (running means) are state, not activations. That is the memory a
  training step holds between forward and backward, which is what GPU memory planning needs;
  the model's input counts when a layer saves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn
from torch.func import functional_call
from torch.utils.flop_counter import FlopCounterMode

from dlrig.errors import ValidationError


def describe(
    model: nn.Module, example_input: Any, *, batch_size: int | None = None
) -> dict[str, Any]:
    """The design's inline model block for `model` fed `example_input`.

    `example_input` is a tensor, a tuple/list of positional arguments, or a dict of keyword
    arguments; its tensors may live on any device (only shapes and dtypes are used). The batch
    size is the first dimension of the first tensor unless `batch_size` is given. The model is
    not modified: its parameters and buffers are replaced by meta copies for the one call.

    Returns `{"params", "param_bytes", "forward_flops_per_sample",
    "activation_bytes_per_sample"}` (counts, bytes, FLOPs with multiply-add = 2).
    """
    if not isinstance(model, nn.Module):
        raise ValidationError(f"describe() needs a torch.nn.Module, got {type(model).__name__}")
    args, kwargs = _split_input(_to_meta(example_input))
    batch = batch_size if batch_size is not None else _batch_size(args, kwargs)
    if batch <= 0:
        raise ValidationError(f"batch size must be positive, got {batch}")

    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    meta_state: dict[str, torch.Tensor] = {
        name: torch.empty_like(p, device="meta").requires_grad_(p.requires_grad)
        for name, p in params.items()
    }
    meta_state.update({name: torch.empty_like(b, device="meta") for name, b in buffers.items()})
    state_storages = {_storage_key(t) for t in meta_state.values()}

    saved: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        key = _storage_key(tensor)
        # A weight (or its transposed view) or a running statistic is state, not activation.
        if key not in state_storages:
            saved[key] = tensor.untyped_storage().nbytes()
        return tensor

    counter = FlopCounterMode(display=False)
    with (
        counter,
        torch.autograd.graph.saved_tensors_hooks(pack, _unpack),
        torch.enable_grad(),
    ):
        functional_call(model, meta_state, args, kwargs)

    return {
        "params": sum(p.numel() for p in params.values()),
        "param_bytes": sum(p.numel() * p.element_size() for p in params.values()),
        "forward_flops_per_sample": counter.get_total_flops() / batch,
        "activation_bytes_per_sample": sum(saved.values()) / batch,
    }


def _unpack(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def _storage_key(tensor: torch.Tensor) -> int:
    """Identity of the storage behind a tensor: views and re-wrapped tensors share it."""
    return int(tensor.untyped_storage()._cdata)


def _to_meta(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return torch.empty_like(value, device="meta")
    if isinstance(value, Mapping):
        return {k: _to_meta(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_meta(v) for v in value)
    return value


def _split_input(value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if isinstance(value, Mapping):
        return (), dict(value)
    if isinstance(value, list | tuple):
        return tuple(value), {}
    return (value,), {}


def _batch_size(args: Sequence[Any], kwargs: Mapping[str, Any]) -> int:
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            return int(value.shape[0])
    raise ValidationError(
        "cannot tell the batch size: the example input has no tensor with a batch dimension",
        hint="pass batch_size=N to describe()",
    )
