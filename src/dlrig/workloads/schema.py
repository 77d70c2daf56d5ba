"""The workload file as written by a user (YAML or TOML), validated with pydantic (design.md).

`model` is a zoo name or an inline block; the inline block's keys are those that
`dlrig.torch.describe` returns (`params`, `param_bytes`, `forward_flops_per_sample`,
`activation_bytes_per_sample`) plus optional facts the model uses when known. Unknown keys are
errors, everywhere.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dlrig.enums import Optimizer, Parallelism, Precision, PreprocessingStrategy
from dlrig.workloads.model import FinetuneMethod, Mode, WorkloadKind

PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelBlock(_Strict):
    """The model's size and cost; FLOPs per sample or per token (then `seq_len` is needed)."""

    params: PositiveFloat
    param_bytes: PositiveFloat | None = None
    forward_flops_per_sample: PositiveFloat | None = None
    forward_flops_per_token: PositiveFloat | None = None
    activation_bytes_per_sample: NonNegativeFloat | None = None
    kind: WorkloadKind = WorkloadKind.OTHER
    seq_len: PositiveInt | None = None
    hidden_size: PositiveInt | None = None
    num_layers: PositiveInt | None = None
    kv_bytes_per_token: PositiveFloat | None = Field(
        default=None, description="16-bit KV-cache bytes per token of context (inference)"
    )

    @model_validator(mode="after")
    def _flops_given(self) -> ModelBlock:
        if self.forward_flops_per_sample is None and self.forward_flops_per_token is None:
            raise ValueError("give 'forward_flops_per_sample' or 'forward_flops_per_token'")
        if self.forward_flops_per_sample is not None and self.forward_flops_per_token is not None:
            raise ValueError(
                "give 'forward_flops_per_sample' or 'forward_flops_per_token', not both"
            )
        return self


DType = Literal["float32", "float16", "bfloat16", "uint8", "int8", "int32", "int64", "uint16"]

DTYPE_BYTES: dict[str, int] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "uint8": 1,
    "int8": 1,
    "int32": 4,
    "int64": 8,
    "uint16": 2,
}


class InputBlock(_Strict):
    """One sample as it crosses PCIe: a tensor shape (or several) and its element type."""

    shape: list[PositiveInt] = Field(min_length=1)
    dtype: DType = "float32"
    tensors: PositiveInt = Field(default=1, description="how many tensors of this shape")


class DatasetBlock(_Strict):
    samples: PositiveInt
    bytes_per_sample: PositiveFloat


class PreprocessingBlock(_Strict):
    """CPU.1: `cpu_ms_per_sample` is the online cost (decode, augment) on one core;
    `offline_cpu_ms_per_sample` the cost of loading an already-preprocessed sample."""

    strategy: PreprocessingStrategy = PreprocessingStrategy.ONLINE
    cpu_ms_per_sample: NonNegativeFloat | None = None
    offline_cpu_ms_per_sample: NonNegativeFloat | None = None


class LoaderBlock(_Strict):
    """The data loader: background workers, pinned host memory and batches loaded ahead."""

    workers: NonNegativeInt = 4
    pin_memory: bool = True
    prefetch: NonNegativeInt = 2


class FinetuneBlock(_Strict):
    method: FinetuneMethod = FinetuneMethod.FULL
    trainable_fraction: Annotated[float, Field(gt=0, le=1)] | None = None


class WorkloadFile(_Strict):
    """The top level of a workload file (design.md, plus `mode`, `finetune`, `seq_len`,
    `similar_to`, `activation_checkpointing`, `steps`, `sources` and `notes`)."""

    name: str | None = None
    model: str | ModelBlock
    mode: Mode = Mode.TRAINING
    batch_size: PositiveInt | None = None
    precision: Precision | None = None
    optimizer: Optimizer | None = None
    input: InputBlock | list[InputBlock] | None = None
    dataset: Literal["synthetic"] | DatasetBlock | None = None
    preprocessing: PreprocessingBlock | None = None
    loader: LoaderBlock | None = None
    parallel: Parallelism | None = None
    finetune: FinetuneBlock | None = None
    seq_len: PositiveInt | None = None
    similar_to: str | None = Field(
        default=None,
        description="a zoo model whose fitted efficiencies this one shares (same layer types)",
    )
    activation_checkpointing: bool = Field(
        default=False, description="recompute activations in backward (one extra forward)"
    )
    epochs: PositiveFloat | None = None
    tokens: PositiveFloat | None = None
    steps: PositiveInt | None = None
    sources: list[str] = Field(default_factory=list)
    notes: str = ""

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("name"), int | float):
            return {**data, "name": str(data["name"])}
        return data
