"""`dlrig check` through the real CLI (subprocess): bad input is one line on stderr (plus an
optional hint), exit code 2 and no traceback; good input exits 0 or 1 and prints JSON that
keeps design.md's keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GOOD = """\
name: two blower cards
gpus:
  - model: NVIDIA RTX A5000
    count: 2
cpu: AMD Ryzen Threadripper 7960X
motherboard: ASUS Pro WS TRX50-SAGE WIFI
memory: {size_gb: 128, type: DDR5}
psu: Corsair HX1500i (2023)
case: Fractal Design Define 7 XL
storage:
  - model: Samsung 990 Pro 4TB
"""


def run_check(*args: str, stdin: str | bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", "dlrig", "check", *args],
        input=data,
        capture_output=True,
        check=False,
        timeout=60,
    )


def assert_one_line_error(result: subprocess.CompletedProcess[bytes], *needles: str) -> str:
    """Exit 2; stderr is 'dlrig: error: ...' and at most one '  hint: ...' line."""
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert "Traceback" not in err
    lines = err.rstrip("\n").split("\n")
    assert lines[0].startswith("dlrig: error: "), err
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("  hint: ")), err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


def test_malformed_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", "gpus: [RTX 4090\ncpu: x\n")
    assert_one_line_error(run_check(path), "invalid YAML", "line")


def test_malformed_toml(tmp_path: Path) -> None:
    path = write(tmp_path, "b.toml", 'name = "x"\ngpus = [\n')
    assert_one_line_error(run_check(path), "invalid TOML")


def test_unknown_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", "name: x\ngpu: [GeForce RTX 4090]\n")
    assert_one_line_error(run_check(path), "unknown key 'gpu'", "did you mean 'gpus'")


def test_unknown_nested_key_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", "gpus:\n  - model: GeForce RTX 4090\n    cout: 2\n")
    assert_one_line_error(run_check(path), "gpus.0.cout", "'count'")


def test_unknown_part_gives_the_three_closest_names(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", "gpus: [GeForce RTX 4099 Ultra]\n")
    err = assert_one_line_error(run_check(path), "unknown gpu 'GeForce RTX 4099 Ultra'")
    hint = err.split("closest catalog names: ", 1)[1].strip()
    assert len(hint.split(", ")) == 3
    assert "GeForce RTX 4090" in hint


@pytest.mark.parametrize("count", [0, -1, -4])
def test_zero_or_negative_counts(tmp_path: Path, count: int) -> None:
    path = write(tmp_path, "b.yaml", f"gpus:\n  - model: GeForce RTX 4090\n    count: {count}\n")
    assert_one_line_error(run_check(path), "gpus.0.count", "greater than 0")


def test_negative_memory_size(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", "memory: {size_gb: -16}\n")
    assert_one_line_error(run_check(path), "memory.size_gb")


def test_missing_file() -> None:
    assert_one_line_error(run_check("/no/such/build.yaml"), "no such file")


def test_a_directory(tmp_path: Path) -> None:
    assert_one_line_error(run_check(str(tmp_path)), "is a directory")


def test_a_50mb_file(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as fh:
        fh.truncate(50_000_000)  # sparse: 50 MB without writing them
    assert_one_line_error(run_check(str(path)), "50 MB")


def test_non_utf8_bytes(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", b"name: caf\xe9\xff\n")
    assert_one_line_error(run_check(path), "not UTF-8")


def test_top_level_not_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", "- just\n- a list\n")
    assert_one_line_error(run_check(path), "expected a mapping")


def test_unknown_workload_names_the_closest(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", GOOD)
    assert_one_line_error(run_check(path, "--workload", "resnet-5O"), "resnet")


def test_stdin_dash_reads_the_build() -> None:
    result = run_check("-", "--json", stdin=GOOD)
    assert result.returncode == 0, result.stderr.decode()
    doc = json.loads(result.stdout)
    assert doc["build"]["name"] == "two blower cards"


def test_stdin_dash_bad_input_is_one_line() -> None:
    assert_one_line_error(run_check("-", stdin="gpus: [\n"), "<stdin>")


def test_stdin_accepts_toml() -> None:
    toml = 'name = "toml on stdin"\n[[gpus]]\nmodel = "NVIDIA RTX A5000"\ncount = 1\n'
    result = run_check("-", "--json", stdin=toml)
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout)["build"]["name"] == "toml on stdin"


def test_json_keys_are_design_mds(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", GOOD)
    result = run_check(path, "--json")
    assert result.returncode == 0, result.stderr.decode()
    doc = json.loads(result.stdout)
    assert set(doc) == {"build", "ok", "findings"}
    assert doc["ok"] is True
    for finding in doc["findings"]:
        assert set(finding) == {"rule", "severity", "message", "evidence", "fix"}
        assert finding["severity"] in {"error", "warning", "info"}


def test_errors_found_exit_1_with_a_verdict(tmp_path: Path) -> None:
    path = write(tmp_path, "b.yaml", "gpus: [GeForce RTX 4090]\nmemory: {size_gb: 16}\n")
    result = run_check(path)
    assert result.returncode == 1
    out = result.stdout.decode()
    assert "RAM.2" in out
    assert "FAIL: 1 error" in out


def test_catalog_override_adds_a_part(tmp_path: Path) -> None:
    cat = write(
        tmp_path,
        "parts.yaml",
        "gpus:\n  - {name: Lab GPU, memory_gb: 16, memory_bandwidth_gb_s: 500,"
        " fp32_tflops: 10, tdp_w: 200, cooler: blower, power_8pin: 1}\n",
    )
    path = write(tmp_path, "b.yaml", "gpus: [Lab GPU]\n")
    result = run_check(path, "--catalog", cat, "--json")
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout)["build"]["gpus"] == [{"model": "Lab GPU", "count": 1}]


def test_probe_latest_without_a_saved_probe_is_one_line() -> None:
    """DLRIG_HOME is a fresh directory in tests (conftest): nothing was saved there."""
    assert_one_line_error(run_check("probe:latest"), "no saved probe", "dlrig probe --save")


def test_an_absurd_count_is_refused_not_expanded(tmp_path: Path) -> None:
    """A count of three million GPUs is a typo; checking it card by card would take minutes."""
    path = write(tmp_path, "b.yaml", "gpus:\n  - model: GeForce RTX 4090\n    count: 3000000\n")
    assert_one_line_error(run_check(path), "gpus.0.count", "less than or equal to 1024")
