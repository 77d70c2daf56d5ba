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


# Words that make a different part of the same number: an RTX 3090 is not an RTX 3090 Ti.
_SUFFIXES = frozenset({"ti", "super", "xt", "xtx"})


def _model_tokens(name: str) -> tuple[frozenset[str], frozenset[str]]:
    """(tokens with a digit: '3060', 'i9', '13900k', 'w5', '3435x'; suffix words) of a name."""
    tokens = re.findall(r"[a-z0-9]+", name.lower())
    return (
        frozenset(t for t in tokens if any(c.isdigit() for c in t)),
        frozenset(t for t in tokens if t in _SUFFIXES),
    )


def _same_model(reported: str, label: str) -> bool:
    """Model numbers match exactly: every numbered token of the catalog label is in the reported
    name and the suffix words agree (fuzzy matching is for the words around the numbers only)."""
    numbers, suffixes = _model_tokens(reported)
    label_numbers, label_suffixes = _model_tokens(label)
    named_alike = bool(label_numbers) or not numbers  # "TITAN V": no number on either side
    return named_alike and label_numbers <= numbers and suffixes == label_suffixes


def _match(catalog: Catalog, model: type[P], parts: tuple[P, ...], name: str) -> P | None:
    cleaned = clean_name(name)
    for candidate in (name, cleaned):
        try:
            part = catalog.find(model, candidate)
        except UnknownPartError:
            continue
        if any(_same_model(cleaned, label) for label in (part.name, *part.aliases)):
            return part
    labels: dict[str, tuple[str, P]] = {}
    for part in parts:
        for label in (part.name, *part.aliases):
            if _same_model(cleaned, label):
                labels.setdefault(normalize(label), (label, part))
    key = normalize(cleaned)
    if key in labels:
        return labels[key][1]
    close = difflib.get_close_matches(key, list(labels), n=1, cutoff=_CUTOFF)
    return labels[close[0]][1] if close else None


def match_gpu(catalog: Catalog, name: str | None) -> GPU | None:
    """The catalog GPU an NVML or torch name denotes, None when none is close."""
    return None if not name else _match(catalog, GPU, catalog.gpus, name)


def match_cpu(catalog: Catalog, name: str | None) -> CPU | None:
    """The catalog CPU a /proc/cpuinfo model name denotes, None when none is close."""
    return None if not name else _match(catalog, CPU, catalog.cpus, name)


def match_storage(catalog: Catalog, name: str | None) -> Storage | None:
    """The catalog drive a /sys/block model string denotes, None when none is close."""
    return None if not name else _match(catalog, Storage, catalog.storage, name)
