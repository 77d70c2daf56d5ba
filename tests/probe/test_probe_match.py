"""Reported part names matched to the catalog: model numbers exactly, fuzzy only around them."""

from __future__ import annotations

import re

import pytest

from dlrig.catalog import load_catalog
from dlrig.probe.match import match_cpu, match_gpu

CATALOG = load_catalog()


# Issue 12: difflib at cutoff 0.86 mapped each of these to the catalog's neighbour on the right.
@pytest.mark.parametrize(
    ("reported", "not_this"),
    [
        ("NVIDIA GeForce RTX 3060", "3090"),
        ("NVIDIA GeForce RTX 4060", "4090"),
        ("NVIDIA GeForce RTX 4060 Ti", "3090 Ti"),
    ],
)
def test_a_gpu_never_maps_to_a_neighbour_with_another_number(reported: str, not_this: str) -> None:
    part = match_gpu(CATALOG, reported)
    number = reported.split()[-2] if reported.endswith("Ti") else reported.split()[-1]
    assert part is None or number in part.name, part
    assert part is None or not part.name.endswith(not_this)


@pytest.mark.parametrize(
    ("reported", "number"),
    [
        ("13th Gen Intel(R) Core(TM) i9-13900K", "13900K"),
        ("Intel(R) Xeon(R) w5-3435X", "3435X"),
    ],
)
def test_a_cpu_never_maps_to_a_neighbour_with_another_number(reported: str, number: str) -> None:
    part = match_cpu(CATALOG, reported)
    assert part is None or number.lower() in part.name.lower(), part


def test_the_catalog_neighbours_are_there_to_be_confused_with() -> None:
    # The negative tests above only mean something while the neighbours are in the catalog.
    names = [g.name for g in CATALOG.gpus] + [c.name for c in CATALOG.cpus]
    for neighbour in ("3090", "4090", "3090 Ti", "14900K", "w9-3495X"):
        assert any(neighbour in name for name in names), neighbour


def test_every_catalog_gpu_maps_to_itself_and_to_no_neighbour() -> None:
    for gpu in CATALOG.gpus:
        assert match_gpu(CATALOG, f"NVIDIA {gpu.name}") is gpu, gpu.name


def _neighbours(name: str) -> list[str]:
    """The name with its last model number moved by 10 and 20 (a card one step up or down)."""
    numbers = list(re.finditer(r"\d{3,}", name))
    if not numbers:
        return []
    last = numbers[-1]
    out = []
    for step in (-20, -10, 10, 20):
        value = int(last.group()) + step
        if value > 0:
            out.append(name[: last.start()] + str(value) + name[last.end() :])
    return out


def test_a_number_one_step_away_from_a_catalog_gpu_never_maps_to_it() -> None:
    checked = 0
    for gpu in CATALOG.gpus:
        for neighbour in _neighbours(gpu.name):
            part = match_gpu(CATALOG, neighbour)
            assert part is not gpu, (neighbour, gpu.name)
            checked += 1
    assert checked > 20
