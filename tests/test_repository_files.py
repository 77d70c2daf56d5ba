"""Issue 39: the repository stands on its own. Every file README and the docs point at is in
it, and no file points outside it at the notes the project started from (a user's clone has
nothing beside it: the specification is docs/design.md and docs/guide.md, the zoo's reference
data data/reference/)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A repository path in backticks: a top-level folder of the repository, then a path.
PATH = re.compile(r"`((?:src|docs|tests|bench|scripts|examples|data)/[\w./-]*[\w/])`")
# The starting notes' files, which live beside the repository and not in it.
OUTSIDE = re.compile(r"shared/(?:design|guide|style)\.md|shared/(?:seeds|data)\b")


def test_every_path_readme_and_the_docs_name_exists() -> None:
    named = {(doc.name, m) for doc in DOCS for m in PATH.findall(doc.read_text(encoding="utf-8"))}
    assert len(named) > 20  # README names the catalog, the model data, the scripts, the docs
    missing = [
        (doc, path) for doc, path in sorted(named) if "*" not in path and not (ROOT / path).exists()
    ]
    assert missing == []


def test_no_file_points_at_the_notes_outside_the_repository() -> None:
    folders = ("src", "tests", "bench", "scripts", "docs", "data", "examples")
    files = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    files += [
        f
        for d in folders
        for f in (ROOT / d).rglob("*")
        # pip's build metadata (src/dlrig.egg-info) copies README as it was at install time
        if f.is_file() and not any(p.endswith(".egg-info") or p == "__pycache__" for p in f.parts)
    ]
    pointing = []
    for f in files:
        if f.suffix in {".png", ".sqlite3", ".pyc"} or f == Path(__file__):
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        pointing += [f"{f.relative_to(ROOT)}: {m}" for m in OUTSIDE.findall(text)]
    assert pointing == []


def test_the_specification_is_in_the_repository() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    # The contracts README relies on: the commands with their exit codes, the JSON keys, and
    # the bottleneck vocabulary; the guide's worked examples with their numbers.
    for contract in ("## Commands", "## JSON keys that others read", "gpu_memory_bandwidth"):
        assert contract in design
    assert "4x250 + 150 + 100 = 1250 W" in guide  # PSU.1's worked example
