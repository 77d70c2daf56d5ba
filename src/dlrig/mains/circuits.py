"""Circuits (`mains/data/circuits.toml`) and a build's mains: one circuit or several
independent ones of a kind (`2x-us-15a`: two 15 A circuits, one PSU or more on each)."""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from dlrig.errors import CatalogError, ValidationError
from dlrig.io.validation import closest

# The circuit assumed where neither the command, the build file nor the user's config names one:
# the commonest outlet of the market the catalog prices in (US dollars), and the strictest of
# the common ones, so that a build judged on it runs on the others too.
DEFAULT_CIRCUIT = "us-15a"
# Independent circuits one machine may use (tinybox pro: four PSUs on 200 V+ feeds).
MAX_CIRCUITS = 16
# Below this voltage the mains is "low line" (100-127 V): PSUs give their 115 V ratings and
# efficiencies there, their 230 V ones at and above it.
HIGH_LINE_MIN_V = 200.0

_COUNTED = re.compile(r"^\s*(\d+)\s*[x×*]\s*-?\s*(.+)$", re.IGNORECASE)


class _CircuitEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    description: str
    volts: Annotated[float, Field(gt=0, le=1000)]
    breaker_a: Annotated[float, Field(gt=0, le=1000)]
    continuous_w: Annotated[float, Field(gt=0, le=1_000_000)]
    sources: dict[str, str]


class _CircuitFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    circuit: tuple[_CircuitEntry, ...]


@dataclass(frozen=True)
class Circuit:
    """One branch circuit: its voltage, breaker, and what it carries for hours
    (`continuous_w`, with its source)."""

    name: str
    description: str
    volts: float
    breaker_a: float
    continuous_w: float
    source: str
    aliases: tuple[str, ...] = ()

    @property
    def nameplate_w(self) -> float:
        """Volts times the breaker's amps: what the breaker holds for minutes, not hours."""
        return self.volts * self.breaker_a

    @property
    def low_line(self) -> bool:
        """100-127 V mains: PSUs deliver their 115 V rating there."""
        return self.volts < HIGH_LINE_MIN_V


@dataclass(frozen=True)
class Mains:
    """Where a build is plugged in: `count` independent circuits of one kind, and how it was
    chosen (`origin`: 'default', 'build file', 'config file PATH', '--circuit')."""

    circuit: Circuit
    count: int = 1
    # How it was chosen says nothing about the circuit: two builds on us-15a are alike.
    origin: str = field(default="default", compare=False)

    @property
    def name(self) -> str:
        """As a build file writes it: `us-15a`, `2x-us-15a`."""
        return self.circuit.name if self.count == 1 else f"{self.count}x-{self.circuit.name}"

    @property
    def continuous_w(self) -> float:
        """What all the circuits carry together for hours, W."""
        return self.circuit.continuous_w * self.count

    def describe(self) -> str:
        """'us-15a (120 V, 15 A: 1,440 W continuous)'."""
        c = self.circuit
        each = "" if self.count == 1 else " each"
        return (
            f"{self.name} ({c.volts:g} V, {c.breaker_a:g} A: {c.continuous_w:,.0f} W "
            f"continuous{each})"
        )


@functools.cache
def load_circuits() -> tuple[Circuit, ...]:
    """The built-in circuits, validated once per process."""
    text = resources.files("dlrig.mains").joinpath("data/circuits.toml").read_text("utf-8")
    try:
        parsed = _CircuitFile.model_validate(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, PydanticValidationError) as exc:  # a packaging bug
        raise CatalogError(f"mains/data/circuits.toml is malformed: {exc}") from exc
    return tuple(
        Circuit(
            name=e.name,
            description=e.description,
            volts=e.volts,
            breaker_a=e.breaker_a,
            continuous_w=e.continuous_w,
            source=e.sources["continuous"],
            aliases=e.aliases,
        )
        for e in parsed.circuit
    )


def circuit_names() -> tuple[str, ...]:
    """Every circuit's name, in the data file's order."""
    return tuple(c.name for c in load_circuits())


def _key(text: str) -> str:
    return re.sub(r"[\s_]+", "-", text.strip().lower())


def find_mains(text: str, *, where: str, origin: str) -> Mains:
    """The mains a name says (`us-15a`, `2x-us-15a`, an alias such as `schuko`); an unknown
    name is a ValidationError naming `where` and the closest circuits."""
    count = 1
    name = text
    counted = _COUNTED.match(text)
    if counted:
        count, name = int(counted.group(1)), counted.group(2)
    if not 1 <= count <= MAX_CIRCUITS:
        raise ValidationError(
            f"{where}: {count} circuits in '{text}': expected 1 to {MAX_CIRCUITS}",
            field=where,
            reason=f"expected 1 to {MAX_CIRCUITS} circuits",
        )
    key = _key(name)
    for circuit in load_circuits():
        if key == circuit.name or key in circuit.aliases:
            return Mains(circuit=circuit, count=count, origin=origin)
    near = closest(key, [c.name for c in load_circuits()])
    raise ValidationError(
        f"{where}: unknown circuit '{text}': expected one of {', '.join(circuit_names())} "
        "(or NNx-NAME for NN independent circuits)",
        hint=f"closest: {', '.join(near)}" if near else None,
        field=where,
        reason="unknown circuit",
    )


@functools.cache
def default_mains() -> Mains:
    """The circuit assumed when nothing names one (DEFAULT_CIRCUIT); found once per process
    (every check and estimate of a build without one asks it)."""
    return find_mains(DEFAULT_CIRCUIT, where="default circuit", origin="default")
