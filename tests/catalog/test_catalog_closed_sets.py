"""Closed sets of the catalog: every PSU efficiency tier has its efficiency, every part kind its
model, and a value outside a set is refused with the set named."""

from __future__ import annotations

import pytest

from dlrig.catalog import load_catalog
from dlrig.catalog.schema import PART_MODELS
from dlrig.enums import PartKind, PSUEfficiency
from dlrig.errors import CatalogError
from dlrig.model.calibration import default_calibration


def test_every_efficiency_tier_has_an_efficiency() -> None:
    """PSU.3 and the energy model look a tier up: no tier may be missing from the table."""
    assert set(default_calibration().psu_efficiency) == {t.value for t in PSUEfficiency}


def test_every_part_kind_has_a_model_and_data() -> None:
    assert set(PART_MODELS) == set(PartKind)
    catalog = load_catalog()
    assert all(catalog.of(kind) for kind in PartKind)


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ({"name": "X PSU", "watts": 850, "efficiency": "unobtainium"}, "efficiency"),
        ({"name": "X PSU", "watts": float("inf"), "efficiency": "gold"}, "watts"),
        ({"name": "X PSU", "watts": 1e308, "efficiency": "gold"}, "watts"),
    ],
)
def test_a_value_outside_its_set_or_range_is_refused(entry: dict[str, object], needle: str) -> None:
    with pytest.raises(CatalogError) as err:
        load_catalog().with_overrides({"psus": [entry]}, "mine.yaml")
    assert f"field '{needle}'" in err.value.message
    assert "mine.yaml: psus.0" in err.value.message
