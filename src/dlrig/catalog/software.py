"""What runs on a GPU beyond its datasheet: AMD's ROCm support table and the ROCm status of the
libraries a training job may need (bitsandbytes for QLoRA, FlashAttention-2), by date, from
`data/software.toml`. Pure lookups; the rules (rules/software.py) judge builds with them."""

from __future__ import annotations

import datetime as dt
import functools
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Literal

import pydantic
from pydantic import BaseModel, ConfigDict

from dlrig.errors import CatalogError

SOFTWARE_FILE = "catalog/data/software.toml"

RocmMark = Literal["supported", "deprecated", "unsupported"]
GpuLine = Literal["radeon", "radeon-pro", "instinct"]
Level = Literal["alpha", "supported"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _GpuRow(_Strict):
    name: str
    llvm_target: str
    line: GpuLine
    rocm_linux: RocmMark
    listed_since: dt.date | None = None
    source: str


class _StatusRow(_Strict):
    since: dt.date
    level: Level
    targets: tuple[str, ...]
    source: str


class _LibraryRow(_Strict):
    name: str
    needed_for: str
    status: tuple[_StatusRow, ...]


class _SoftwareFile(_Strict):
    read: dt.date
    gpu: tuple[_GpuRow, ...]
    library: tuple[_LibraryRow, ...]


@dataclass(frozen=True)
class RocmGpu:
    """A GPU's row of AMD's ROCm Linux support table."""

    name: str
    llvm_target: str
    line: GpuLine
    rocm_linux: RocmMark
    listed_since: dt.date | None
    source: str

    @property
    def radeon(self) -> bool:
        """A Radeon or Radeon PRO card: ROCm's Radeon multi-GPU limits apply (SW.rccl)."""
        return self.line != "instinct"


@dataclass(frozen=True)
class LibraryStatus:
    """From `since` on, the library runs on `targets` at `level`."""

    since: dt.date
    level: Level
    targets: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Library:
    """A library's ROCm statuses, oldest first."""

    name: str
    needed_for: str
    statuses: tuple[LibraryStatus, ...]

    def status(self, target: str, on: dt.date) -> LibraryStatus | None:
        """The newest status dated on or before `on` that names the target (None: none does,
        which means not read, not unsupported)."""
        found = [s for s in self.statuses if s.since <= on and target in s.targets]
        return found[-1] if found else None

    def first(self, target: str) -> LibraryStatus | None:
        """The oldest status that names the target."""
        return next((s for s in self.statuses if target in s.targets), None)

    def supported_since(self, target: str) -> dt.date | None:
        """The day the library's first full ('supported') status named the target."""
        return next(
            (s.since for s in self.statuses if s.level == "supported" and target in s.targets),
            None,
        )


@dataclass(frozen=True)
class SoftwareTable:
    """The ROCm table and the libraries, as read on `read`."""

    read: dt.date
    gpus: tuple[RocmGpu, ...]
    libraries: tuple[Library, ...]

    def rocm(self, gpu_name: str) -> RocmGpu | None:
        """The ROCm row of a GPU (None: the table has none for it)."""
        return next((g for g in self.gpus if g.name == gpu_name), None)

    def library(self, name: str) -> Library:
        """A library by name (a name not in the table is a programming error)."""
        for lib in self.libraries:
            if lib.name == name:
                return lib
        raise KeyError(name)


@functools.lru_cache(maxsize=1)
def software_table() -> SoftwareTable:
    """The shipped table, validated once per process."""
    resource = resources.files("dlrig.catalog").joinpath("data", "software.toml")
    with resource.open("rb") as fh:
        raw = tomllib.load(fh)
    try:
        doc = _SoftwareFile.model_validate(raw)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CatalogError(f"{SOFTWARE_FILE}: {where}: {first['msg']}") from None
    return SoftwareTable(
        read=doc.read,
        gpus=tuple(
            RocmGpu(g.name, g.llvm_target, g.line, g.rocm_linux, g.listed_since, g.source)
            for g in doc.gpu
        ),
        libraries=tuple(
            Library(
                lib.name,
                lib.needed_for,
                tuple(
                    LibraryStatus(s.since, s.level, s.targets, s.source)
                    for s in sorted(lib.status, key=lambda s: s.since)
                ),
            )
            for lib in doc.library
        ),
    )
