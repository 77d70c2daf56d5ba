"""The build file's fields with every part named: what most build files are, and a schema small
enough to build each time a command starts (issue 39).

A part is written in one of four forms (machine/schema.py); two of them name a catalog part: a
catalog name (a string) or `{model: NAME, ...settings}`. `NamedBuildFile` has every field of
the build file with its parts in those two forms only, so pydantic builds its validator from
a few small models instead of the catalog's every field twice over (the inline forms).
`schema.BuildFile` is this model with the parts in all four forms; the loader validates a file
with `NamedBuildFile` first and, when it is refused, with `BuildFile`, whose answer (the parts
in another form, or the error naming the field) stands. Both forms' models and every other
field's are the same objects in both, so a file the named model accepts reads the same in the
full one.
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from dlrig.enums import CoolerType, NetworkKind, Precision
from dlrig.machine.model import Prices
from dlrig.units import GbitPerSecond, LinkLanes, MemoryGiB, PCIeGen, PriceUSD

# No node holds more than this many parts of one kind: a larger count is a typo, and the rules
# look at every card, so an unbounded count would let one line of input take minutes.
MAX_PART_COUNT = 1024
Count = Annotated[int, Field(gt=0, le=MAX_PART_COUNT)]
# A cluster of this many identical nodes is far past any machine dlrig plans for.
MAX_NODES = 100_000


class Strict(BaseModel):
    # Built when a build file is first validated (one validator for the whole file), not at
    # import: a command that reads no build file pays nothing for it.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class PCIeSetting(Strict):
    """What the slot gives a card, when less than the card takes."""

    gen: PCIeGen | None = None
    lanes: LinkLanes | None = None


class GPUSettings(Strict):
    count: Count = 1
    pcie: PCIeSetting | None = None
    cooler: CoolerType | None = None
    power_limit_w: Annotated[float, Field(gt=0, le=10_000)] | None = Field(
        default=None,
        description="each card's power limit, W (nvidia-smi -pl): between the card's lowest "
        "limit and its stock board power",
    )


class CountSetting(Strict):
    count: Count = 1


class StorageSettings(Strict):
    count: Count = 1
    holds_dataset: bool | None = Field(
        default=None, description="the training data lives here (default: the fastest device)"
    )


class NoSettings(Strict):
    pass


# The per-build settings each kind of part takes, by the name its models carry.
SETTINGS: dict[str, type[Strict]] = {
    "GPU": GPUSettings,
    "CPU": CountSetting,
    "Motherboard": NoSettings,
    "PSU": CountSetting,
    "Case": NoSettings,
    "Storage": StorageSettings,
    "Platform": NoSettings,
    "LoopPart": CountSetting,
}


def part_form(value: Any) -> str | None:
    """Which of the four forms a part entry is written in (None: none of them)."""
    if isinstance(value, str):
        return "by-name"
    if isinstance(value, BaseModel):  # a validated entry (serialization, JSON Schema)
        keys: Any = type(value).model_fields
    elif isinstance(value, dict):
        keys = value
    else:
        return None
    if "model" in keys:
        return "by-model"
    if "spec" in keys:
        return "inline-spec"
    return "spec-fields"


FORM_ERROR = "expected a catalog name, {model: NAME}, {spec: {...}} or the part's fields"


def _by_model(kind: str) -> type[BaseModel]:
    by_model: type[BaseModel] = create_model(
        f"{kind}ByModel",
        __base__=SETTINGS[kind],
        __doc__=f"A catalog {kind} by name, with per-build settings.",
        model=(str, Field(min_length=1, description="catalog name (case and spacing forgiven)")),
    )
    return by_model


# `{model: NAME, ...settings}` of each kind: one model, in the named and in the full schema.
BY_MODEL: dict[str, type[BaseModel]] = {kind: _by_model(kind) for kind in SETTINGS}


def forms(kind: str, *more: Any) -> Any:
    """A part of one kind as the union of its forms, told apart by `part_form`: by name, by
    model, and `more` (each `Annotated[model, Tag(form)]`)."""
    branches = (Annotated[str, Tag("by-name")], Annotated[BY_MODEL[kind], Tag("by-model")], *more)
    return Annotated[
        functools.reduce(operator.or_, branches),
        Discriminator(part_form, custom_error_type="part_form", custom_error_message=FORM_ERROR),
    ]


if TYPE_CHECKING:
    NamedGPU = Any
    NamedCPU = Any
    NamedMotherboard = Any
    NamedPSU = Any
    NamedCase = Any
    NamedStorage = Any
    NamedPlatform = Any
    NamedLoopPart = Any
else:
    NamedGPU = forms("GPU")
    NamedCPU = forms("CPU")
    NamedMotherboard = forms("Motherboard")
    NamedPSU = forms("PSU")
    NamedCase = forms("Case")
    NamedStorage = forms("Storage")
    NamedPlatform = forms("Platform")
    NamedLoopPart = forms("LoopPart")


class MemoryEntry(Strict):
    """System RAM: a size (and optionally type and speed), or a catalog kit times a count."""

    model: str | None = None
    count: Count = 1
    size_gb: MemoryGiB | None = None
    type: str | None = None
    speed_mt_s: Annotated[int, Field(gt=0, le=100_000)] | None = None
    price_usd: PriceUSD | None = None

    @model_validator(mode="after")
    def _size_or_kit(self) -> MemoryEntry:
        if self.model is None and self.size_gb is None:
            raise ValueError("give 'size_gb' or a catalog kit 'model'")
        return self


class NetworkEntry(Strict):
    kind: NetworkKind = NetworkKind.ETHERNET
    gbit_s: GbitPerSecond
    adapters_per_node: Annotated[int, Field(gt=0, le=64)] = 1


class PricesEntry(Strict):
    """What a kWh costs (in `currency`) and emits (kg CO2): a run's energy cost and footprint."""

    # The defaults are the domain's, so that a build file without prices and a planned build
    # cost the same.
    electricity_per_kwh: Annotated[float, Field(ge=0, le=100)] = Prices.electricity_per_kwh
    currency: str = Field(default=Prices.currency, description="ISO 4217 code, e.g. USD, EUR")
    co2_kg_per_kwh: Annotated[float, Field(ge=0, le=10)] = Prices.co2_kg_per_kwh

    @field_validator("currency")
    @classmethod
    def _iso_4217(cls, code: str) -> str:
        from dlrig.catalog.currency import iso_currency
        from dlrig.errors import ValidationError

        try:
            return iso_currency(code, "currency")
        except ValidationError as exc:
            raise PydanticCustomError(
                "currency_code", "not an ISO 4217 currency code ({hint})", {"hint": exc.hint}
            ) from None


# Bounds of measured figures: far above any machine (B200: 8,000 GB/s HBM, 4,500 dense FP8
# TFLOPS; PCIe 6.0 x16: 121 GB/s one way), so only typos and unit slips are refused.
MeasuredTflops = Annotated[float, Field(gt=0, le=100_000)]
MeasuredGBs = Annotated[float, Field(gt=0, le=100_000)]
MeasuredMBs = Annotated[float, Field(gt=0, le=1_000_000)]


class MeasuredGPUEntry(Strict):
    """One GPU (with `index`) or every GPU of one model: what the probe measured on it."""

    model: str = Field(min_length=1, description="the GPU's name as the build's gpus name it")
    index: Annotated[int, Field(ge=0, lt=MAX_PART_COUNT)] | None = None
    matmul_tflops: dict[Precision, MeasuredTflops] = Field(
        default_factory=dict, description="dense matmul TFLOPS per precision (fp32, fp16, ...)"
    )
    memory_bandwidth_gb_s: MeasuredGBs | None = None
    h2d_pinned_gb_s: MeasuredGBs | None = None
    h2d_pageable_gb_s: MeasuredGBs | None = None


class MeasuredStorageEntry(Strict):
    """One drive's sequential read: at `read_queue_depth` (deep) and at queue depth 1."""

    model: str = Field(min_length=1, description="the drive's name as the build's storage names it")
    read_mb_s: MeasuredMBs
    read_queue_depth: Annotated[int, Field(ge=1, le=65_536)] = 1
    read_mb_s_qd1: MeasuredMBs | None = None


def _iso_text(value: Any) -> Any:
    """A YAML or TOML date (`taken: 2026-12-03`, unquoted) as the ISO text it was written as."""
    return value.isoformat() if isinstance(value, dt.date | dt.time) else value


class MeasuredBlock(Strict):
    """What a probe measured on this machine; `estimate`, `check` and `upgrade` use these
    figures in place of datasheet and achievable rates (docs/contracts.md, `measured:`)."""

    taken: Annotated[str, BeforeValidator(_iso_text)] = Field(
        pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}",
        description="when it was measured, ISO 8601 (the date at least)",
    )
    source: str = Field(default="dlrig probe", min_length=1, max_length=200)
    ram_bandwidth_gb_s: MeasuredGBs | None = None
    loader_ms_per_sample_per_core: Annotated[float, Field(gt=0, le=1_000_000)] | None = None
    storage: list[MeasuredStorageEntry] = Field(default_factory=list)
    gpus: list[MeasuredGPUEntry] = Field(default_factory=list)
    p2p_gb_s: MeasuredGBs | None = None
    peer_to_peer: bool | None = Field(
        default=None,
        description="false where no pair of the machine's GPUs has peer-to-peer access, or where "
        "NCCL is told not to use it (NCCL_P2P_DISABLE)",
    )
    allreduce_busbw_gb_s: MeasuredGBs | None = None
    allreduce_gpus: Annotated[int, Field(ge=2, le=MAX_PART_COUNT * MAX_NODES)] | None = None

    @model_validator(mode="after")
    def _busbw_with_its_gpus(self) -> MeasuredBlock:
        if (self.allreduce_busbw_gb_s is None) != (self.allreduce_gpus is None):
            raise ValueError("give 'allreduce_busbw_gb_s' and 'allreduce_gpus' together")
        return self


def _one_or_list(value: Any) -> str:
    return "list" if isinstance(value, list) else "one"


def one_or_list(part: Any) -> Any:
    """One part or a list of them (`gpus`, `storage`)."""
    return Annotated[
        Annotated[list[part], Tag("list")] | Annotated[part, Tag("one")],  # type: ignore[valid-type]
        Discriminator(_one_or_list),
    ]


if TYPE_CHECKING:
    NamedGPUs = Any
    NamedStorages = Any
else:
    NamedGPUs = one_or_list(NamedGPU)
    NamedStorages = one_or_list(NamedStorage)

LOOP_DESCRIPTION = (
    "a custom water loop's parts (catalog `cooling` names or inline specs, each with a count): "
    "GPU blocks, radiators, the pump and the fittings"
)
MAX_LOOP_PARTS = 64


class NamedBuildFile(Strict):
    """The top level of a build file whose parts are all named (schema.BuildFile has the
    other forms)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        allow_inf_nan=False,
        coerce_numbers_to_str=True,
        defer_build=True,
    )

    name: str = "unnamed build"
    gpus: NamedGPUs = Field(default_factory=list)
    cpu: NamedCPU | None = None
    motherboard: NamedMotherboard | None = None
    platform: NamedPlatform | None = None
    memory: str | MemoryEntry | None = Field(
        default=None, description="a catalog kit name, or {size_gb, type, speed_mt_s, ...}"
    )
    storage: NamedStorages = Field(default_factory=list)
    psu: NamedPSU | None = None
    case: NamedCase | None = None
    loop: list[NamedLoopPart] = Field(
        default_factory=list, max_length=MAX_LOOP_PARTS, description=LOOP_DESCRIPTION
    )
    nodes: Annotated[int, Field(gt=0, le=MAX_NODES)] = 1
    network: NetworkEntry | None = None
    prices: PricesEntry = Field(default_factory=PricesEntry)
    measured: MeasuredBlock | None = None
    circuit: str | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="the mains circuit the machine is plugged into: us-15a, us-20a, "
        "us-240v-30a, eu-16a, uk-13a, ... or NNx-NAME for NN independent circuits "
        "(2x-us-15a: one PSU or more on each)",
    )
