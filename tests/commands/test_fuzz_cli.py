"""A property-based fuzz of every command's options and files (issue 39): hypothesis draws a
command line from each command's grammar, filling every option with hostile values and every
file with a hostile path (too long, a FIFO with no writer, a device, a folder, a symbolic link
loop, a dangling link, a file below a file, a read-only folder, a name with a right-to-left
override, standard input, ...). Whatever it draws, dlrig answers within the hang guard with
exit 0, 1 or 2, never a traceback, an exit-2 answer is one line (and a hint), and no file
changes but the page or plan folder the command line names."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.cli import assert_one_line_error, run_in_process

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"

# What a number option is given: in range, out of range, not finite, not a number at all.
NUMBERS = ["0", "-1", "1", "3", "1.5", "800", "1e308", "nan", "inf", "-inf", "abc", "",
           "99999999999999999999999", "0x10", " 5 "]  # fmt: skip
WORDS = ["", " ", "-", "amd", "nvidia", "RTX 3090", "4090", "x" * 300, "a\u202eb", "a\nb",
         "unobtainium", "--json", "probe:latest"]  # fmt: skip
WORKLOADS = ["resnet50", "llama-3-8b-lora", "llama-3.1-8b-serve", "", ":0.5", "resnet50:1:2",
             "resnet50:0.3", "resnet50:-1", "nope"]  # fmt: skip
SETS = ["batch_size=64", "batch_size=", "batch_size=true", "=1", "precision=fp64",
        "gpus.0.power_limit_w=300", "gpus.0.power_limit_w=5", "gpus.9.count=2",
        "serve.users=8", "finetune=qlora", "finetune.method=lora", "measured.taken=2026-01-01",
        "name=a\u202eb", "loader.workers=[1,2]", "gpus.0.pcie.lanes=4", "nodes=1e9",
        "model.params=-5", "parallel.tensor=2", "unknown.key=1"]  # fmt: skip
COMPARES = ["gpus.0.pcie.lanes=4,8", "=1,2", "batch_size=1,,2", "batch_size=",
            "cuda_graphs=x,y", "gpus.0.pcie.lanes=4,abc",
            "batch_size=" + ",".join(map(str, range(1, 40)))]  # fmt: skip

# Paths by kind, made once in the arena (`arena` below) and named relative to it.
INPUT_KINDS = ["build", "workload_file", "catalog_file", "long", "fifo", "dev_zero", "dev_null",
               "folder", "loop", "dangling", "missing", "below_file", "empty_name", "stdin",
               "binary", "bidi_name", "scalar", "unreadable"]  # fmt: skip
OUTPUT_KINDS = ["new_page", "users_file", "long", "fifo", "dev_null", "dev_full", "folder",
                "loop", "dangling", "missing_folder", "below_file", "empty_name", "stdout",
                "trailing_slash", "read_only_folder"]  # fmt: skip


def _make_arena(root: Path) -> dict[str, str]:
    """Every kind of path, made under root; returns kind -> the path to give."""
    build = (EXAMPLES / "budget-1gpu-3090.yaml").read_text()
    (root / "build.yaml").write_text(build)
    (root / "workload.yaml").write_text("model: resnet50\nbatch_size: 32\n")
    (root / "catalog.yaml").write_text("gpus:\n  - {name: GeForce RTX 3090, price_usd: 900}\n")
    os.mkfifo(root / "fifo.yaml")
    (root / "folder").mkdir()
    (root / "loop").symlink_to(root / "loop")
    (root / "dangling").symlink_to(root / "nowhere.yaml")
    (root / "file").write_text("a file\n")
    (root / "binary.yaml").write_bytes(bytes(range(256)) * 8)
    (root / "evil\u202elmth.yaml").write_text(build)
    (root / "scalar.yaml").write_text("42\n")
    (root / "prices.csv").write_text("provider,instance\nx,y\n")
    (root / "unreadable.yaml").write_text(build)
    (root / "unreadable.yaml").chmod(0)
    (root / "notes.html").write_text("<p>my notes</p>")
    (root / "read-only").mkdir()
    (root / "read-only").chmod(stat.S_IRUSR | stat.S_IXUSR)
    common = {
        "long": str(root / ("y" * 300)),
        "fifo": str(root / "fifo.yaml"),
        "dev_null": "/dev/null",
        "folder": str(root / "folder"),
        "loop": str(root / "loop"),
        "dangling": str(root / "dangling"),
        "below_file": str(root / "file" / "x.yaml"),
        "empty_name": "",
    }
    return {
        **common,
        "build": str(root / "build.yaml"),
        "workload_file": str(root / "workload.yaml"),
        "catalog_file": str(root / "catalog.yaml"),
        "dev_zero": "/dev/zero",
        "missing": str(root / "missing.yaml"),
        "stdin": "-",
        "binary": str(root / "binary.yaml"),
        "bidi_name": str(root / "evil\u202elmth.yaml"),
        "scalar": str(root / "scalar.yaml"),
        "csv_prices": str(root / "prices.csv"),
        "unreadable": str(root / "unreadable.yaml"),
        # outputs
        "new_page": str(root / "out" / "page.html"),
        "users_file": str(root / "notes.html"),
        "dev_full": "/dev/full",
        "missing_folder": str(root / "no" / "such" / "page.html"),
        "stdout": "-",
        "trailing_slash": str(root / "newdir") + "/",
        "read_only_folder": str(root / "read-only" / "page.html"),
    }


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("arena")
    (root / "out").mkdir()
    return root, _make_arena(root)


def _snapshot(root: Path) -> dict[str, str]:
    """Each entry of the arena: its kind of file and, for a regular one, its content's hash."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode):
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                out[str(path)] = stat.filemode(mode)
    return out


Draw = st.DrawFn


def _in(draw: Draw, kinds: dict[str, str], pick: list[str], good: str | None = None) -> str:
    """A path of one of the kinds; half the time the good one, when given, so that the options
    after a file get exercised too (a bad file stops a command at once)."""
    if good is not None and draw(st.booleans()):
        return kinds[good]
    return kinds[draw(st.sampled_from(pick))]


def _maybe(draw: Draw, *option: str) -> list[str]:
    """The option a third of the time: most lines then carry one or two hostile values, so
    that each is met on its own and not always behind another that stops the command first."""
    return list(option) if draw(st.integers(0, 2)) == 0 else []


@st.composite
def command_lines(draw: Draw, paths: dict[str, str], command: str) -> list[str]:
    """One command line of `command`, every file and value drawn from the hostile pools."""
    build = _in(draw, paths, INPUT_KINDS, "build")
    workload = draw(st.sampled_from([*WORKLOADS[:3], *WORKLOADS, _in(draw, paths, INPUT_KINDS)]))
    catalog = _maybe(draw, "--catalog", _in(draw, paths, INPUT_KINDS, "catalog_file"))
    html = _maybe(draw, "--html", _in(draw, paths, OUTPUT_KINDS, "new_page"))
    json = _maybe(draw, "--json")
    number = st.sampled_from(NUMBERS)
    sets = [x for s in draw(st.lists(st.sampled_from(SETS), max_size=2)) for x in ("--set", s)]
    if command == "check":
        return ["check", build, *_maybe(draw, "--workload", workload), *catalog, *json, *html]
    if command == "estimate":
        compare = _maybe(draw, "--compare", draw(st.sampled_from(COMPARES)))
        price = _maybe(draw, "--electricity-price", draw(number))
        rent = _maybe(draw, "--rent", "--prices", _in(draw, paths, INPUT_KINDS, "csv_prices"))
        return ["estimate", build, "--workload", workload, *sets, *compare, *price, *catalog,
                *rent, *json, *html]  # fmt: skip
    if command == "compare":
        other = _in(draw, paths, INPUT_KINDS, "build")
        return ["compare", build, other, "--workload", workload, *catalog, *json, *html]
    money = [*_maybe(draw, "--currency", draw(st.sampled_from(["EUR", "XYZ", "", "ars"]))),
             *_maybe(draw, "--fx-rate", draw(number))]  # fmt: skip
    own = _maybe(draw, "--own", _in(draw, paths, INPUT_KINDS))
    if command == "upgrade":
        return ["upgrade", build, "--workload", workload, "--budget", draw(number), *catalog,
                *own, *money, *json]  # fmt: skip
    if command == "plan":
        limits = [
            *_maybe(draw, "--top", draw(number)),
            *_maybe(draw, "--max-gpus", draw(st.sampled_from(["1", "0", "99", "abc"]))),
            *_maybe(draw, "--gpus", draw(number)),
            *_maybe(draw, "--nodes", draw(number)),
            *_maybe(draw, "--include", draw(st.sampled_from(WORDS))),
            *_maybe(draw, "--exclude", draw(st.sampled_from(WORDS))),
            *_maybe(draw, "--objective", draw(st.sampled_from(["cheapest", "fastest", ""]))),
            *_maybe(draw, "--save", _in(draw, paths, OUTPUT_KINDS)),
        ]
        # A small budget by default keeps each search short on CI's two cores.
        budget = draw(st.sampled_from(["1500", *NUMBERS]))
        workloads = [x for w in draw(st.lists(st.just(workload), min_size=1, max_size=2))
                     for x in ("--workload", w)]  # fmt: skip
        return ["plan", *workloads, "--budget", budget, "--max-gpus", "2", *limits, *sets,
                *catalog, *own, *money, *json, *html][: 200]  # fmt: skip
    if command == "catalog":
        kind = draw(st.sampled_from(["gpus", "cpus", "platforms", "gpu", ""]))
        return ["catalog", kind, *catalog, *json]
    if command == "workloads":
        return ["workloads", *_maybe(draw, "--kind", draw(st.sampled_from(WORDS))), *json]
    if command == "schema":
        return ["schema", draw(st.sampled_from(["build", "workload", "catalog", "x"])), *json]
    if command == "watch":
        mode = draw(st.sampled_from(["run", "show", "list", "none"]))
        port = draw(st.sampled_from(["0", "70000", "x"]))
        head = [*_maybe(draw, "--interval", draw(number)), *json, *html,
                *_maybe(draw, "--prometheus", port)]  # fmt: skip
        if mode == "show":
            run_id = draw(st.sampled_from(["1", "0", "-1", "99999999999999999999999", "abc"]))
            return ["watch", *head, "--show", run_id]
        if mode == "list":
            return ["watch", *head, "--list"]
        return ["watch", *head] + (["--", "true"] if mode == "run" else [])
    # probe: only what answers without measuring this machine (a refused page path or folder,
    # the history, a --train that cannot start); a probe itself takes seconds.
    bad_page = ["--html", paths[draw(st.sampled_from(OUTPUT_KINDS[1:12]))]]
    workload = draw(st.sampled_from(["", "nope", paths["fifo"], paths["scalar"]]))
    train = ["--train", workload, *_maybe(draw, "--steps", draw(number)),
             *_maybe(draw, "--batch", draw(number))]  # fmt: skip
    bad_folder = ["--path", paths[draw(st.sampled_from([k for k in INPUT_KINDS if k != "folder"]))]]
    return ["probe", *draw(st.sampled_from([bad_page, bad_folder, ["--history"], train])), *json]


def _named_outputs(args: list[str]) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--html", "--save")]


OUTCOMES: list[tuple[str, int]] = []


def _check_one(root: Path, args: list[str]) -> None:
    before = _snapshot(root)
    code, out, err = run_in_process(*args)
    OUTCOMES.append((args[0], code))
    assert "Traceback" not in err and "Traceback" not in out, (args, err)
    assert code in (0, 1, 2), (args, code, err)
    if code == 2:
        assert_one_line_error(code, err)
    after = _snapshot(root)
    named = [str(Path(p)) for p in _named_outputs(args)]

    def asked(path: str) -> bool:
        return any(path == n or path.startswith(n + os.sep) for n in named)

    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert {p for p in changed if not asked(p)} == set(), (args, changed)
    for path in changed:  # leave the arena as it was for the next example
        if path not in before and os.path.lexists(path):
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)


FAST = ["check", "estimate", "compare", "catalog", "workloads", "schema", "probe"]
SEARCHING = ["plan", "upgrade", "watch"]


@pytest.mark.parametrize("command", FAST)
def test_fuzzed_command_lines_answer_in_one_line_or_a_result(
    command: str, arena: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, paths = arena
    monkeypatch.chdir(root)  # a relative name written by mistake (a file called '-') lands here

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(args=command_lines(paths, command))
    def run(args: list[str]) -> None:
        _check_one(root, args)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("command", SEARCHING)
def test_fuzzed_searches_and_jobs_answer_in_one_line_or_a_result(
    command: str, arena: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """plan and upgrade search, watch runs a job: fewer examples, each a second or so."""
    root, paths = arena
    monkeypatch.chdir(root)
    if command == "watch":  # a history for --show and --list to read
        assert run_in_process("watch", "--", "true")[0] == 0

    @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
    @given(args=command_lines(paths, command))
    def run(args: list[str]) -> None:
        _check_one(root, args)

    run()
