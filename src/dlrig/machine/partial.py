"""Partial inline specs: a part the user knows only in part (design.md: only `name` is required).

The inline spec models accept any subset of the catalog's fields. Resolving one fills each
required field the user left out with a stated default below and records it in the part's
`unknown_fields`: the rules that read such a field report `unknown:` instead of judging
(rules/engine.py), and the model lists every default it used among its assumptions.
"""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic
from pydantic import BaseModel

from dlrig.catalog.schema import (
    CPU,
    GPU,
    PSU,
    Case,
    LoopPart,
    Motherboard,
    PartBase,
    PCIeSlot,
    Platform,
    Storage,
    optional_fields_model,
)
from dlrig.enums import FormFactor, Interconnect, LoopRole, PSUEfficiency, StorageKind
from dlrig.io.validation import to_validation_error

P = TypeVar("P", bound=PartBase)

# A field that no catalog part can match on: the rules that compare it say `unknown:`.
UNKNOWN_TEXT = "unknown"

# Stated defaults for the catalog's required fields. Figures are those the model already
# assumes for a missing part (model/device.py's "8-core 3 GHz CPU", PSU.1's 150 W CPU, a Gold
# PSU as model/estimate.py); the others are a modest current desktop part, so that a partial
# spec never makes a build look faster or roomier than a typical one.
DEFAULTS: dict[type[PartBase], dict[str, Any]] = {
    GPU: {
        "memory_gb": 8.0,
        "memory_bandwidth_gb_s": 450.0,
        "fp32_tflops": 10.0,
        "tdp_w": 300.0,
    },
    CPU: {
        "family": "custom",
        "cores": 8,
        "threads": 16,
        "base_ghz": 3.0,
        "pcie_lanes": 24,
        "pcie_gen": 4,
        "memory_channels": 2,
        "memory_type": UNKNOWN_TEXT,
        "tdp_w": 150.0,
        "socket": UNKNOWN_TEXT,
    },
    Motherboard: {
        "socket": UNKNOWN_TEXT,
        "memory_type": UNKNOWN_TEXT,
        "memory_slots": 4,
        "max_memory_gb": 128.0,
        # A workstation layout: x16 slots at every other position, wired x16 gen 4 from the CPU.
        "x16_slots": tuple(PCIeSlot(position=p, lanes=16, gen=4) for p in (1, 3, 5, 7)),
    },
    PSU: {"watts": 1000.0, "efficiency": PSUEfficiency.GOLD},
    Case: {"max_gpu_length_mm": 300.0, "expansion_slots": 7},
    Storage: {"kind": StorageKind.SATA_SSD, "capacity_tb": 1.0, "read_mb_s": 500.0},
    Platform: {
        "max_gpus": 8,
        "gpu_form": FormFactor.PCIE,
        "interconnect": Interconnect.PCIE,
        "cpu_socket": UNKNOWN_TEXT,
        "memory_type": UNKNOWN_TEXT,
        "memory_slots": 16,
        "max_memory_gb": 1024.0,
        "psu_watts": 2000.0,
    },
    # A loop part that does not say what it is counts as a line of fittings: it cools nothing.
    LoopPart: {"role": LoopRole.FITTINGS},
}

DEFAULT_NAMES: dict[type[PartBase], str] = {
    GPU: "custom GPU",
    CPU: "custom CPU",
    Motherboard: "custom motherboard",
    PSU: "custom PSU",
    Case: "custom case",
    Storage: "custom storage",
    Platform: "custom platform",
    LoopPart: "custom loop part",
}


def inline_spec_model(catalog_type: type[PartBase]) -> type[BaseModel]:
    """The model of an inline spec of catalog_type: its fields, any subset of them."""
    return optional_fields_model(
        catalog_type,
        f"{catalog_type.__name__}Spec",
        f"An inline {catalog_type.__name__}: any of the catalog's fields (only `name` matters).",
        default_name=DEFAULT_NAMES[catalog_type],
    )


def resolve_spec(catalog_type: type[P], fields: dict[str, Any], where: str) -> P:
    """The catalog part an inline spec's fields describe, with stated defaults for the rest."""
    # An explicit null (`memory_gb: ~`) says "not known", as leaving the key out does.
    given = {k: v for k, v in fields.items() if v is not None or k not in DEFAULTS[catalog_type]}
    given.setdefault("name", DEFAULT_NAMES[catalog_type])
    missing = {k: v for k, v in DEFAULTS[catalog_type].items() if k not in given}
    if catalog_type is CPU and "threads" in missing and "cores" in given:
        # One thread per core (no SMT) rather than a fixed 16 that may be below the cores given.
        missing["threads"] = given["cores"]
    try:
        part = catalog_type.model_validate({**missing, **given})
    except pydantic.ValidationError as exc:
        raise to_validation_error(where, exc, catalog_type) from None
    part._unknown_fields = frozenset(missing)
    return part


def describe_default(field: str, value: Any) -> str:
    """A default as the assumptions list says it (`x16_slots` is a layout, not a value)."""
    if field == "x16_slots":
        return "x16 slots at positions 1, 3, 5, 7 (x16 gen 4 from the CPU)"
    return str(value.value if hasattr(value, "value") else value)
