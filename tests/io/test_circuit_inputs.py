"""The circuit a command judges on: --circuit, else the build file's `circuit`, else
`circuit` in the user's config.toml, else us-15a; bad input of each kind is one line naming
the file (or option) and the field, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"
BUILD = EXAMPLES / "4x-blower-workstation.yaml"


def dlrig(*args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if config is not None:
        env["DLRIG_CONFIG"] = str(config)
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip


def power(*args: str, config: Path | None = None) -> dict[str, Any]:
    """PSU.6's evidence: the build at the wall on the circuit it was judged on."""
    result = dlrig("check", *args, "--json", config=config)
    assert result.returncode in (0, 1), result.stderr
    (psu6,) = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "PSU.6"]
    evidence: dict[str, Any] = psu6["evidence"]
    return evidence


def test_the_circuit_comes_from_the_flag_the_build_the_config_then_the_default(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('circuit = "us-20a"\n')
    assert (power(str(BUILD))["circuit"], power(str(BUILD))["circuit_origin"]) == (
        "us-15a", "default",
    )  # fmt: skip
    from_config = power(str(BUILD), config=config)
    assert from_config["circuit"] == "us-20a"
    assert from_config["circuit_origin"] == f"config file {config}"
    with_circuit = tmp_path / "b.yaml"
    with_circuit.write_text(BUILD.read_text() + "circuit: eu-16a\n")
    assert power(str(with_circuit), config=config)["circuit"] == "eu-16a"
    flagged = power(str(with_circuit), "--circuit", "2x-us-15a", config=config)
    assert (flagged["circuit"], flagged["circuit_origin"]) == ("2x-us-15a", "--circuit")


def test_every_command_takes_the_circuit(tmp_path: Path) -> None:
    est = dlrig("estimate", str(BUILD), "-w", "resnet50", "--json", "--circuit", "us-20a")
    assert json.loads(est.stdout)["power"]["circuit"] == "us-20a"
    cmp_ = dlrig("compare", str(BUILD), str(BUILD), "-w", "resnet50", "--json",
                 "--circuit", "eu-16a")  # fmt: skip
    assert {b["circuit"] for b in json.loads(cmp_.stdout)["builds"]} == {"eu-16a"}
    up = dlrig("upgrade", str(BUILD), "-w", "resnet50", "--budget", "500", "--circuit", "us-20a")
    assert up.returncode == 0, up.stderr


def test_bad_circuits_are_one_line_exit_2(tmp_path: Path) -> None:
    flag = dlrig("check", str(BUILD), "--circuit", "us-16a")
    assert flag.returncode == 2 and "Traceback" not in flag.stderr
    assert flag.stderr.startswith("dlrig: error: --circuit: unknown circuit 'us-16a'")
    assert "closest: us-15a" in flag.stderr
    config = tmp_path / "config.toml"
    config.write_text('circuit = "uk-15a"\n')
    bad = dlrig("check", str(BUILD), config=config)
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"dlrig: error: {config}: field 'circuit': unknown circuit")
    config.write_text("circuits = 3\n")
    unknown_key = dlrig("check", str(BUILD), config=config)
    assert unknown_key.returncode == 2 and str(config) in unknown_key.stderr
    assert "circuits" in unknown_key.stderr
    build = tmp_path / "b.yaml"
    build.write_text(BUILD.read_text() + "circuit: mars-400v\n")
    in_build = dlrig("check", str(build))
    assert in_build.returncode == 2
    assert in_build.stderr.startswith(f"dlrig: error: {build}: field 'circuit': unknown circuit")
