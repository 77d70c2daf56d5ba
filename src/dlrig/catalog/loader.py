"""Load the built-in catalog (TOML files in `data/`) and a user's overrides; look parts up.

Each data file `data/<kind>.toml` holds `[[part]]` tables in the schema of `schema.py`. A user's
`--catalog FILE` (YAML or TOML) has one list per kind (`gpus: [...]`); an entry whose name is
already in the catalog patches that part (a new price, a corrected spec), any other is added.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import pydantic

from dlrig.catalog.schema import (
    CPU,
    GPU,
    PART_MODELS,
    PSU,
    Case,
    LoopPart,
    MemoryKit,
    Motherboard,
    PartBase,
    Platform,
    Storage,
)
from dlrig.enums import PartKind
from dlrig.errors import CatalogError, UnknownPartError, ValidationError
from dlrig.io.documents import read_document
from dlrig.io.validation import closest, refuse_bools_read_as_numbers, to_validation_error

P = TypeVar("P", bound=PartBase)

KIND_OF_MODEL: dict[type[PartBase], str] = {model: kind for kind, model in PART_MODELS.items()}


def normalize(name: str) -> str:
    """Lower-case alphanumerics only: 'GeForce RTX-4090' and 'geforce rtx 4090' are one name."""
    return re.sub(r"[^a-z0-9]+", "", name.lower())


@dataclass(frozen=True)
class Catalog:
    """All parts by kind, with name lookup that forgives case, spacing and vendor prefixes."""

    parts: dict[str, tuple[PartBase, ...]]
    _index: dict[str, dict[str, PartBase]] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        for kind, items in self.parts.items():
            index: dict[str, PartBase] = {}
            for part in items:
                for label in (part.name, *part.aliases):
                    index.setdefault(normalize(label), part)
            self._index[kind] = index

    def without_used_prices(self) -> Catalog:
        """The catalog with every used-market street price dropped, so that a part is priced
        new (its new street price, else its launch price): for buyers who will not buy used."""
        unset = {"street_price_usd": None, "street_price_date": None, "street_market": None}
        no_used = {"used_price_usd": None, "used_price_date": None}

        def new_only(p: PartBase) -> PartBase:
            drop = {**(unset if p.street_market == "used" else {}), **no_used}
            return p.model_copy(update=drop) if p.street_market == "used" or p.used_price_usd else p

        return Catalog(
            {kind: tuple(new_only(p) for p in items) for kind, items in self.parts.items()}
        )

    def of(self, kind: str) -> tuple[PartBase, ...]:
        """Every part of a kind ('gpus', 'cpus', ...), in catalog order."""
        return self.parts.get(kind, ())

    @property
    def gpus(self) -> tuple[GPU, ...]:
        return self._typed("gpus", GPU)

    @property
    def cpus(self) -> tuple[CPU, ...]:
        return self._typed("cpus", CPU)

    @property
    def motherboards(self) -> tuple[Motherboard, ...]:
        return self._typed("motherboards", Motherboard)

    @property
    def psus(self) -> tuple[PSU, ...]:
        return self._typed("psus", PSU)

    @property
    def cases(self) -> tuple[Case, ...]:
        return self._typed("cases", Case)

    @property
    def storage(self) -> tuple[Storage, ...]:
        return self._typed("storage", Storage)

    @property
    def memory(self) -> tuple[MemoryKit, ...]:
        return self._typed("memory", MemoryKit)

    @property
    def platforms(self) -> tuple[Platform, ...]:
        return self._typed("platforms", Platform)

    @property
    def cooling(self) -> tuple[LoopPart, ...]:
        return self._typed("cooling", LoopPart)

    def _typed(self, kind: str, model: type[P]) -> tuple[P, ...]:
        return tuple(p for p in self.of(kind) if isinstance(p, model))

    def find(self, model: type[P], name: str) -> P:
        """The part of this type called name (or an alias); UnknownPartError with the three
        closest names otherwise. A query that is a unique fragment ('4090') also matches."""
        kind = KIND_OF_MODEL[model]
        index = self._index.get(kind, {})
        key = normalize(name)
        part = index.get(key)
        if part is None and key:
            candidates = {p.name: p for k, p in index.items() if key in k}
            if len(candidates) == 1:
                part = next(iter(candidates.values()))
        if part is None:
            names = [p.name for p in self.of(kind)]
            near = closest(name, names)
            singular = kind.rstrip("s") if kind != "storage" else "storage device"
            raise UnknownPartError(
                f"unknown {singular} '{name}'",
                hint=f"closest catalog names: {', '.join(near)}" if near else None,
            )
        if not isinstance(part, model):
            raise CatalogError(f"catalog entry '{part.name}' is not a {model.__name__}")
        return part

    def with_overrides(
        self, doc: dict[str, Any], source: str, *, today: dt.date | None = None
    ) -> Catalog:
        """A new catalog with a user's entries patched in (same name) or appended; with
        `today`, an entry's price dated after tomorrow is an error (a day's slack for the
        time zones ahead of this machine's)."""
        parts = dict(self.parts)
        for kind, entries in doc.items():
            if kind not in PART_MODELS:
                near = closest(kind, PART_MODELS)
                raise CatalogError(
                    f"{source}: unknown part kind '{kind}'",
                    hint=f"expected one of {', '.join(PART_MODELS)}; closest: {near[0]}",
                )
            if not isinstance(entries, list):
                raise CatalogError(f"{source}: '{kind}' must be a list of parts")
            model = PART_MODELS[PartKind(kind)]
            current = list(parts.get(kind, ()))
            by_name = {normalize(p.name): i for i, p in enumerate(current)}
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict) or "name" not in entry:
                    raise CatalogError(f"{source}: {kind}.{i}: each part needs a 'name'")
                where = f"{source}: {kind}.{i}"
                at = by_name.get(normalize(str(entry["name"])))
                base = current[at].model_dump(exclude_unset=True) if at is not None else {}
                if "price_usd" in entry and "street_price_usd" not in entry:
                    # The user's own price is the one to use, not the catalog's street price.
                    for key in ("street_price_usd", "street_price_date", "street_market"):
                        base.pop(key, None)
                if "used_price_usd" not in entry and (
                    "price_usd" in entry or "street_price_usd" in entry
                ):
                    # ... nor the catalog's used price (a buyer's quote replaces both)
                    for key in ("used_price_usd", "used_price_date"):
                        base.pop(key, None)
                if "street_price_usd" in entry:
                    # A new street price brings its own date and market, not the catalog's.
                    for key in ("street_price_date", "street_market"):
                        if key not in entry:
                            base.pop(key, None)
                merged = {**base, **entry}
                if at is not None:
                    merged["name"] = current[at].name
                part = _validate_part(model, merged, where)
                if today is not None:
                    _refuse_future_dates(part, entry, where, today)
                if at is None:
                    by_name[normalize(part.name)] = len(current)
                    current.append(part)
                else:
                    current[at] = part
            parts[kind] = tuple(current)
        return Catalog(parts)


def _refuse_future_dates(part: PartBase, entry: dict[str, Any], where: str, today: dt.date) -> None:
    for key in ("price_date", "street_price_date"):
        date = getattr(part, key)
        if key in entry and date is not None and date > today + dt.timedelta(days=1):
            raise CatalogError(
                f"{where}: field '{key}': {date.isoformat()} is in the future "
                f"(today is {today.isoformat()})"
            )


def _validate_part(model: type[PartBase], entry: dict[str, Any], where: str) -> PartBase:
    try:
        part = model.model_validate(entry)
        refuse_bools_read_as_numbers(where, entry, part)
    except pydantic.ValidationError as exc:
        raise CatalogError(to_validation_error(where, exc, model).message) from None
    except ValidationError as exc:
        raise CatalogError(exc.message) from None
    return part


def _data_files() -> dict[str, bytes]:
    """The bytes of each kind's data file (a kind without one has none)."""
    folder = resources.files("dlrig.catalog").joinpath("data")
    files: dict[str, bytes] = {}
    for kind in PART_MODELS:
        resource = folder.joinpath(f"{kind}.toml")
        if resource.is_file():
            files[kind] = resource.read_bytes()
    return files


def _parse_data_file(kind: PartKind, data: bytes) -> tuple[PartBase, ...]:
    model = PART_MODELS[kind]
    doc = tomllib.loads(data.decode("utf-8"))
    return tuple(
        _validate_part(model, entry, f"catalog/data/{kind}.toml: part {i}")
        for i, entry in enumerate(doc.get("part", []))
    )


def _validating_code() -> list[bytes]:
    """The source of the modules whose code decides what a data file's parts are (their
    models, enums and unit types, this loader and its checks): part of the cache's key."""
    import dlrig.enums
    import dlrig.io.validation
    import dlrig.units
    from dlrig.catalog import schema

    modules = (schema, dlrig.enums, dlrig.units, dlrig.io.validation, sys.modules[__name__])
    return [Path(m.__file__).read_bytes() for m in modules if m.__file__]


def _cached_parts(parts: dict[str, Any] | None) -> dict[str, tuple[PartBase, ...]] | None:
    """A cache's parts when they have the shape this code gives them, else None."""
    if parts is None or set(parts) != set(PART_MODELS):
        return None
    for kind, model in PART_MODELS.items():
        items = parts[kind]
        if not isinstance(items, tuple) or not all(isinstance(p, model) for p in items):
            return None
    return parts


def load_builtin_parts(cache_dir: Path | None = None) -> dict[str, tuple[PartBase, ...]]:
    """The built-in parts by kind: parsed and validated from the data files, or, with
    cache_dir, read from the cache there when it holds these files' parts (and written there
    when it does not; catalog/cache.py)."""
    data = _data_files()
    key = None
    if cache_dir is not None:
        from dlrig.catalog import cache

        try:
            key = cache.cache_key(data, _validating_code(), cache.runtime_versions())
        except OSError:  # the package's sources are not files (a zip): no cache
            key = None
        if key is not None:
            cached = _cached_parts(cache.read_cache(cache_dir, key))
            if cached is not None:
                return cached
    parts: dict[str, tuple[PartBase, ...]] = {
        kind: _parse_data_file(kind, data[kind]) if kind in data else () for kind in PART_MODELS
    }
    if cache_dir is not None and key is not None:
        cache.write_cache(cache_dir, key, parts)
    return parts


# The built-in catalog, once read: one per process, however it was read (model/rates.py asks
# for it without a cache folder after a command has read it through one).
_builtin: Catalog | None = None


def builtin_catalog(cache_dir: Path | None = None) -> Catalog:
    """The catalog shipped with dlrig, read once per process. With cache_dir, its validated
    parts come from a cache there when the data files are unchanged, and are cached there
    when not (catalog/cache.py); the command layer names the user's cache directory."""
    global _builtin
    if _builtin is None:
        _builtin = Catalog(load_builtin_parts(cache_dir))
    return _builtin


def load_catalog(
    user_file: str | Path | None = None,
    *,
    today: dt.date | None = None,
    cache_dir: Path | None = None,
) -> Catalog:
    """The built-in catalog, with a user's `--catalog FILE` applied when given; with `today`,
    a price the file dates after tomorrow (a typo for a past date) is refused; with
    `cache_dir`, the built-in parts are cached there (`builtin_catalog`)."""
    catalog = builtin_catalog(cache_dir)
    if user_file is None:
        return catalog
    source, doc = read_document(user_file)
    return catalog.with_overrides(doc, source, today=today)
