"""Issue 11, `plan --own FILE`: "I have two 3090s and a 1600 W PSU" — parts the user already has
cost nothing, and the plan builds around them; a bad file is one line, exit 2, naming the file
and the field. The RTX 3090's price in use is its used street price, USD 800 (GPUDojo, February
2026, https://gpudojo.pages.dev/articles/tesla-p100-16gb-ai-review.html); the Corsair AX1600i
is a 1600 W unit (catalog/data/psus.toml)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

STREET_3090_USD = 700.0  # used, May 2026: runlocalai (catalog/data/gpus.toml)
OWNED = {"gpus": [{"model": "GeForce RTX 3090", "count": 2}], "psu": "Corsair AX1600i"}


LOOP_QUOTES = Path(__file__).parents[1] / "fixtures" / "loop_quotes.yaml"


def run_dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, timeout=300
    )


def plan_json(*args: str) -> dict[str, Any]:
    result = run_dlrig("plan", "--workload", "resnet50", "--json", *args)
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def own_file(tmp_path: Path, doc: Any, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def test_two_owned_3090s_and_a_1600w_psu_cost_nothing_and_the_plan_reuses_them(
    tmp_path: Path,
) -> None:
    # 1,500 USD buys a board, CPU, RAM, drive and case, not two more cards at 800 each.
    doc = plan_json("--budget", "1500", "--own", str(own_file(tmp_path, OWNED)))
    best = doc["builds"][0]
    assert best["build"]["gpus"] == [{"model": "GeForce RTX 3090", "count": 2}]
    parts = {p["part"]: p["price_usd"] for p in best["parts"]}
    assert parts["2x GeForce RTX 3090"] == 0.0
    assert parts["Corsair AX1600i"] == 0.0
    assert best["price_usd"] == round(sum(parts.values()), 2)
    assert best["owned_parts"] == ["GeForce RTX 3090", "Corsair AX1600i"]


def test_cards_beyond_the_owned_two_are_paid_for(tmp_path: Path) -> None:
    doc = plan_json(
        "--budget", "8000", "--gpus", "3", "--include", "GeForce RTX 3090", "--top", "1",
        "--own", str(own_file(tmp_path, OWNED)),
        "--circuit", "us-240v-30a",  # three 350 W cards at stock power (PSU.6)
        # three open-air cards need a loop (COOL.3, COOL.7): priced from a user's quotes
        "--catalog", str(LOOP_QUOTES),
    )  # fmt: skip
    (best,) = doc["builds"]
    parts = {p["part"]: p["price_usd"] for p in best["parts"]}
    assert parts["3x GeForce RTX 3090"] == 1 * STREET_3090_USD


def test_a_list_of_parts_works_as_an_own_file(tmp_path: Path) -> None:
    listed = {"parts": ["Corsair AX1600i", {"model": "GeForce RTX 3090", "count": 2}]}
    doc = plan_json("--budget", "1500", "--top", "1", "--own", str(own_file(tmp_path, listed)))
    parts = {p["part"]: p["price_usd"] for p in doc["builds"][0]["parts"]}
    assert parts["2x GeForce RTX 3090"] == 0.0


def test_an_own_file_naming_an_unknown_part_fails_in_one_line_with_the_closest_names(
    tmp_path: Path,
) -> None:
    path = own_file(tmp_path, {"gpus": [{"model": "GeForce RTX 3099", "count": 2}]})
    result = run_dlrig("plan", "--workload", "resnet50", "--budget", "3000", "--own", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    first = result.stderr.splitlines()[0]
    assert "mine.yaml" in first and "gpus.0" in first and "GeForce RTX 3099" in first
    assert "GeForce RTX 3090" in result.stderr  # the closest catalog name


def test_an_own_file_with_a_bad_count_or_kind_names_the_field(tmp_path: Path) -> None:
    bad_count = own_file(tmp_path, {"gpus": [{"model": "GeForce RTX 3090", "count": 0}]})
    result = run_dlrig("plan", "-w", "resnet50", "--budget", "3000", "--own", str(bad_count))
    assert result.returncode == 2 and "gpus.0.count" in result.stderr
    bad_kind = own_file(tmp_path, {"gpsu": "Corsair AX1600i"}, "kind.yaml")
    result = run_dlrig("plan", "-w", "resnet50", "--budget", "3000", "--own", str(bad_kind))
    assert result.returncode == 2 and "kind.yaml: gpsu" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_build_file_works_as_an_own_file_and_the_plan_reuses_the_whole_build() -> None:
    # examples/builds/budget-1gpu-3090.yaml: every part is a catalog part, so owning it all, a
    # 300 USD budget plans that very machine at 0 USD.
    build = Path(__file__).parents[2] / "examples" / "builds" / "budget-1gpu-3090.yaml"
    doc = plan_json("--budget", "300", "--top", "1", "--own", str(build))
    best = doc["builds"][0]
    assert best["price_usd"] == 0.0
    assert {"GeForce RTX 3090", "Corsair RM850x (2024)"} <= set(best["owned_parts"])
