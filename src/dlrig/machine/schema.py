"""The build file as written by a user (YAML or TOML), validated with pydantic.

A part is written in one of four forms, declared as a union so that the JSON Schema
(`dlrig schema build`) says what users may write: a catalog name (a string), `{model: NAME,
...settings}`, an inline `{spec: {...}, ...settings}`, or the spec's fields written directly
(`{kind: hdd, read_mb_s: 180}`). An inline spec may give any subset of the catalog's fields;
only `name` matters and even it has a default (machine/partial.py fills in the rest).
"""

from __future__ import annotations

import datetime as dt
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
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from dlrig.catalog.schema import (
    CPU,
    GPU,
    PSU,
    Case,
    LoopPart,
    MemoryKit,
    Motherboard,
    Platform,
    Storage,
)
from dlrig.enums import CoolerType, NetworkKind, Precision
from dlrig.machine.model import Prices
from dlrig.machine.partial import inline_spec_model
from dlrig.units import GbitPerSecond, LinkLanes, MemoryGiB, PCIeGen, PriceUSD

# No node holds more than this many parts of one kind: a larger count is a typo, and the rules
# look at every card, so an unbounded count would let one line of input take minutes.
MAX_PART_COUNT = 1024
Count = Annotated[int, Field(gt=0, le=MAX_PART_COUNT)]
# A cluster of this many identical nodes is far past any machine dlrig plans for.
MAX_NODES = 100_000

if TYPE_CHECKING:
    GPUSpec = BaseModel
    CPUSpec = BaseModel
    MotherboardSpec = BaseModel
    PSUSpec = BaseModel
    CaseSpec = BaseModel
    StorageSpec = BaseModel
    PlatformSpec = BaseModel
    LoopPartSpec = BaseModel
else:
    GPUSpec = inline_spec_model(GPU)
    CPUSpec = inline_spec_model(CPU)
    MotherboardSpec = inline_spec_model(Motherboard)
    PSUSpec = inline_spec_model(PSU)
    CaseSpec = inline_spec_model(Case)
    StorageSpec = inline_spec_model(Storage)
    PlatformSpec = inline_spec_model(Platform)
    LoopPartSpec = inline_spec_model(LoopPart)


class _Strict(BaseModel):
    # Built when a build file is first validated (one validator for the whole file), not at
    # import: a command that reads no build file pays nothing for it.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class PCIeSetting(_Strict):
    """What the slot gives a card, when less than the card takes."""

    gen: PCIeGen | None = None
    lanes: LinkLanes | None = None


class _GPUSettings(_Strict):
    count: Count = 1
    pcie: PCIeSetting | None = None
    cooler: CoolerType | None = None
    power_limit_w: Annotated[float, Field(gt=0, le=10_000)] | None = Field(
        default=None,
        description="each card's power limit, W (nvidia-smi -pl): between the card's lowest "
        "limit and its stock board power",
    )


class _CountSetting(_Strict):
    count: Count = 1


class _StorageSettings(_Strict):
    count: Count = 1
    holds_dataset: bool | None = Field(
        default=None, description="the training data lives here (default: the fastest device)"
    )


class _NoSettings(_Strict):
    pass


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


def _one_spec_field(spec: type[BaseModel]) -> type[BaseModel]:
    """A base whose only job is the JSON Schema of the fields form: at least one of the spec's
    fields, as the loader asks (`{}` or a bare `{count: 2}` names no part)."""
    extra: JsonDict = {"anyOf": [{"required": [name]} for name in spec.model_fields]}
    base: type[BaseModel] = create_model(
        f"{spec.__name__}AnyField", __config__=ConfigDict(json_schema_extra=extra, defer_build=True)
    )
    return base


def _part_union(spec: type[BaseModel], settings: type[_Strict], kind: str) -> Any:
    """The four forms of one kind of part, as a discriminated union."""
    by_model = create_model(
        f"{kind}ByModel",
        __base__=settings,
        __doc__=f"A catalog {kind} by name, with per-build settings.",
        model=(str, Field(min_length=1, description="catalog name (case and spacing forgiven)")),
    )
    inline = create_model(
        f"{kind}InlineSpec",
        __base__=settings,
        __doc__=f"An inline {kind} not in the catalog, with per-build settings.",
        spec=(spec, ...),
    )
    setting_names = set(settings.model_fields)

    def _some_field(self: BaseModel) -> BaseModel:
        if not self.model_fields_set - setting_names:
            raise ValueError("give a catalog 'model' name or an inline 'spec'")
        return self

    fields = create_model(
        f"{kind}Fields",
        __base__=(spec, settings, _one_spec_field(spec)),
        __doc__=f"An inline {kind} written as its fields, with per-build settings.",
        __validators__={"_some_field": model_validator(mode="after")(_some_field)},  # type: ignore[dict-item]
    )
    return Annotated[
        Annotated[str, Tag("by-name")]
        | Annotated[by_model, Tag("by-model")]
        | Annotated[inline, Tag("inline-spec")]
        | Annotated[fields, Tag("spec-fields")],
        Discriminator(
            part_form,
            custom_error_type="part_form",
            custom_error_message=FORM_ERROR,
        ),
    ]


if TYPE_CHECKING:
    GPUPart = Any
    CPUPart = Any
    MotherboardPart = Any
    PSUPart = Any
    CasePart = Any
    StoragePart = Any
    PlatformPart = Any
    LoopPartEntry = Any
else:
    GPUPart = _part_union(GPUSpec, _GPUSettings, "GPU")
    CPUPart = _part_union(CPUSpec, _CountSetting, "CPU")
    MotherboardPart = _part_union(MotherboardSpec, _NoSettings, "Motherboard")
    PSUPart = _part_union(PSUSpec, _CountSetting, "PSU")
    CasePart = _part_union(CaseSpec, _NoSettings, "Case")
    StoragePart = _part_union(StorageSpec, _StorageSettings, "Storage")
    PlatformPart = _part_union(PlatformSpec, _NoSettings, "Platform")
    LoopPartEntry = _part_union(LoopPartSpec, _CountSetting, "LoopPart")


class MemoryEntry(_Strict):
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


class NetworkEntry(_Strict):
    kind: NetworkKind = NetworkKind.ETHERNET
    gbit_s: GbitPerSecond
    adapters_per_node: Annotated[int, Field(gt=0, le=64)] = 1


class PricesEntry(_Strict):
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


class MeasuredGPUEntry(_Strict):
    """One GPU (with `index`) or every GPU of one model: what the probe measured on it."""

    model: str = Field(min_length=1, description="the GPU's name as the build's gpus name it")
    index: Annotated[int, Field(ge=0, lt=MAX_PART_COUNT)] | None = None
    matmul_tflops: dict[Precision, MeasuredTflops] = Field(
        default_factory=dict, description="dense matmul TFLOPS per precision (fp32, fp16, ...)"
    )
    memory_bandwidth_gb_s: MeasuredGBs | None = None
    h2d_pinned_gb_s: MeasuredGBs | None = None
    h2d_pageable_gb_s: MeasuredGBs | None = None


class MeasuredStorageEntry(_Strict):
    """One drive's sequential read: at `read_queue_depth` (deep) and at queue depth 1."""

    model: str = Field(min_length=1, description="the drive's name as the build's storage names it")
    read_mb_s: MeasuredMBs
    read_queue_depth: Annotated[int, Field(ge=1, le=65_536)] = 1
    read_mb_s_qd1: MeasuredMBs | None = None


def _iso_text(value: Any) -> Any:
    """A YAML or TOML date (`taken: 2026-12-03`, unquoted) as the ISO text it was written as."""
    return value.isoformat() if isinstance(value, dt.date | dt.time) else value


class MeasuredBlock(_Strict):
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


class BuildFile(_Strict):
    """The top level of a build file (design.md)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        allow_inf_nan=False,
        coerce_numbers_to_str=True,
        defer_build=True,
    )

    name: str = "unnamed build"
    gpus: Annotated[
        Annotated[list[GPUPart], Tag("list")] | Annotated[GPUPart, Tag("one")],
        Discriminator(_one_or_list),
    ] = Field(default_factory=list)
    cpu: CPUPart | None = None
    motherboard: MotherboardPart | None = None
    platform: PlatformPart | None = None
    memory: str | MemoryEntry | None = Field(
        default=None, description="a catalog kit name, or {size_gb, type, speed_mt_s, ...}"
    )
    storage: Annotated[
        Annotated[list[StoragePart], Tag("list")] | Annotated[StoragePart, Tag("one")],
        Discriminator(_one_or_list),
    ] = Field(default_factory=list)
    psu: PSUPart | None = None
    case: CasePart | None = None
    loop: list[LoopPartEntry] = Field(
        default_factory=list,
        max_length=64,
        description="a custom water loop's parts (catalog `cooling` names or inline specs, each "
        "with a count): GPU blocks, radiators, the pump and the fittings",
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


SPEC_MODELS: dict[str, type[BaseModel]] = {
    "gpus": GPUSpec,
    "cpu": CPUSpec,
    "motherboard": MotherboardSpec,
    "psu": PSUSpec,
    "case": CaseSpec,
    "storage": StorageSpec,
    "platform": PlatformSpec,
    "memory": MemoryKit,
    "loop": LoopPartSpec,
}
