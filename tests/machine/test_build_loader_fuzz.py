"""Random documents into the loader: it raises dlrig's own errors and nothing else, and what it
accepts survives build_to_document unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlrig.catalog import load_catalog
from dlrig.errors import DlrigError
from dlrig.io.documents import parse_text
from dlrig.machine import resolve_build
from dlrig.machine.document import build_to_document
from dlrig.machine.schema import SPEC_MODELS, BuildFile

CATALOG = load_catalog()
NAMES = [p.name for kind in ("gpus", "cpus", "motherboards", "psus") for p in CATALOG.of(kind)][:40]
KEYS = sorted(
    set(BuildFile.model_fields)
    | {k for m in SPEC_MODELS.values() for k in m.model_fields}
    | {"model", "spec", "count", "pcie", "gen", "lanes", "cooler", "holds_dataset", "size_gb"}
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(NAMES),
    st.sampled_from(["blower", "open-air", "nvme", "hdd", "DDR5", "gold", "pcie", "sxm"]),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), inner, max_size=5),
    ),
    max_leaves=25,
)
documents = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)


@pytest.mark.slow
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents)
def test_resolve_build_raises_only_dlrig_errors(doc: dict[str, Any]) -> None:
    try:
        build = resolve_build(doc, "fuzz.yaml", CATALOG)
    except DlrigError:
        return
    # Whatever the loader accepts, the document writer gives back unchanged.
    again = resolve_build(build_to_document(build, CATALOG), "fuzz.yaml", CATALOG)
    assert again == build


@settings(max_examples=300)
@given(
    text=st.one_of(
        st.text(max_size=200),
        st.lists(
            st.sampled_from(["a:", " - x", "[", "]", "{", "=", '"', "\n", "[[g]]", "k = 1"])
        ).map("".join),
    ),
    name=st.sampled_from(["f.yaml", "f.toml", "f.json", "<stdin>"]),
)
def test_parse_text_raises_only_dlrig_errors(text: str, name: str) -> None:
    try:
        doc = parse_text(name, text)
    except DlrigError:
        return
    assert isinstance(doc, dict)


GPU_NAMES = [g.name for g in CATALOG.gpus]
near_valid = st.fixed_dictionaries(
    {
        "gpus": st.lists(
            st.fixed_dictionaries(
                {"model": st.sampled_from(GPU_NAMES), "count": st.integers(-1, 9)},
                optional={
                    "pcie": st.fixed_dictionaries({"lanes": st.sampled_from([0, 1, 4, 8, 16])}),
                    "cooler": st.sampled_from(["blower", "open-air", "passive", "water", "fan"]),
                },
            ),
            max_size=3,
        )
    },
    optional={
        "cpu": st.sampled_from([c.name for c in CATALOG.cpus] or ["none"]),
        "motherboard": st.sampled_from([m.name for m in CATALOG.motherboards] or ["none"]),
        "memory": st.fixed_dictionaries({"size_gb": st.floats(-8, 4096)}),
        "psu": st.fixed_dictionaries(
            {"watts": st.floats(-1, 5000), "pcie_8pin": st.integers(-1, 12)}
        ),
        "case": st.fixed_dictionaries(
            {"max_gpu_length_mm": st.floats(0, 500), "expansion_slots": st.integers(0, 10)}
        ),
        "nodes": st.integers(-1, 4),
    },
)


@settings(max_examples=300)
@given(doc=near_valid)
def test_near_valid_builds_load_round_trip_and_check(doc: dict[str, Any]) -> None:
    """Plausible builds (catalog names, edge-case numbers): loading raises only dlrig errors,
    and every build that loads round-trips and can be checked."""
    from dlrig.rules import check_build

    try:
        build = resolve_build(doc, "fuzz.yaml", CATALOG)
    except DlrigError:
        return
    assert resolve_build(build_to_document(build, CATALOG), "fuzz.yaml", CATALOG) == build
    result = check_build(build)
    assert result.ok == (not result.errors)
