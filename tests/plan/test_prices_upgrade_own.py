"""Issue 11 on `upgrade`: parts the user already has beyond the build (`upgrade --own FILE`, the
same file as `plan --own`) cost nothing when upgrade proposes them ("I have a spare RTX 6000 Ada
and a 1500 W PSU"), and the verdict and the gain column speak the user's currency.

examples/builds/2x-rtx6000-ada-xeon.toml holds two RTX 6000 Ada on an 1100 W PSU; a third card
needs a >= 1400 W PSU (PSU.1, size_build_psu), which upgrade adds as the Corsair HX1500i. The
card's street price is USD 6,956 (gpus.toml: Of Zen and Computing, March 2026)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from dlrig.catalog.loader import load_catalog
from dlrig.catalog.prices import unit_price_usd
from dlrig.catalog.schema import GPU, PSU

XEON_2X6000 = str(Path(__file__).parents[2] / "examples" / "builds" / "2x-rtx6000-ada-xeon.toml")
CARD = "NVIDIA RTX 6000 Ada Generation"
PSU_1500 = "Corsair HX1500i (2023)"
ADD_ONE = f"add 1x {CARD} (3 in all) + PSU -> {PSU_1500} (PSU.1: 1400 W)"


def upgrade(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # on a 240 V line: four cards draw more than a 15 A outlet carries (PSU.6)
        [sys.executable, "-m", "dlrig", "upgrade", XEON_2X6000, "-w", "resnet50",
         "--circuit", "us-240v-30a", *args],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "COLUMNS": "240"},  # a wide table: no header wrapped
    )  # fmt: skip


def upgrade_json(*args: str) -> dict[str, Any]:
    result = upgrade("--json", *args)
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_a_spare_card_and_psu_the_user_owns_cost_nothing(tmp_path: Path) -> None:
    own = tmp_path / "own.yaml"
    own.write_text(f"gpus:\n  - model: {CARD}\n    count: 1\npsu: {PSU_1500}\n")
    doc = upgrade_json("--budget", "100", "--own", str(own))
    best = doc["changes"][0]
    assert best["change"] == ADD_ONE
    assert best["price_usd"] == 0.0 and best["bought_prices"] == []
    assert doc["verdict"].startswith(f"best next dollar: {ADD_ONE} for 0 USD")
    # Without --own the same change is bought: the card's and the PSU's catalog prices.
    cat = load_catalog()
    bought = (unit_price_usd(cat.find(GPU, CARD)) or 0.0) + (
        unit_price_usd(cat.find(PSU, PSU_1500)) or 0.0
    )
    assert bought > 6956
    without = upgrade_json("--budget", "20000")
    (same,) = [c for c in without["changes"] if c["change"] == ADD_ONE]
    assert same["price_usd"] == round(bought, 2)
    assert ADD_ONE not in [c["change"] for c in upgrade_json("--budget", "100")["changes"]]


def test_owning_one_spare_card_pays_for_the_second_of_two_added(tmp_path: Path) -> None:
    own = tmp_path / "own.toml"
    own.write_text(f'[[gpus]]\nmodel = "{CARD}"\ncount = 1\n')
    doc = upgrade_json("--budget", "20000", "--own", str(own))
    cat = load_catalog()
    card = unit_price_usd(cat.find(GPU, CARD)) or 0.0
    (two,) = [c for c in doc["changes"] if c["steps"][0] == f"add 2x {CARD} (4 in all)"]
    psu = sum(
        unit_price_usd(cat.find(PSU, step.split("-> ")[1].split(" (PSU.1")[0])) or 0.0
        for step in two["steps"][1:]
        if step.startswith("PSU -> ")
    )
    assert two["price_usd"] == round(card + psu, 2)  # one card bought, one owned


def test_an_unknown_owned_part_is_one_line_exit_2_naming_file_and_field(tmp_path: Path) -> None:
    own = tmp_path / "own.yaml"
    own.write_text("gpus:\n  - model: RTX 6000 Adda\n")
    result = upgrade("--budget", "1000", "--own", str(own))
    assert result.returncode == 2
    assert "own.yaml: gpus.0: unknown part 'RTX 6000 Adda'" in result.stderr
    assert "closest catalog names" in result.stderr and "Traceback" not in result.stderr


def test_the_verdict_and_the_gain_column_speak_the_users_currency() -> None:
    # --fx-rate 2 GBP per USD: the verdict's price is twice its USD figure, in GBP; the gain
    # column is per 1000 GBP (half the gain per 1000 USD).
    doc = upgrade_json("--budget", "40000", "--currency", "GBP", "--fx-rate", "2")
    best = doc["changes"][0]
    assert f"for {best['price_usd'] * 2:,.0f} GBP" in doc["verdict"]
    assert " USD" not in doc["verdict"]
    text = upgrade("--budget", "40000", "--currency", "GBP", "--fx-rate", "2")
    assert text.returncode == 0, text.stderr
    flat = " ".join(text.stdout.split())
    assert "per 1000 GBP" in flat and "per 1000 USD" not in flat
    # (a swap whose old cards sell for more than the new ones cost has no finite gain per 1000)
    finite = next(c for c in doc["changes"] if c["gain_per_1000_usd"] is not None)
    assert f"+{finite['gain_per_1000_usd'] / 2:.1%}" in flat
