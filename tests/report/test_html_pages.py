"""Every kind of page through the real CLI, opened in headless Chromium: it renders with no
console error and no request leaving the page, its charts drew marks, and a hostile build name
stays text. Screenshots land in the test's tmp dir (look at them when a page changes)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from browser import console_errors, needs_chromium, render

EXAMPLES = Path(__file__).parents[2] / "examples" / "builds"
SPACED = EXAMPLES / "2x-4090-spaced-workstation.yaml"
BLOWER = EXAMPLES / "4x-blower-workstation.yaml"
BUDGET = EXAMPLES / "budget-1gpu-3090.yaml"
HOSTILE = "<script>alert(1)</script>"


def dlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlrig", *args], capture_output=True, text=True, check=False
    )


def _pages(tmp: Path) -> dict[str, tuple[list[str], int]]:
    """Page name -> (command, how many charts it must draw)."""
    return {
        "check": (["check", str(BLOWER), "--workload", "resnet50"], 1),
        "estimate": (["estimate", str(SPACED), "--workload", "resnet50"], 3),
        "lanes": (
            ["estimate", str(SPACED), "--workload", "resnet152",
             "--compare", "gpus.0.pcie.lanes=4,8,16"], 2,
        ),
        "plan": (["plan", "--workload", "resnet50", "--budget", "4000"], 2),
        "compare": (["compare", str(SPACED), str(BUDGET), "--workload", "resnet50"], 3),
    }  # fmt: skip


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("name", ["check", "estimate", "lanes", "plan", "compare"])
def test_page_renders_offline_with_charts(name: str, tmp_path: Path) -> None:
    args, charts = _pages(tmp_path)[name]
    page = tmp_path / f"{name}.html"
    out = dlrig(*args, "--html", str(page))
    assert out.returncode in (0, 1), out.stderr  # check/estimate exit 1 on an error finding
    assert f"page written: {page}" in out.stderr
    html = page.read_text()
    # Nothing outside the page: no URL to fetch, and a policy that refuses any request.
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', html)
    assert "default-src 'none'" in html
    shot = render(page, tmp_path / f"{name}.png")
    assert console_errors(shot.log) == []
    svgs = re.findall(r"<svg class=\"chart\".*?</svg>", shot.dom, flags=re.S)
    assert len(svgs) >= charts
    assert all(re.search(r"<(rect|circle|polyline)[^>]*class=\"(mark|line|card)", s) for s in svgs)
    assert shot.screenshot.stat().st_size > 10_000  # a blank page is ~5 KB


@pytest.mark.slow
@needs_chromium
def test_a_hostile_build_name_renders_as_text(tmp_path: Path) -> None:
    build = tmp_path / "evil.yaml"
    build.write_text(SPACED.read_text().replace("name: ", f"name: '{HOSTILE}' #", 1))
    page = tmp_path / "evil.html"
    out = dlrig("check", str(build), "--html", str(page))
    assert out.returncode in (0, 1), out.stderr
    html = page.read_text()
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    shot = render(page, tmp_path / "evil.png")
    assert HOSTILE.replace("<", "&lt;").replace(">", "&gt;") in shot.dom  # shown as text
    assert console_errors(shot.log) == []


def test_html_never_overwrites_a_file_dlrig_did_not_write(tmp_path: Path) -> None:
    mine = tmp_path / "notes.html"
    mine.write_text("<p>my notes</p>")
    out = dlrig("check", str(SPACED), "--html", str(mine))
    assert out.returncode == 2
    assert "not a page dlrig wrote" in out.stderr and "Traceback" not in out.stderr
    assert mine.read_text() == "<p>my notes</p>"
    folder = dlrig("check", str(SPACED), "--html", str(tmp_path))
    assert folder.returncode == 2 and "is a folder" in folder.stderr


def test_plan_page_names_the_cards_no_priced_server_holds(tmp_path: Path) -> None:
    """The page says what the terminal's search line says: at 8,000 USD a card of the A100
    SXM4 80GB (its 4,000 USD used price, AI Tool Discovery 2026-03-20), the MI100 or the A40
    fits the budget, but no server in the catalog that holds them has a price; the terminal
    names the first three and counts the rest, which --json lists in full."""
    page = tmp_path / "plan.html"
    out = dlrig("plan", "--workload", "resnet50", "--budget", "8000", "--html", str(page))
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    listed = json.loads(
        dlrig("plan", "--workload", "resnet50", "--budget", "8000", "--json").stdout
    )["search"]["gpus_without_priced_server"]
    assert {"A100 SXM4 80GB", "AMD Instinct MI100", "NVIDIA A40"} <= set(listed)
    assert "not planned for want of a priced server: " + ", ".join(listed[:3]) in html
    assert f"and {len(listed) - 3} more" in html and "give a quote with --catalog" in html
