"""Issue 11, misleading answers: the Pareto table printed "1.26" for 2x RTX 3090 at 2,846 USD
and again at 2,886 USD (llama-3-8b-lora, 5,000 USD), reading as a dearer build at the same
speed; every frontier row is faster than the one before (1.2579 vs 1.2600 samples/s), so the
table prints as many decimals as tell neighbours apart."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

from dlrig.report.plan import distinct_rates


def test_distinct_rates_add_decimals_only_when_neighbours_would_read_the_same() -> None:
    assert distinct_rates([0.646, 1.197, 1.56]) == ["0.65", "1.20", "1.56"]
    assert distinct_rates([1.2579, 1.2600, 1.5612]) == ["1.258", "1.260", "1.561"]
    assert distinct_rates([1_830.2, 1_830.4]) == ["1,830.2", "1,830.4"]


def test_plan_pareto_table_never_prints_one_speed_twice() -> None:
    args = ["plan", "--workload", "llama-3-8b-lora", "--budget", "5000"]
    env = {**os.environ, "COLUMNS": "160"}
    run = [sys.executable, "-m", "dlrig", *args]
    doc = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True,
                                    check=True, env=env).stdout)  # fmt: skip
    text = subprocess.run(run, capture_output=True, text=True, check=True, env=env).stdout
    table = text[text.index("Pareto frontier") :].splitlines()
    rows = [line.split("│") for line in table if line.startswith("│")]
    speeds = [cells[2].strip() for cells in rows]
    assert len(speeds) == len(doc["pareto"]) > 5
    assert all(a != b for a, b in itertools.pairwise(speeds))
