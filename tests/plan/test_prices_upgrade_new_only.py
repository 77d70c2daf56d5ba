"""Issue 11 on `upgrade`: `--new-only` prices every part new, as `plan --new-only` does, for a
buyer who will not buy used.

The catalog's only used-market street price is the RTX 3090's (800 USD, GPUDojo, February 2026,
gpus.toml); new, it is priced at its launch MSRP (1,499 USD, 2020-09-24). Two builds show both
ways an upgrade buys the card: a swap to it (from an RTX 3080) and one more of the build's own
card (examples/builds/budget-1gpu-3090.yaml moved to a board, PSU and case with room for two)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BUDGET_3090 = Path(__file__).parents[2] / "examples" / "builds" / "budget-1gpu-3090.yaml"
USED_3090_USD = 700.0  # gpus.toml used_price_usd (runlocalai, May 2026)
NEW_3090_USD = 1499.0  # gpus.toml price_usd, NVIDIA's launch MSRP


def changes(build: Path, *args: str) -> dict[str, dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "upgrade", str(build), "-w", "resnet50",
         "--budget", "3000", "--json", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return {c["change"]: c for c in doc["changes"]}


def variant(tmp_path: Path, name: str, swap: dict[str, str]) -> Path:
    """budget-1gpu-3090.yaml with some of its parts replaced (old name -> new name)."""
    text = BUDGET_3090.read_text()
    for old, new in swap.items():
        assert f": {old}\n" in text
        text = text.replace(f": {old}\n", f": {new}\n")
    path = tmp_path / name
    path.write_text(text)
    return path


def test_upgrade_new_only_prices_a_swap_to_a_used_market_card_new(tmp_path: Path) -> None:
    build = variant(tmp_path, "3080.yaml", {"GeForce RTX 3090": "GeForce RTX 3080"})
    swap = "swap GPUs -> 1x GeForce RTX 3090"
    used = changes(build)[swap]
    assert used["price_usd"] == USED_3090_USD
    assert [p["market"] for p in used["bought_prices"]] == ["used"]
    new = changes(build, "--new-only")[swap]
    assert new["price_usd"] == NEW_3090_USD
    (card,) = new["bought_prices"]
    assert card["kind"] == "launch" and card["market"] is None
    assert card["unit_price_usd"] == NEW_3090_USD


def test_upgrade_new_only_prices_another_of_the_builds_own_card_new(tmp_path: Path) -> None:
    # The build's card is resolved against the new-only catalog too: the second 3090 is new.
    build = variant(
        tmp_path, "3090-room-for-two.yaml",
        {"Gigabyte B650M AORUS ELITE AX ICE": "ASUS ProArt X670E-CREATOR WIFI",  # x8/x8 off the CPU
         "Corsair RM850x (2024)": "Corsair HX1500i (2023)",
         "Corsair 4000D Airflow": "Fractal Design Meshify 2 XL"},
    )  # fmt: skip
    add = "add 1x GeForce RTX 3090 (2 in all)"
    assert changes(build)[add]["price_usd"] == USED_3090_USD
    assert changes(build, "--new-only")[add]["price_usd"] == NEW_3090_USD
