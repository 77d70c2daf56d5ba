"""Issue 11 on `upgrade`: the parts a change buys are listed with their prices, also when the
change adds more of a card the build already has (the list was empty for "add 1x <the build's
card>": bought_prices compared part names, and the build already named the card).

examples/builds/2x-rtx6000-ada-xeon.toml holds two RTX 6000 Ada on an 1100 W PSU; a third card
needs a >= 1400 W PSU (PSU.1), which upgrade adds as the Corsair HX1500i."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dlrig.catalog.loader import load_catalog
from dlrig.catalog.prices import unit_price_usd
from dlrig.catalog.schema import GPU

XEON_2X6000 = str(Path(__file__).parents[2] / "examples" / "builds" / "2x-rtx6000-ada-xeon.toml")
CARD = "NVIDIA RTX 6000 Ada Generation"
PSU_1500 = "Corsair HX1500i (2023)"


def changes(*args: str) -> dict[str, dict[str, Any]]:
    result = subprocess.run(
        # on a 240 V line: three and four cards draw more than a 15 A outlet carries (PSU.6)
        [sys.executable, "-m", "dlrig", "upgrade", XEON_2X6000, "-w", "resnet50", "--json",
         "--circuit", "us-240v-30a", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return {c["change"]: c for c in doc["changes"]}


def bought(change: dict[str, Any]) -> dict[str, tuple[int, float]]:
    return {p["part"]: (p["count"], p["unit_price_usd"]) for p in change["bought_prices"]}


def test_upgrade_lists_the_extra_card_it_buys_of_a_model_the_build_has() -> None:
    card_usd = unit_price_usd(load_catalog().find(GPU, CARD)) or 0.0
    found = changes("--budget", "20000")
    add_one = found[f"add 1x {CARD} (3 in all) + PSU -> {PSU_1500} (PSU.1: 1400 W)"]
    assert bought(add_one)[CARD] == (1, round(card_usd, 2))
    assert PSU_1500 in bought(add_one)
    (add_two,) = [c for c in found.values() if c["steps"][0] == f"add 2x {CARD} (4 in all)"]
    assert bought(add_two)[CARD] == (2, round(card_usd, 2))


def test_upgrade_leaves_a_spare_card_the_user_owns_out_of_what_it_buys(tmp_path: Path) -> None:
    own = tmp_path / "own.yaml"
    own.write_text(f"gpus:\n  - model: {CARD}\n    count: 1\n")
    found = changes("--budget", "20000", "--own", str(own))
    (add_one,) = [c for c in found.values() if c["steps"][0] == f"add 1x {CARD} (3 in all)"]
    assert CARD not in bought(add_one)  # the owned spare
    (add_two,) = [c for c in found.values() if c["steps"][0] == f"add 2x {CARD} (4 in all)"]
    assert bought(add_two)[CARD][0] == 1  # one owned, one bought


@pytest.mark.parametrize("budget", ["3000", "20000"])
def test_every_upgrade_price_is_the_sum_of_the_parts_it_lists_as_bought(budget: str) -> None:
    # Water cooling is priced by COOL.4's kit estimate, not a catalog part: it lists none.
    for name, change in changes("--budget", budget).items():
        if "water cooling" in name:
            continue
        listed = sum(count * unit for count, unit in bought(change).values())
        assert listed == pytest.approx(change["price_usd"], abs=0.05), name
