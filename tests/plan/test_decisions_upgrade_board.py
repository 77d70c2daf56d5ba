"""Issue 11, `--own`: "I have a spare RTX 3090 and a 1600 W PSU". `upgrade` of
examples/builds/budget-1gpu-3090.yaml (one full x16 slot on a micro-ATX board, the second x16
slot too close for a 3-slot card) with them said "No change under 1,000 USD helps": adding a
card stopped at the board's slots. Adding cards now brings the cheapest board of the CPU's
socket that seats them, and the owned card and PSU cost nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from dlrig.catalog.loader import builtin_catalog
from dlrig.catalog.schema import Motherboard
from dlrig.machine import load_build
from dlrig.plan.evaluate import ModelEvaluator
from dlrig.plan.owned import owned_parts, with_owned
from dlrig.plan.upgrade import upgrade
from dlrig.rules import check_build
from dlrig.workloads import load_workload

BUILD = Path(__file__).parents[2] / "examples" / "builds" / "budget-1gpu-3090.yaml"
CARD = "GeForce RTX 3090"
PSU_1600 = "Seasonic PRIME TX-1600 ATX 3.1"
OWN = {"gpus": [{"model": CARD, "count": 1}], "psu": PSU_1600}


def test_upgrade_adds_an_owned_spare_card_with_a_board_that_seats_it(tmp_path: Path) -> None:
    own = tmp_path / "own.json"
    own.write_text(json.dumps(OWN))
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "upgrade", str(BUILD), "-w", "resnet50", "--budget",
         "1000", "--own", str(own), "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    best = doc["changes"][0]
    assert best["steps"][0] == f"add 1x {CARD} (2 in all)"
    assert best["steps"][1].startswith("board -> ")
    assert doc["verdict"].startswith(f"best next dollar: add 1x {CARD} (2 in all) + board -> ")
    # Only the board is bought: the card and the PSU PSU.1 asks for are the user's.
    bought = [p["part"] for p in best["bought_prices"]]
    assert CARD not in bought and PSU_1600 not in bought
    assert len(bought) == 1 and best["steps"][1] == f"board -> {bought[0]} (MB.1: slots for 2 GPUs)"
    # Two 3090s on resnet50: 1.48x, the second card on the board's chipset x2 slot, so its
    # all-reduce crosses host memory at 1 GB/s and adds to the step (no P2P on GeForce:
    # interconnect.every_hop_host_staged).
    assert best["speedup"] > 1.4


def test_the_added_card_and_board_pass_check() -> None:
    catalog = builtin_catalog()
    catalog = with_owned(catalog, owned_parts(OWN, "own.json", catalog))
    job = load_workload("resnet50")
    result = upgrade(load_build(BUILD), job, 1000, catalog, ModelEvaluator(expert_bar=False))
    (change,) = [c for c in result.changes if c.steps[0] == f"add 1x {CARD} (2 in all)"]
    assert change.build.gpu_count == 2
    assert check_build(change.build, job).errors == ()


def test_the_board_brought_for_more_cards_takes_the_builds_cpu(tmp_path: Path) -> None:
    # examples/builds/2x-4090-spaced-workstation.yaml has a Threadripper 7960X (family
    # "threadripper"). The cheapest sTR5 board seating three 4090s in the built-in catalog is
    # the WRX90E-SAGE SE, which takes Threadripper PRO only: upgrade picked it, the rules
    # rejected the change, and "add 1x 4090" silently vanished. A user's board that takes the
    # 7960X and seats three (a TRX50-SAGE with x16 slots at 1, 4 and 7; 1,300 USD, dearer than
    # the WRX90E's 1,199.99) must be the one brought.
    spec = builtin_catalog().find(Motherboard, "ASUS Pro WS TRX50-SAGE WIFI")
    board = spec.model_dump(mode="json", exclude_none=True)
    board.update(
        name="TRX50 board with room for three",
        aliases=[],
        price_usd=1300,
        x16_slots=[{"position": p, "lanes": 16, "gen": 5, "from_cpu": True} for p in (1, 4, 7)],
    )
    # Three open-air 4090s go on a loop (COOL.3): priced from a user's quotes for its parts
    # and a case that mounts its radiators (tests/fixtures/loop_quotes.yaml).
    quotes = yaml.safe_load(
        (BUILD.parents[2] / "tests" / "fixtures" / "loop_quotes.yaml").read_text()
    )
    catalog = tmp_path / "board.json"
    catalog.write_text(json.dumps({"motherboards": [board], **quotes}, default=str))
    spaced = BUILD.parent / "2x-4090-spaced-workstation.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "upgrade", str(spaced), "-w", "llama-3-8b-lora",
         "--budget", "10000", "--catalog", str(catalog), "--json",
         "--circuit", "us-240v-30a"],  # three 450 W cards need a 240 V line (PSU.6)
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    changes = json.loads(result.stdout)["changes"]
    (add,) = [c for c in changes if c["steps"][0] == "add 1x GeForce RTX 4090 (3 in all)"]
    assert add["steps"][1] == "board -> TRX50 board with room for three (MB.1: slots for 3 GPUs)"
    assert add["errors_left"] == []


def test_an_added_loop_goes_on_the_mounts_of_the_builds_case(tmp_path: Path) -> None:
    # The same third 4090, with a user's quotes where a 480 mm radiator is the cheapest per
    # section, and the build's Define 7 XL given three 360 mm mounts (a test figure: the
    # catalog has no spec page for its mounts). Three 450 W cards need 8 sections (COOL.7 at
    # 175 W each); the cheapest set overall is two 480s, which the case cannot mount (CASE.1).
    # The upgrade keeps the case and fits it with 360 + 360 + 240 mm (8 sections) instead of
    # planning radiators no mount takes.
    spec = builtin_catalog().find(Motherboard, "ASUS Pro WS TRX50-SAGE WIFI")
    board = spec.model_dump(mode="json", exclude_none=True)
    board.update(
        name="TRX50 board with room for three",
        aliases=[],
        price_usd=1300,
        x16_slots=[{"position": p, "lanes": 16, "gen": 5, "from_cpu": True} for p in (1, 4, 7)],
    )
    quotes = {
        "cooling": [
            {"name": "Alphacool ES GeForce RTX 4090 Reference", "price_usd": 250,
             "price_date": "2026-12-01"},
            {"name": "Quoted 480 mm radiator", "role": "radiator", "radiator_mm": 480,
             "price_usd": 100, "price_date": "2026-12-01"},
            {"name": "EK-CoolStream XE 360", "price_usd": 120, "price_date": "2026-12-01"},
            {"name": "EK-CoolStream XE 240", "price_usd": 90, "price_date": "2026-12-01"},
            {"name": "D5 pump with reservoir", "price_usd": 200, "price_date": "2026-12-01"},
            {"name": "Loop fittings, tubing and coolant", "price_usd": 250,
             "price_date": "2026-12-01"},
        ],
        "cases": [
            {"name": "Fractal Design Define 7 XL",
             "radiator_mounts": [{"position": p, "max_mm": 360}
                                 for p in ("front", "top", "bottom")]},
        ],
    }  # fmt: skip
    catalog = tmp_path / "quotes.json"
    catalog.write_text(json.dumps({"motherboards": [board], **quotes}))
    spaced = BUILD.parent / "2x-4090-spaced-workstation.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "dlrig", "upgrade", str(spaced), "-w", "llama-3-8b-lora",
         "--budget", "10000", "--catalog", str(catalog), "--json",
         "--circuit", "us-240v-30a"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    changes = json.loads(result.stdout)["changes"]
    (add,) = [c for c in changes if c["steps"][0] == "add 1x GeForce RTX 4090 (3 in all)"]
    assert not any(s.startswith("case -> ") for s in add["steps"])
    assert add["errors_left"] == []
    bought = {p["part"]: p["count"] for p in add["bought_prices"]}
    assert "Quoted 480 mm radiator" not in bought
    assert bought["EK-CoolStream XE 360"] == 2 and bought["EK-CoolStream XE 240"] == 1
