"""Names as the hardware reports them ("NVIDIA GeForce RTX 3090", "AMD Ryzen Threadripper 7960X
24-Cores") matched to catalog parts. Pure: the catalog is passed in."""

from __future__ import annotations

import difflib
import re
from typing import TypeVar

from dlrig.catalog.loader import Catalog, normalize
from dlrig.catalog.schema import CPU, GPU, PartBase, Storage
from dlrig.errors import UnknownPartError

P = TypeVar("P", bound=PartBase)

# What vendors add around a model name in NVML, /proc/cpuinfo and /sys/block/*/device/model.
_NOISE = re.compile(
    r"\(r\)|\(tm\)|\bnvidia\b|\bcpu\b|\bprocessor\b|\bwith radeon graphics\b|"
    r"@\s*[\d.]+\s*ghz|\b\d+-cores?\b|\b\d+-core processor\b",
    re.IGNORECASE,
)
_CUTOFF = 0.86  # close enough that "RTX 3090" never matches "RTX 3090 Ti" over "RTX 3090"


def clean_name(name: str) -> str:
    """A reported name without the vendor's decorations."""
    return re.sub(r"\s+", " ", _NOISE.sub(" ", name)).strip()


def _match(catalog: Catalog, model: type[P], parts: tuple[P, ...], name: str) -> P | None:
    cleaned = clean_name(name)
    for candidate in (name, cleaned):
        try:
            return catalog.find(model, candidate)
        except UnknownPartError:
            continue
    labels: dict[str, P] = {}
    for part in parts:
        for label in (part.name, *part.aliases):
            labels.setdefault(normalize(label), part)
    key = normalize(cleaned)
    if key in labels:
        return labels[key]
    close = difflib.get_close_matches(key, list(labels), n=1, cutoff=_CUTOFF)
    return labels[close[0]] if close else None


def match_gpu(catalog: Catalog, name: str | None) -> GPU | None:
    """The catalog GPU an NVML or torch name denotes, None when none is close."""
    return None if not name else _match(catalog, GPU, catalog.gpus, name)


def match_cpu(catalog: Catalog, name: str | None) -> CPU | None:
    """The catalog CPU a /proc/cpuinfo model name denotes, None when none is close."""
    return None if not name else _match(catalog, CPU, catalog.cpus, name)


def match_storage(catalog: Catalog, name: str | None) -> Storage | None:
    """The catalog drive a /sys/block model string denotes, None when none is close."""
    return None if not name else _match(catalog, Storage, catalog.storage, name)
