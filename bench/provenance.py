"""Which constants were set looking at which rows (bench/provenance.toml), and what that makes
of a bench: held out while no constant was set on its rows, calibration once one was."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

FILE = Path(__file__).resolve().parent / "provenance.toml"


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    data: str
    kind: str  # training | serving | memory | latency
    bench: str


@dataclass(frozen=True)
class Constant:
    name: str
    where: str
    how: str  # fitted | chosen
    rows: tuple[str, ...]
    note: str


@cache
def _document() -> tuple[dict[str, Source], tuple[Constant, ...]]:
    doc = tomllib.loads(FILE.read_text(encoding="utf-8"))
    sources = {k: Source(k, **v) for k, v in doc["sources"].items()}
    constants = tuple(
        Constant(c["name"], c["where"], c["how"], tuple(c["rows"]), c["note"])
        for c in doc["constants"]
    )
    for c in constants:
        unknown = set(c.rows) - set(sources)
        if unknown or c.how not in ("fitted", "chosen"):
            raise ValueError(f"{FILE}: constant {c.name!r}: unknown source or how: {unknown}")
    return sources, constants


def sources() -> dict[str, Source]:
    return _document()[0]


def set_on(keys: list[str] | tuple[str, ...], how: str | None = None) -> list[Constant]:
    """The constants set looking at any of these sources' rows (only `how` ones if given)."""
    return [c for c in _document()[1] if set(c.rows) & set(keys) and (how is None or c.how == how)]


def held_out(keys: list[str] | tuple[str, ...], *, refitted: bool = False) -> bool:
    """No constant was set on these rows; with `refitted`, fitted ones do not count (the figure
    comes from a fit without these rows), chosen ones still do."""
    return not set_on(keys, "chosen" if refitted else None)


def status(keys: list[str] | tuple[str, ...], *, refitted: bool = False) -> str:
    """One sentence for a result file: held out, or calibration and by which constants."""
    found = set_on(keys, "chosen" if refitted else None)
    if not found:
        return (
            "Held out: no constant of the model was set looking at these rows "
            "(bench/provenance.toml)."
        )
    names = "; ".join(f"{c.name} ({c.how}, {c.where})" for c in found)
    return (
        "Calibration, not held out: these rows were looked at to set "
        f"{names} (bench/provenance.toml)."
    )
