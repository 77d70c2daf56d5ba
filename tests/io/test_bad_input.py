"""Bad input, everywhere (issue 12): each case is one line naming the file (or the --set) and
the field, exit 2, no traceback, nothing of the user's overwritten; and a fuzzer that mutates
one field of a valid build, workload or catalog file at a time finds no other outcome."""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlrig.cli import main

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"
BUILD = EXAMPLES / "budget-1gpu-3090.yaml"


def dlrig(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """Run the CLI in-process through `main` (as the script does): (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["dlrig", *args]
    stdin_before = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = argv
        sys.stdin = stdin_before
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2, err
    lines = err.rstrip("\n").split("\n")
    assert lines[0].startswith("dlrig: error: "), err
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("  hint: ")), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, err)


def write(tmp_path: Path, name: str, doc: Any) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return str(path)


@pytest.mark.parametrize(
    ("model", "needles"),
    [
        ({"params": ".inf", "forward_flops_per_sample": ".inf"}, ["field 'model.params'"]),
        (
            {"params": 1e6, "forward_flops_per_sample": 1e9, "activation_bytes_per_sample": 1e-300},
            ["field 'model'", "activation_bytes_per_sample"],
        ),
        ({"params": -5, "forward_flops_per_sample": 1e9}, ["field 'model.params'"]),
        ({"params": 1e6, "forward_flops_per_sample": 1e308}, ["model.forward_flops_per_sample"]),
    ],
)
@pytest.mark.parametrize("command", ["estimate", "upgrade"])
def test_non_finite_and_absurd_model_numbers(
    tmp_path: Path, model: dict[str, Any], needles: list[str], command: str
) -> None:
    text = yaml.safe_dump({"model": model}).replace("'.inf'", ".inf")
    workload = write(tmp_path, "w.yaml", text)
    extra = ["--budget", "3000"] if command == "upgrade" else []
    code, _, err = dlrig(command, str(BUILD), "--workload", workload, *extra)
    assert_one_line_error(code, err, "w.yaml", *needles)
    assert "model.str" not in err  # the union's losing branch is not the problem


def test_a_huge_batch_is_refused(tmp_path: Path) -> None:
    workload = write(tmp_path, "w.yaml", {"model": "resnet50", "batch_size": 10**30})
    code, _, err = dlrig("estimate", str(BUILD), "--workload", workload)
    assert_one_line_error(code, err, "w.yaml", "field 'batch_size'")


def test_an_inline_board_with_a_billion_memory_slots_is_refused(tmp_path: Path) -> None:
    board = {
        "name": "weird",
        "socket": "AM5",
        "memory_type": "DDR5",
        "memory_slots": 1_000_000_000,
        "max_memory_gb": 192,
        "x16_slots": [{"position": 1, "lanes": 16, "gen": 5}],
    }
    build = write(tmp_path, "b.yaml", {"gpus": ["RTX 3090"], "motherboard": board})
    code, _, err = dlrig("upgrade", build, "--workload", "resnet50", "--budget", "3000")
    assert_one_line_error(code, err, "b.yaml", "field 'motherboard.memory_slots'")


def test_dev_zero_stops_at_the_size_limit() -> None:
    code, _, err = dlrig("check", "/dev/zero")
    assert_one_line_error(code, err, "/dev/zero", "5 MB")


def test_endless_stdin_stops_at_the_size_limit() -> None:
    """`yes 'a: b' | dlrig check -`: the real pipe, in a subprocess, ends with the limit."""
    yes = subprocess.Popen(["yes", "a: b"], stdout=subprocess.PIPE)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "dlrig", "check", "-"],
            stdin=yes.stdout,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        yes.kill()
        yes.wait()
    assert_one_line_error(result.returncode, result.stderr, "<stdin>", "5 MB")


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n"])
def test_empty_stdin_is_an_error_not_an_empty_table(text: str) -> None:
    code, out, err = dlrig("check", "-", stdin=text)
    assert_one_line_error(code, err, "<stdin>", "empty")
    assert out == ""


@pytest.mark.parametrize(
    ("doc", "needles"),
    [
        ({"psu": {"watts": 850, "efficiency": "unobtainium"}}, ["field 'psu.efficiency'"]),
        (
            {"gpus": [{"model": "RTX 3090", "pcie": {"gen": 99, "lanes": 1000}}]},
            ["field 'gpus.0.pcie.gen'"],
        ),
        ({"gpus": [{"name": "x", "tdp_w": 1e308}]}, ["field 'gpus.0.tdp_w'"]),
        ("name: a\nname: b\n", ["line 2", "duplicate key 'name'"]),
        ("gpus:\n  - model: RTX 3090\n    count: 1\n    count: 2\n", ["duplicate key 'count'"]),
    ],
)
def test_values_once_accepted_silently_are_refused(
    tmp_path: Path, doc: Any, needles: list[str]
) -> None:
    code, _, err = dlrig("check", write(tmp_path, "b.yaml", doc))
    assert_one_line_error(code, err, "b.yaml", *needles)


def test_no_internal_class_name_leaks(tmp_path: Path) -> None:
    workload = write(
        tmp_path, "w.yaml", {"model": "resnet50", "input": {"shape": [3], "dtype": "x"}}
    )
    code, _, err = dlrig("estimate", str(BUILD), "--workload", workload)
    assert_one_line_error(code, err, "w.yaml", "field 'input.dtype'")
    assert "InputBlock" not in err


def test_a_bad_set_blames_the_set_not_the_file() -> None:
    code, _, err = dlrig(
        "estimate", str(BUILD), "--workload", "resnet50", "--set", "storage.0.read_mb_s=-5"
    )
    assert_one_line_error(code, err, "--set storage.0.read_mb_s=-5", "read_mb_s")
    assert str(BUILD) not in err


def test_an_unknown_similar_to_names_the_file(tmp_path: Path) -> None:
    workload = write(tmp_path, "w.yaml", {"model": "resnet50", "similar_to": "bogus"})
    code, _, err = dlrig("estimate", str(BUILD), "--workload", workload)
    assert_one_line_error(code, err, "w.yaml", "field 'similar_to'", "bogus")


@pytest.mark.parametrize(
    "args", [["bogus"], ["check"], ["estimate", str(BUILD)], ["schema", "bogus"]]
)
def test_a_usage_error_is_one_line(args: list[str]) -> None:
    code, _, err = dlrig(*args)
    assert_one_line_error(code, err)
    assert "╭" not in err


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "--workload", "resnet50", "--budget", "inf"],
        ["plan", "--workload", "resnet50:nan", "--budget", "3000"],
        ["upgrade", str(BUILD), "--workload", "resnet50", "--budget", "nan"],
        ["estimate", str(BUILD), "--workload", "resnet50", "--electricity-price", "inf"],
    ],
)
def test_a_non_finite_number_option_is_refused(args: list[str]) -> None:
    code, _, err = dlrig(*args)
    assert_one_line_error(code, err, "finite")


def test_plan_save_never_overwrites_a_users_file(tmp_path: Path) -> None:
    mine = tmp_path / "plan-1.yaml"
    mine.write_text("my notes\n")
    code, _, err = dlrig(
        "plan", "--workload", "resnet50", "--budget", "5000", "--save", str(tmp_path)
    )
    assert_one_line_error(code, err, "plan-1.yaml", "exists")
    assert mine.read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan-1.yaml"]  # nothing half-written


# ---- the fuzzer: one field of a valid file at a time -------------------------------------

HOSTILE = [
    float("inf"), float("-inf"), float("nan"), 1e308, -5, 0, 1e-300, 1e30, 10**9, 2**70,
    "unobtainium", "", None, [], {}, True, "x" * 300, [1, 2], {"gen": 99},
]  # fmt: skip
BUILDS = sorted(EXAMPLES.glob("*.yaml"))
WORKLOAD = {
    "model": {
        "params": 25.6e6,
        "forward_flops_per_sample": 8.2e9,
        "activation_bytes_per_sample": 1e8,
    },
    "batch_size": 64,
    "precision": "fp16",
    "input": {"shape": [3, 224, 224], "dtype": "float32"},
    "dataset": {"samples": 1281167, "bytes_per_sample": 110000},
    "preprocessing": {"strategy": "online", "cpu_ms_per_sample": 4.0},
    "loader": {"workers": 8, "pin_memory": True, "prefetch": 2},
    "epochs": 1,
}
CATALOG = {
    "gpus": [{"name": "GeForce RTX 3090", "price_usd": 900}],
    "psus": [{"name": "Test PSU 1600", "watts": 1600, "efficiency": "platinum", "pcie_8pin": 8}],
}


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a document a value sits (mapping keys and list indices)."""
    if prefix:
        yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, (*prefix, i))


def _mutated(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _mutated(doc[head], rest, value)}
    out = list(doc)
    out[head] = _mutated(doc[head], rest, value)
    return out


@contextlib.contextmanager
def hang_guard(seconds: int) -> Iterator[None]:
    """Fail (instead of waiting for ever) when one run takes longer than `seconds`."""

    def on_alarm(signum: int, frame: object) -> None:
        raise AssertionError(f"dlrig ran longer than {seconds} s on one input")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _run_mutant(tmp_path: Path, kind: str, doc: Any, command: str = "estimate") -> None:
    text = yaml.safe_dump(doc, allow_unicode=True)
    path = write(tmp_path, f"{kind}.yaml", text)
    build, workload, catalog = str(BUILD), "resnet50", []
    if kind == "build":
        build = path
    elif kind == "workload":
        workload = path
    else:
        catalog = ["--catalog", path]
    args = {
        "check": ["check", build, "--workload", workload],
        "estimate": ["estimate", build, "--workload", workload],
        "upgrade": ["upgrade", build, "--workload", workload, "--budget", "2000"],
    }[command] + catalog
    with hang_guard(60):
        code, _, err = dlrig(*args)
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err, err
    if code == 2:
        assert_one_line_error(code, err)


def _mutants(kind: str) -> st.SearchStrategy[Any]:
    bases = (
        [yaml.safe_load(p.read_text()) for p in BUILDS]
        if kind == "build"
        else [WORKLOAD if kind == "workload" else CATALOG]
    )
    return st.sampled_from(bases).flatmap(
        lambda base: st.tuples(st.sampled_from(list(_paths(base))), st.sampled_from(HOSTILE)).map(
            lambda pv: _mutated(base, pv[0], pv[1])
        )
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["build", "workload", "catalog"])
def test_one_field_mutated_gives_exit_0_1_or_2_and_no_traceback(
    tmp_path_factory: pytest.TempPathFactory, kind: str
) -> None:
    tmp_path = tmp_path_factory.mktemp(kind)

    @settings(max_examples=25, suppress_health_check=list(HealthCheck), deadline=None)
    @given(doc=_mutants(kind), command=st.sampled_from(["check", "estimate", "upgrade"]))
    def run(doc: Any, command: str) -> None:
        _run_mutant(tmp_path, kind, doc, command)

    run()
