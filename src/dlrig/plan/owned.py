"""Parts the user already has (`plan --own FILE`): they cost nothing, so the plan builds around
them ("I have two 3090s and a 1600 W PSU").

The file is build-like (YAML or TOML): `gpus: [{model: GeForce RTX 3090, count: 2}]`,
`psu: Corsair AX1600i`, `cpu`, `motherboard`, `memory`, `storage`, `case`, `platform`, each a
catalog name, `{model: NAME, count: N}` or a list of those; or `parts: [...]` of the same,
each looked up in every kind. A build file works as it is (its name, nodes, network and prices
are not parts and are passed over). Each owned part becomes a catalog part that knows how many
the user has; `plan/parts.price_of` charges only for the ones beyond that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dlrig.catalog.loader import Catalog, normalize
from dlrig.catalog.schema import PART_MODELS, PartBase
from dlrig.enums import PartKind
from dlrig.errors import UnknownPartError, ValidationError
from dlrig.io.validation import closest

# The build file's keys for parts, singular and plural, and the catalog kind each names.
KEY_KINDS: dict[str, PartKind] = {
    "gpus": PartKind.GPUS,
    "gpu": PartKind.GPUS,
    "cpu": PartKind.CPUS,
    "cpus": PartKind.CPUS,
    "motherboard": PartKind.MOTHERBOARDS,
    "motherboards": PartKind.MOTHERBOARDS,
    "psu": PartKind.PSUS,
    "psus": PartKind.PSUS,
    "case": PartKind.CASES,
    "cases": PartKind.CASES,
    "storage": PartKind.STORAGE,
    "memory": PartKind.MEMORY,
    "platform": PartKind.PLATFORMS,
    "platforms": PartKind.PLATFORMS,
}
# Keys of a build file that are not parts.
NOT_PARTS = frozenset({"name", "nodes", "network", "prices", "notes", "source"})
# Per-build settings an entry may carry (a build file's own): they do not change what is owned.
SETTINGS = frozenset({"pcie", "cooler", "holds_dataset", "power_limit_w"})
MAX_OWNED = 64


@dataclass(frozen=True)
class Owned:
    """One owned catalog part and how many of it."""

    kind: PartKind
    part: PartBase
    count: int


def owned_parts(doc: Mapping[str, Any], source: str, catalog: Catalog) -> tuple[Owned, ...]:
    """The catalog parts an --own document names, with their counts (repeats add up)."""
    found: dict[tuple[PartKind, str], Owned] = {}
    for key, value in doc.items():
        if key in NOT_PARTS:
            continue
        kinds: tuple[PartKind, ...]
        if key == "parts":
            kinds = tuple(PART_MODELS)
        elif key in KEY_KINDS:
            kinds = (KEY_KINDS[key],)
        else:
            near = closest(key, [*KEY_KINDS, "parts"])
            raise ValidationError(
                f"{source}: {key}: not a kind of part",
                hint=f"expected one of gpus, cpu, motherboard, psu, case, storage, memory, "
                f"platform, parts; closest: {near[0]}",
            )
        entries = value if isinstance(value, list) else [value]
        for i, entry in enumerate(entries):
            where = f"{key}.{i}" if isinstance(value, list) else key
            item = _owned_entry(entry, kinds, f"{source}: {where}", catalog)
            slot = (item.kind, item.part.name)
            if slot in found:
                item = Owned(item.kind, item.part, found[slot].count + item.count)
            found[slot] = item
    for item in found.values():
        if item.count > MAX_OWNED:
            raise ValidationError(
                f"{source}: {item.part.name}: count {item.count} is more than {MAX_OWNED}"
            )
    return tuple(found.values())


def _owned_entry(entry: Any, kinds: tuple[PartKind, ...], where: str, catalog: Catalog) -> Owned:
    if isinstance(entry, str):
        name, count = entry, 1
    elif isinstance(entry, Mapping):
        if "spec" in entry:
            raise ValidationError(
                f"{where}: an inline spec cannot be owned",
                hint="name a catalog part (`dlrig catalog`), or add yours with --catalog FILE",
            )
        extra = set(entry) - {"model", "name", "count"} - SETTINGS
        if extra:
            raise ValidationError(
                f"{where}.{sorted(extra)[0]}: unknown field",
                hint="expected model (a catalog name) and count",
            )
        name = entry.get("model", entry.get("name"))
        count = entry.get("count", 1)
        if not isinstance(name, str) or not name.strip():
            raise ValidationError(f"{where}.model: expected a catalog part's name")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValidationError(f"{where}.count: expected a whole number >= 1, got {count!r}")
    else:
        raise ValidationError(
            f"{where}: expected a catalog name or {{model: NAME, count: N}}, got {entry!r}"
        )
    part, kind = _find(name, kinds, where, catalog)
    return Owned(kind, part, count)


def _find(
    name: str, kinds: tuple[PartKind, ...], where: str, catalog: Catalog
) -> tuple[PartBase, PartKind]:
    """The part called name among kinds; an unknown name names the closest catalog names."""
    for kind in kinds:
        try:
            return catalog.find(PART_MODELS[kind], name), kind
        except UnknownPartError:
            continue
    names = [p.name for kind in kinds for p in catalog.of(kind)]
    near = closest(name, names)
    raise UnknownPartError(
        f"{where}: unknown part '{name}'",
        hint=f"closest catalog names: {', '.join(near)}" if near else None,
    )


def with_owned(catalog: Catalog, owned: tuple[Owned, ...]) -> Catalog:
    """The catalog with each owned part replaced by a copy that knows how many the user has."""
    if not owned:
        return catalog
    counts = {(o.kind, normalize(o.part.name)): o.count for o in owned}
    parts: dict[str, tuple[PartBase, ...]] = {}
    for kind, items in catalog.parts.items():
        parts[kind] = tuple(
            _owning(p, counts[(PartKind(kind), normalize(p.name))])
            if (PartKind(kind), normalize(p.name)) in counts
            else p
            for p in items
        )
    return Catalog(parts)


def _owning(part: PartBase, count: int) -> PartBase:
    copy = part.model_copy()
    copy._owned_count = count
    return copy


def owned_in(parts: tuple[PartBase | None, ...]) -> tuple[str, ...]:
    """The names of the owned parts among parts (for the plan's 'you own' line)."""
    return tuple(dict.fromkeys(p.name for p in parts if p is not None and p.owned_count))
