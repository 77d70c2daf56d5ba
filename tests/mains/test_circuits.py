"""The circuits a build is judged on (mains/data/circuits.toml), each continuous limit from its
source, and the names a user writes."""

from __future__ import annotations

import pytest

from dlrig.errors import ValidationError
from dlrig.mains import DEFAULT_CIRCUIT, find_mains, load_circuits


def circuit(name: str) -> tuple[float, float, float]:
    c = find_mains(name, where="test", origin="test").circuit
    return c.volts, c.continuous_w, c.nameplate_w


def test_nec_continuous_loads_use_80_percent_of_the_breaker() -> None:
    """NEC 210.19(A)(1), 210.20(A) (and Table 210.21(B)(2): 12 A on a 15 A receptacle, 16 A on
    a 20 A one): 0.8 x 15 A x 120 V = 1,440 W; 0.8 x 20 A x 120 V = 1,920 W; 240 V / 30 A:
    5,760 W."""
    assert circuit("us-15a") == (120, 0.8 * 15 * 120, 1800) == (120, 1440, 1800)
    assert circuit("us-20a") == (120, 1920, 2400)
    assert circuit("us-240v-30a") == (240, 0.8 * 30 * 240, 7200)
    assert circuit("us-208v-30a")[1] == pytest.approx(0.8 * 30 * 208)


def test_230_v_circuits_carry_their_sources_figures() -> None:
    """Stromnetz Berlin: a Schuko socket carries an hours-long load up to 2.8 kW; a BS 1363
    socket 10 A continuous (2,300 W at 230 V); a Chinese 10 A / 220 V socket 1,760 W (80%)."""
    assert circuit("eu-16a")[1] == 2800
    assert circuit("uk-13a")[1] == 10 * 230
    assert circuit("cn-10a")[1] == 0.8 * 10 * 220


def test_every_circuit_cites_its_continuous_figure() -> None:
    for c in load_circuits():
        assert len(c.source.split()) >= 8, c.name
        assert c.continuous_w <= c.nameplate_w, c.name


def test_names_counts_and_aliases() -> None:
    two = find_mains("2x-us-15a", where="t", origin="t")
    assert (two.circuit.name, two.count, two.name, two.continuous_w) == (
        "us-15a",
        2,
        "2x-us-15a",
        2880,
    )
    assert find_mains("2 x US-15A", where="t", origin="t") == two
    assert find_mains("schuko", where="t", origin="t").circuit.name == "eu-16a"
    assert find_mains(DEFAULT_CIRCUIT, where="t", origin="t").circuit.low_line


def test_an_unknown_circuit_names_the_field_and_the_closest_ones() -> None:
    with pytest.raises(ValidationError) as caught:
        find_mains("us-16a", where="b.yaml: field 'circuit'", origin="build file")
    assert str(caught.value).startswith("b.yaml: field 'circuit': unknown circuit 'us-16a'")
    assert caught.value.hint is not None and "us-15a" in caught.value.hint
    with pytest.raises(ValidationError, match="expected 1 to 16"):
        find_mains("40x-us-15a", where="--circuit", origin="--circuit")
