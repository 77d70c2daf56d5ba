"""Issue 39's reproducers at the input and output edges, one test each: every one gives one
line on stderr and exit 2 (or the documented code), without a traceback, a hang or a file
created or changed that was not asked for; the cases that must keep working are beside them."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from support.cli import assert_one_line_error, run_in_process, run_subprocess

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"
BUILD = EXAMPLES / "budget-1gpu-3090.yaml"
LONG = "y" * 300  # over the 255 bytes a file name may have on Linux and macOS


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


# ---- crashes and hangs ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["check", LONG],
        ["estimate", str(BUILD), "--workload", LONG + ".yaml"],
        ["check", str(BUILD), "--catalog", LONG],
        ["plan", "--workload", "resnet50", "--budget", "3000", "--own", LONG],
        ["check", str(BUILD), "--html", LONG + ".html"],
        ["plan", "--workload", "resnet50", "--budget", "3000", "--save", LONG],
        ["probe", "--quick", "--path", LONG],
    ],
    ids=["build", "workload", "catalog", "own", "html", "save", "probe-path"],
)
def test_a_path_over_255_bytes_is_one_line(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_in_process(*args)
    # The name is shown by its ends: the reason stays on the line.
    assert_one_line_error(code, err, " characters)")
    assert _files(tmp_path) == set()


def test_a_workload_name_over_255_bytes_is_an_unknown_zoo_name() -> None:
    code, _, err = run_in_process("estimate", str(BUILD), "--workload", LONG)
    assert_one_line_error(code, err, "unknown workload", "(300 characters)")


def test_html_below_a_regular_file_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "n.html"
    page.touch()
    code, _, err = run_in_process(
        "estimate", str(BUILD), "--workload", "resnet50", "--html", str(page / "x.html")
    )
    assert_one_line_error(code, err, "n.html is not a folder")
    assert _files(tmp_path) == {"n.html"} and page.read_bytes() == b""


def test_html_onto_a_huge_file_reads_only_its_head(tmp_path: Path) -> None:
    """A 3 GiB file (sparse: no disk used) under a 2 GiB address-space limit: reading it whole,
    as dlrig once did to find its generator tag, would fail with MemoryError."""
    big = tmp_path / "big.html"
    with big.open("wb") as fh:
        fh.truncate(3 * 2**30)

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))

    out = subprocess.run(
        [sys.executable, "-m", "dlrig", "check", str(BUILD), "--html", str(big)],
        capture_output=True,
        text=True,
        preexec_fn=limit_memory,
        timeout=60,
        check=False,
    )
    assert_one_line_error(out.returncode, out.stderr, "not a page dlrig wrote")
    assert big.stat().st_size == 3 * 2**30


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/full", "/dev/null"])
def test_html_onto_a_device_is_refused_without_reading_or_writing_it(device: str) -> None:
    code, _, err = run_in_process("check", str(BUILD), "--html", device)
    assert_one_line_error(code, err, device, "not a regular file")


@pytest.mark.parametrize(
    "option",
    ["build", "--workload", "--catalog", "--own", "--prices"],
)
def test_a_fifo_without_a_writer_is_one_line_not_a_hang(option: str, tmp_path: Path) -> None:
    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)
    args = {
        "build": ["check", str(fifo)],
        "--workload": ["estimate", str(BUILD), "--workload", str(fifo)],
        "--catalog": ["check", str(BUILD), "--catalog", str(fifo)],
        "--own": ["plan", "--workload", "resnet50", "--budget", "3000", "--own", str(fifo)],
        "--prices": ["estimate", str(BUILD), "-w", "resnet50", "--rent", "--prices", str(fifo)],
    }[option]
    code, _, err = run_in_process(*args)
    assert_one_line_error(code, err, "f.yaml: a pipe that nothing was written to")


def test_a_fifo_whose_writer_starts_after_dlrig_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)

    def write_late() -> None:
        time.sleep(0.2)  # dlrig has opened the pipe by now and waits for a writer
        fifo.write_bytes(BUILD.read_bytes())

    writer = threading.Thread(target=write_late)
    writer.start()
    code, out, err = run_in_process("check", str(fifo), "--json")
    writer.join()
    assert code == 0, err
    assert json.loads(out)["build"]["name"] == "budget 1x RTX 3090 desktop"


def test_process_substitution_keeps_working() -> None:
    """`<(cat b.yaml)` is a pipe whose writer is running; also one that writes late."""
    dlrig = f"{sys.executable} -m dlrig"
    script = (
        f"{dlrig} check <(cat {BUILD}) --json && "
        f"{dlrig} estimate <(sleep 1; cat {BUILD}) --workload <(echo 'model: resnet50') --json"
    )
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count('"budget 1x RTX 3090 desktop"') == 2


def test_html_onto_a_fifo_is_refused_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    code, _, err = run_in_process("check", str(BUILD), "--html", str(fifo))
    assert_one_line_error(code, err, "not a regular file (a pipe or a device)")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_html_to_a_piped_dev_stdout_writes_the_page_there() -> None:
    out = run_subprocess("check", str(BUILD), "--html", "/dev/stdout")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("<!DOCTYPE html>") and out.stdout.rstrip().endswith("</html>")
    assert "OK: no errors" in out.stderr  # the terminal's result went to stderr


def test_watch_show_past_sqlite_integers_names_no_run() -> None:
    run_in_process("watch", "--", sys.executable, "-c", "pass")  # a history to look in
    code, _, err = run_in_process("watch", "--show", "99999999999999999999999")
    assert_one_line_error(code, err, "no watched run 99999999999999999999999")


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "LANG": "C"}])
def test_a_non_ascii_name_on_a_narrow_stdout(env: dict[str, str], tmp_path: Path) -> None:
    build = tmp_path / "u.yaml"
    build.write_text(BUILD.read_text().replace("name: budget", "name: café budget"), "utf-8")
    for args in (["check", str(build)], ["check", str(build), "--json"]):
        out = run_subprocess(*args, env=env)
        assert out.returncode == 0, out.stderr
        assert "caf" in out.stdout and "Traceback" not in out.stderr
    doc = json.loads(run_subprocess("check", str(build), "--json", env=env).stdout)
    assert doc["build"]["name"].startswith("caf")  # é or, on an ASCII stream, ?


# ---- answers that contradicted themselves -------------------------------------------------


def test_set_power_limit_is_what_the_build_file_says(tmp_path: Path) -> None:
    """`gpus.0.power_limit_w` is a setting of the GPU entry, as in a build file (design.md:
    --set takes any schema path): the same estimate either way, and a lower draw than at the
    RTX 3090's 350 W stock limit."""
    doc = yaml.safe_load(BUILD.read_text())
    doc["gpus"][0]["power_limit_w"] = 300
    limited = tmp_path / "limited.yaml"
    limited.write_text(yaml.safe_dump(doc))

    def power(*args: str) -> dict[str, float]:
        code, out, err = run_in_process("estimate", *args, "--workload", "resnet50", "--json")
        assert code == 0, err
        return dict(json.loads(out)["power"])

    by_set = power(str(BUILD), "--set", "gpus.0.power_limit_w=300")
    assert by_set == power(str(limited))
    assert by_set["system_peak_w"] < power(str(BUILD))["system_peak_w"]


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--exclude", ""], ["--exclude ''", "no part or vendor named"]),
        (["--include", " "], ["--include ' '"]),
        (
            ["--include", "RTX 3090", "--exclude", "RTX 3090"],
            ["--include 'RTX 3090' contradicts --exclude 'RTX 3090'"],
        ),
        (["--include", "amd", "--exclude-vendor", "amd"], ["contradicts --exclude-vendor amd"]),
    ],
)
def test_include_and_exclude_that_cannot_mean_anything(args: list[str], needles: list[str]) -> None:
    code, _, err = run_in_process("plan", "--workload", "resnet50", "--budget", "8000", *args)
    assert_one_line_error(code, err, *needles)


def _build_with(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return str(path)


def test_count_true_is_not_read_as_one(tmp_path: Path) -> None:
    build = _build_with(tmp_path, "b.yaml", "gpus:\n  - {model: RTX 3090, count: true}\n")
    code, _, err = run_in_process("check", build)
    assert_one_line_error(code, err, "field 'gpus.0.count': expected a number, got true")


def test_true_for_a_number_is_refused_in_a_catalog_file_and_a_set(tmp_path: Path) -> None:
    cat = _build_with(tmp_path, "c.yaml", "gpus:\n  - {name: GeForce RTX 3090, tdp_w: true}\n")
    code, _, err = run_in_process("catalog", "gpus", "--catalog", cat)
    assert_one_line_error(code, err, "field 'tdp_w': expected a number, got true")
    code, _, err = run_in_process(
        "estimate", str(BUILD), "--workload", "resnet50", "--set", "batch_size=true"
    )
    assert_one_line_error(code, err, "--set batch_size=true", "expected a number")


@pytest.mark.parametrize(("code_", "ok"), [("XYZ", False), ("EURO", False), ("ars", True)])
def test_prices_currency_is_an_iso_4217_code(code_: str, ok: bool, tmp_path: Path) -> None:
    """ISO 4217 Table A.1 (data/iso4217.toml): ARS is the Argentine peso, written in any case;
    XYZ and EURO are no codes."""
    text = BUILD.read_text() + f"prices: {{currency: {code_}}}\n"
    code, out, err = run_in_process("estimate", _build_with(tmp_path, "b.yaml", text),
                                    "--workload", "resnet50")  # fmt: skip
    if ok:
        assert code == 0, err
        assert " ARS " in " ".join(out.split())
    else:
        assert_one_line_error(code, err, "prices.currency", "not an ISO 4217 currency code")


def test_a_catalog_price_dated_in_the_future_is_refused(tmp_path: Path) -> None:
    cat = _build_with(
        tmp_path,
        "c.yaml",
        "gpus:\n  - {name: GeForce RTX 4090, price_usd: 1799, price_date: 2099-01-01}\n",
    )
    code, _, err = run_in_process("plan", "--workload", "resnet50", "--budget", "4000",
                                  "--catalog", cat)  # fmt: skip
    assert_one_line_error(code, err, "field 'price_date': 2099-01-01 is in the future")


def test_set_with_no_value_is_refused_not_read_as_the_default() -> None:
    code, _, err = run_in_process(
        "estimate", str(BUILD), "--workload", "resnet50", "--set", "batch_size="
    )
    assert_one_line_error(code, err, "--set batch_size=: no value after '='")


@pytest.mark.parametrize("second", ["--workload", "-w"])
def test_a_one_value_option_given_twice_is_refused(second: str) -> None:
    code, _, err = run_in_process("estimate", str(BUILD), "--workload", "resnet50", second, "gpt2")
    assert_one_line_error(code, err, "--workload is given 2 times")
    # Repeatable options and flags stay repeatable.
    code, _, err = run_in_process("estimate", str(BUILD), "-w", "resnet50", "--json", "--json",
                                  "--set", "batch_size=16", "--set", "epochs=1")  # fmt: skip
    assert code == 0, err


@pytest.mark.parametrize(
    "text",
    [
        'name: "fast\\u202egpj.yaml"\n',  # U+202E RIGHT-TO-LEFT OVERRIDE
        'name: "a\\u2066b"\n',  # U+2066 LEFT-TO-RIGHT ISOLATE
        'name: "a\\x1b[31mb"\n',  # an ANSI colour escape
        'name: "two\\nlines"\n',
        'gpus:\n  - {name: "x\\u202e", memory_gb: 24}\n',
    ],
)
def test_hidden_characters_in_a_name_are_refused(text: str, tmp_path: Path) -> None:
    code, _, err = run_in_process("check", _build_with(tmp_path, "b.yaml", text))
    assert_one_line_error(code, err, "holds U+")


def test_hidden_characters_in_a_set_value_are_refused() -> None:
    code, _, err = run_in_process(
        "estimate", str(BUILD), "--workload", "resnet50", "--set", "name=a\u202eb"
    )
    assert_one_line_error(code, err, "U+202E RIGHT-TO-LEFT OVERRIDE")
    assert "\u202e" not in err  # the error line itself shows it escaped


def test_an_error_line_shows_control_characters_escaped(tmp_path: Path) -> None:
    code, _, err = run_in_process("check", str(tmp_path / "a\nb\u202e.yaml"))
    assert_one_line_error(code, err, "a\\nb\\u202e.yaml: no such file")


# ---- errors that named the wrong thing --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--compare", "=1,2"], ["--compare: no key before '='"]),
        (["--compare", "gpus.0.pcie.lanes=4,abc"], ["--compare gpus.0.pcie.lanes=abc"]),
        (["--compare", "batch_size=1,,2"], ["--compare batch_size=1,,2"]),
        (["--workload", ""], ["no workload given (an empty name)"]),
        (
            ["--set", "serve.users=1000000"],
            ["--set serve.users=1000000: the workload has no 'serve' block"],
        ),
        (["--set", "finetune=qlora"], ["'finetune' is a block of keys (method, "]),
        (
            ["--workload", "llama-3.1-8b-serve", "--set", "serve.engine=vlm"],
            ["field 'serve.engine'", "'batched', 'local', 'vllm' or 'sglang' (got 'vlm')"],
        ),
    ],
)
def test_estimate_errors_name_the_option_that_is_wrong(args: list[str], needles: list[str]) -> None:
    if "--workload" not in args:
        args = ["--workload", "resnet50", *args]
    code, _, err = run_in_process("estimate", str(BUILD), *args)
    assert_one_line_error(code, err, *needles)


@pytest.mark.parametrize(
    ("workload", "needle"),
    [
        (":0.5", "--workload :0.5: no workload before the weight"),
        ("resnet50:1:2", "--workload resnet50:1:2: more than one weight"),
        ("", "no workload given"),
    ],
)
def test_plan_workload_weights_are_read_as_written(workload: str, needle: str) -> None:
    code, _, err = run_in_process("plan", "--workload", workload, "--budget", "3000")
    assert_one_line_error(code, err, needle)


def test_set_of_a_block_on_a_zoo_workload_without_it_says_so() -> None:
    code, _, err = run_in_process(
        "plan", "--workload", "resnet50", "--budget", "3000", "--set", "serve.users=8"
    )
    assert_one_line_error(code, err, "--set serve.users=8", "no 'serve' block")
    assert "dlrig workloads --kind serving" in err


def test_measured_taken_as_an_unquoted_date(tmp_path: Path) -> None:
    """YAML reads `2026-01-01` as a date: the field takes it as the ISO text it was."""
    code, _, err = run_in_process("estimate", str(BUILD), "--workload", "resnet50", "--set",
                                  "measured.taken=2026-01-01", "--json")  # fmt: skip
    assert code == 0, err
    build = _build_with(
        tmp_path, "m.yaml", BUILD.read_text() + "measured:\n  taken: 2026-01-01T10:00:00Z\n"
    )
    code, _, err = run_in_process("check", build)
    assert code == 0, err


def test_standard_input_given_twice_is_named() -> None:
    code, _, err = run_in_process("compare", "-", "-", "--workload", "resnet50",
                                  stdin=BUILD.read_bytes())  # fmt: skip
    assert_one_line_error(code, err, "standard input is given twice")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("42\n", "the top level is a number (42)"),
        ("- a\n- b\n", "the top level is a list"),
        ("just words\n", "the top level is a string ('just words')"),
    ],
)
def test_a_document_that_is_not_a_mapping_says_what_it_is(
    text: str, needle: str, tmp_path: Path
) -> None:
    code, _, err = run_in_process("check", _build_with(tmp_path, "s.yaml", text))
    assert_one_line_error(code, err, needle)


def test_a_nul_byte_is_named_with_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "nul.yaml"
    path.write_bytes(b"name: x\ncase: a\x00b\n")
    code, _, err = run_in_process("check", str(path))
    assert_one_line_error(code, err, "at line 2, column 8: U+0000 NUL is not allowed")


def test_probe_references_say_what_they_take() -> None:
    code, _, err = run_in_process("check", "probe:7")
    assert_one_line_error(code, err, "no saved probe to use as probe:7")
    code, _, err = run_in_process("check", "probe:seven")
    assert_one_line_error(code, err, "probe:seven: expected probe:latest or probe:ID")


# ---- files: checked before the work, and nothing elsewhere -------------------------------


def test_watch_refuses_a_page_path_before_running_the_job(tmp_path: Path) -> None:
    mine = tmp_path / "notes.html"
    mine.write_text("<p>my notes</p>")
    marker = tmp_path / "job-ran"
    code, _, err = run_in_process(
        "watch", "--html", str(mine), "--", sys.executable, "-c",
        f"open({str(marker)!r}, 'w').close()",
    )  # fmt: skip
    assert_one_line_error(code, err, "exists and is not a page dlrig wrote")
    assert not marker.exists() and mine.read_text() == "<p>my notes</p>"


@pytest.mark.parametrize(
    ("args", "work"),
    [
        (["plan", "--workload", "resnet50", "--budget", "8000"], "dlrig.plan.search.plan"),
        (["compare", str(BUILD), str(BUILD), "--workload", "resnet50"], "dlrig.model.estimate"),
        (["probe", "--quick"], "dlrig.probe.run.run_probe"),
    ],
)
def test_a_page_path_is_refused_before_the_work(
    args: list[str], work: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_work(*_: object, **__: object) -> None:
        raise AssertionError(f"{work} ran before --html was checked")

    module, _, name = work.rpartition(".")
    monkeypatch.setattr(f"{module}.{name}", no_work)
    code, _, err = run_in_process(*args, "--html", str(tmp_path / "no" / "such" / "p.html"))
    assert_one_line_error(code, err, "no folder", "dlrig creates no folders")
    assert _files(tmp_path) == set()


@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("newdir/", "names a folder; --html takes a file name"),
        ("", "--html: an empty file name"),
        ("missing/x.html", "no folder missing"),
    ],
)
def test_html_paths_that_name_no_file_to_write(
    target: str, needle: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_in_process("check", str(BUILD), "--html", target)
    assert_one_line_error(code, err, needle)
    assert _files(tmp_path) == set()


def test_html_dash_writes_the_page_to_stdout_and_the_result_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_in_process("check", str(BUILD), "--html", "-", "--json")
    assert code == 0, err
    assert out.startswith("<!DOCTYPE html>") and '<meta name="generator" content="dlrig' in out
    assert json.loads(err)["build"]["name"] == "budget 1x RTX 3090 desktop"
    assert _files(tmp_path) == set()  # no file named '-'


def test_html_through_a_symlink_loop_is_refused_and_the_link_kept(tmp_path: Path) -> None:
    loop = tmp_path / "loop.html"
    loop.symlink_to(loop)
    code, _, err = run_in_process("check", str(BUILD), "--html", str(loop))
    assert_one_line_error(code, err, "loop.html: cannot use this path")
    assert loop.is_symlink() and os.readlink(loop) == str(loop)


def test_html_through_a_link_to_a_dlrig_page_replaces_the_page_not_the_link(
    tmp_path: Path,
) -> None:
    page, link = tmp_path / "page.html", tmp_path / "link.html"
    assert run_in_process("check", str(BUILD), "--html", str(page))[0] == 0
    link.symlink_to(page)
    assert run_in_process("check", str(BUILD), "--html", str(link))[0] == 0
    assert link.is_symlink() and page.read_text().startswith("<!DOCTYPE html>")
    assert sorted(_files(tmp_path)) == ["link.html", "page.html"]  # no temp file left


def test_a_failed_page_write_names_the_page_not_its_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in a read-only folder (root ignores the permission, so the refusal is simulated)."""
    import dlrig.io.writing as writing

    real_open = os.open

    def refuse_temp(path: object, *args: object, **kwargs: object) -> int:
        if ".dlrig-page-" in str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(writing.os, "open", refuse_temp)
    page = tmp_path / "p.html"
    code, _, err = run_in_process("check", str(BUILD), "--html", str(page))
    assert_one_line_error(code, err, f"{page}: cannot write (Permission denied)")
    assert ".dlrig-page" not in err and _files(tmp_path) == set()


def test_save_makes_one_folder_but_not_its_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run_in_process("plan", "--workload", "resnet50", "--budget", "3000",
                                  "--save", "a/b")  # fmt: skip
    assert_one_line_error(code, err, "a/b: no folder a")
    assert _files(tmp_path) == set()
    code, _, err = run_in_process("plan", "--workload", "resnet50", "--budget", "3000",
                                  "--top", "1", "--save", "plans/")  # fmt: skip
    assert code == 0, err
    assert _files(tmp_path) == {"plans", "plans/plan-1.yaml"}


def test_save_onto_a_file_is_refused_before_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_search(*_: object, **__: object) -> None:
        raise AssertionError("the search ran before --save was checked")

    monkeypatch.setattr("dlrig.plan.search.plan", no_search)
    mine = tmp_path / "plans"
    mine.write_text("mine")
    code, _, err = run_in_process("plan", "--workload", "resnet50", "--budget", "3000",
                                  "--save", str(mine))  # fmt: skip
    assert_one_line_error(code, err, "exists and is not a folder")
    assert mine.read_text() == "mine"


@pytest.mark.parametrize(
    ("command", "exit_code", "needle"),
    [
        (["no-such-command-h39"], 127, "no such file or command"),
        ([str(BUILD)], 126, "permission denied"),  # a file without the executable bit
        ([str(EXAMPLES)], 126, "it is a folder"),
    ],
)
def test_watch_exits_as_env_does_when_the_command_cannot_start(
    command: list[str], exit_code: int, needle: str
) -> None:
    """POSIX shells, `env` and `timeout`: 127 for a command not found, 126 for one found that
    cannot run."""
    code, _, err = run_in_process("watch", "--", *command)
    assert code == exit_code, err
    lines = err.rstrip("\n").split("\n")
    assert lines[0].startswith("dlrig: error: cannot start") and needle in lines[0]
    assert len(lines) <= 2 and "Traceback" not in err


# ---- help, completion, schema --------------------------------------------------------------


@pytest.mark.parametrize("command", ["plan", "check", "estimate", "compare", "upgrade", "probe",
                                     "watch", "workloads", "schema", "catalog"])  # fmt: skip
def test_help_names_values_with_placeholders_and_keeps_choices_whole(command: str) -> None:
    out = run_subprocess(command, "--help", env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    assert "<bool>" not in out.stdout and "<list[" not in out.stdout and "<str>" not in out.stdout
    if command == "plan":
        choices = "--objective [throughput|time-to-train|cost-per-run|perf-per-dollar|cheapest]"
        assert choices in out.stdout
        assert "--workload W[:WEIGHT]" in out.stdout and "--set KEY=VALUE" in out.stdout


def test_shell_completion_is_offered_and_completes_zoo_names() -> None:
    assert "--install-completion" in run_subprocess("--help").stdout
    # Typer detects the calling shell unless told not to; CI's shell is sh, which it does not
    # support, so the test names bash as a user under sh would have to.
    script = run_subprocess(
        "--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    )
    assert script.returncode == 0 and "complete" in script.stdout
    # The script's name is `dlrig`: its completion variable is _DLRIG_COMPLETE.
    as_script = "import sys; sys.argv[0] = 'dlrig'; from dlrig.cli import main; main()"
    words = subprocess.run(
        [sys.executable, "-c", as_script],
        env={**os.environ, "_DLRIG_COMPLETE": "complete_bash",
             "COMP_WORDS": "dlrig estimate b.yaml -w llama-3-8b-l", "COMP_CWORD": "4"},
        capture_output=True, text=True, timeout=60, check=False,
    ).stdout.split()  # fmt: skip
    assert words == ["llama-3-8b-lora"]


def test_schema_takes_json_as_every_command_does() -> None:
    with_flag = run_in_process("schema", "build", "--json")
    assert with_flag[0] == 0 and json.loads(with_flag[1])["$schema"].startswith("https://")
    assert with_flag[1] == run_in_process("schema", "build")[1]
