"""The build file as written by a user (YAML or TOML), validated with pydantic.

A part is written in one of four forms, declared as a union so that the JSON Schema
(`dlrig schema build`) says what users may write: a catalog name (a string), `{model: NAME,
...settings}`, an inline `{spec: {...}, ...settings}`, or the spec's fields written directly
(`{kind: hdd, read_mb_s: 180}`). An inline spec may give any subset of the catalog's fields;
only `name` matters and even it has a default (machine/partial.py fills in the rest).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Tag, create_model, model_validator
from pydantic.config import JsonDict

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
from dlrig.machine.named import (
    FORM_ERROR,
    LOOP_DESCRIPTION,
    MAX_LOOP_PARTS,
    MAX_NODES,
    MAX_PART_COUNT,
    SETTINGS,
    Count,
    MeasuredBlock,
    MemoryEntry,
    NamedBuildFile,
    NetworkEntry,
    PricesEntry,
    forms,
    one_or_list,
    part_form,
)
from dlrig.machine.partial import inline_spec_model

__all__ = [
    "FORM_ERROR",
    "MAX_NODES",
    "MAX_PART_COUNT",
    "SPEC_MODELS",
    "BuildFile",
    "Count",
    "MeasuredBlock",
    "MemoryEntry",
    "NetworkEntry",
    "PricesEntry",
    "part_form",
]

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


def _one_spec_field(spec: type[BaseModel]) -> type[BaseModel]:
    """A base whose only job is the JSON Schema of the fields form: at least one of the spec's
    fields, as the loader asks (`{}` or a bare `{count: 2}` names no part)."""
    extra: JsonDict = {"anyOf": [{"required": [name]} for name in spec.model_fields]}
    base: type[BaseModel] = create_model(
        f"{spec.__name__}AnyField", __config__=ConfigDict(json_schema_extra=extra, defer_build=True)
    )
    return base


def _part_union(spec: type[BaseModel], kind: str) -> Any:
    """The four forms of one kind of part, as a discriminated union."""
    settings = SETTINGS[kind]
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
    return forms(kind, Annotated[inline, Tag("inline-spec")], Annotated[fields, Tag("spec-fields")])


if TYPE_CHECKING:
    GPUPart = Any
    CPUPart = Any
    MotherboardPart = Any
    PSUPart = Any
    CasePart = Any
    StoragePart = Any
    PlatformPart = Any
    LoopPartEntry = Any
    GPUParts = Any
    StorageParts = Any
else:
    GPUPart = _part_union(GPUSpec, "GPU")
    CPUPart = _part_union(CPUSpec, "CPU")
    MotherboardPart = _part_union(MotherboardSpec, "Motherboard")
    PSUPart = _part_union(PSUSpec, "PSU")
    CasePart = _part_union(CaseSpec, "Case")
    StoragePart = _part_union(StorageSpec, "Storage")
    PlatformPart = _part_union(PlatformSpec, "Platform")
    LoopPartEntry = _part_union(LoopPartSpec, "LoopPart")
    GPUParts = one_or_list(GPUPart)
    StorageParts = one_or_list(StoragePart)


class BuildFile(NamedBuildFile):
    """The top level of a build file (design.md)."""

    # The part fields of NamedBuildFile, in all four forms (each keeps its place and default).
    gpus: GPUParts = Field(default_factory=list)
    cpu: CPUPart | None = None
    motherboard: MotherboardPart | None = None
    platform: PlatformPart | None = None
    storage: StorageParts = Field(default_factory=list)
    psu: PSUPart | None = None
    case: CasePart | None = None
    loop: list[LoopPartEntry] = Field(
        default_factory=list, max_length=MAX_LOOP_PARTS, description=LOOP_DESCRIPTION
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
