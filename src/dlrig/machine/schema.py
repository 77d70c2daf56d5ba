"""The build file as written by a user (YAML or TOML), validated with pydantic.

A part is a catalog name (a string), `{model: NAME, ...settings}`, an inline `{spec: {...}}`, or
the spec's fields written directly (`{kind: hdd, read_mb_s: 180}`); `normalize_entry` turns the
last form into the third before validation so that unknown keys still get caught.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dlrig.catalog.schema import CPU, GPU, PSU, Case, MemoryKit, Motherboard, Platform, Storage
from dlrig.enums import CoolerType, NetworkKind

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
# No node holds more than this many parts of one kind: a larger count is a typo, and the rules
# look at every card, so an unbounded count would let one line of input take minutes.
MAX_PART_COUNT = 1024
Count = Annotated[int, Field(gt=0, le=MAX_PART_COUNT)]


class GPUSpec(GPU):
    name: str = "custom GPU"


class CPUSpec(CPU):
    name: str = "custom CPU"
    family: str = "custom"


class MotherboardSpec(Motherboard):
    name: str = "custom motherboard"


class PSUSpec(PSU):
    name: str = "custom PSU"
    efficiency: str = "gold"


class CaseSpec(Case):
    name: str = "custom case"


class StorageSpec(Storage):
    name: str = "custom storage"


class PlatformSpec(Platform):
    name: str = "custom platform"


def _lift_spec_fields(data: Any, spec_model: type[BaseModel], own: set[str]) -> Any:
    """Move inline spec fields (`{kind: hdd, read_mb_s: 180}`) under `spec`."""
    if not isinstance(data, dict) or "model" in data or "spec" in data:
        return data
    spec_fields = set(spec_model.model_fields)
    lifted = {k: v for k, v in data.items() if k in spec_fields and k not in own}
    if not lifted:
        return data
    rest = {k: v for k, v in data.items() if k not in lifted}
    return {**rest, "spec": lifted}


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None

    @model_validator(mode="after")
    def _model_or_spec(self) -> _Entry:
        if self.model is None and getattr(self, "spec", None) is None:
            raise ValueError("give a catalog 'model' name or an inline 'spec'")
        if self.model is not None and getattr(self, "spec", None) is not None:
            raise ValueError("give either 'model' or 'spec', not both")
        return self


class PCIeSetting(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    gen: PositiveInt | None = None
    lanes: PositiveInt | None = None


class GPUEntry(_Entry):
    spec: GPUSpec | None = None
    count: Count = 1
    pcie: PCIeSetting | None = None
    cooler: CoolerType | None = None

    @model_validator(mode="before")
    @classmethod
    def _lift(cls, data: Any) -> Any:
        return _lift_spec_fields(data, GPUSpec, {"count", "pcie", "cooler"})


class CPUEntry(_Entry):
    spec: CPUSpec | None = None
    count: Count = 1

    @model_validator(mode="before")
    @classmethod
    def _lift(cls, data: Any) -> Any:
        return _lift_spec_fields(data, CPUSpec, {"count"})


class MotherboardEntry(_Entry):
    spec: MotherboardSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _lift(cls, data: Any) -> Any:
        return _lift_spec_fields(data, MotherboardSpec, set())


class PSUEntry(_Entry):
    spec: PSUSpec | None = None
    count: Count = 1

    @model_validator(mode="before")
    @classmethod
    def _lift(cls, data: Any) -> Any:
        return _lift_spec_fields(data, PSUSpec, {"count"})


class CaseEntry(_Entry):
    spec: CaseSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _lift(cls, data: Any) -> Any:
        return _lift_spec_fields(data, CaseSpec, set())


class StorageEntry(_Entry):
    spec: StorageSpec | None = None
    count: Count = 1
    holds_dataset: bool | None = Field(
        default=None, description="the training data lives here (default: the fastest device)"
    )

    @model_validator(mode="before")
    @classmethod
    def _lift(cls, data: Any) -> Any:
        return _lift_spec_fields(data, StorageSpec, {"count", "holds_dataset"})


class PlatformEntry(_Entry):
    spec: PlatformSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _lift(cls, data: Any) -> Any:
        return _lift_spec_fields(data, PlatformSpec, set())


class MemoryEntry(BaseModel):
    """System RAM: a size (and optionally type and speed), or a catalog kit times a count."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = None
    count: Count = 1
    size_gb: PositiveFloat | None = None
    type: str | None = None
    speed_mt_s: PositiveInt | None = None
    price_usd: PositiveFloat | None = None

    @model_validator(mode="after")
    def _size_or_kit(self) -> MemoryEntry:
        if self.model is None and self.size_gb is None:
            raise ValueError("give 'size_gb' or a catalog kit 'model'")
        return self


class NetworkEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: NetworkKind = NetworkKind.ETHERNET
    gbit_s: PositiveFloat
    adapters_per_node: PositiveInt = 1


class PricesEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    electricity_per_kwh: Annotated[float, Field(ge=0)] = 0.20
    currency: str = "USD"
    co2_kg_per_kwh: Annotated[float, Field(ge=0)] = 0.4


def _as_entry(value: Any) -> Any:
    return {"model": value} if isinstance(value, str) else value


class BuildFile(BaseModel):
    """The top level of a build file (design.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "unnamed build"
    gpus: list[GPUEntry] = Field(default_factory=list)
    cpu: CPUEntry | None = None
    motherboard: MotherboardEntry | None = None
    platform: PlatformEntry | None = None
    memory: MemoryEntry | None = None
    storage: list[StorageEntry] = Field(default_factory=list)
    psu: PSUEntry | None = None
    case: CaseEntry | None = None
    nodes: PositiveInt = 1
    network: NetworkEntry | None = None
    prices: PricesEntry = Field(default_factory=PricesEntry)

    @model_validator(mode="before")
    @classmethod
    def _names_to_entries(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for key in ("cpu", "motherboard", "platform", "psu", "case", "memory"):
            if key in out:
                out[key] = _as_entry(out[key])
        for key in ("gpus", "storage"):
            if isinstance(out.get(key), list):
                out[key] = [_as_entry(v) for v in out[key]]
            elif isinstance(out.get(key), str | dict):
                out[key] = [_as_entry(out[key])]
        if isinstance(out.get("name"), int | float):
            out["name"] = str(out["name"])
        return out


SPEC_MODELS: dict[str, type[BaseModel]] = {
    "gpus": GPUSpec,
    "cpu": CPUSpec,
    "motherboard": MotherboardSpec,
    "psu": PSUSpec,
    "case": CaseSpec,
    "storage": StorageSpec,
    "platform": PlatformSpec,
    "memory": MemoryKit,
}
