"""What the user allows the planner to buy: GPU counts, form, nodes, parts and vendors."""

from __future__ import annotations

from dataclasses import dataclass

from dlrig.catalog.loader import Catalog, normalize
from dlrig.catalog.schema import CPU, GPU, PartBase, Platform
from dlrig.enums import Vendor
from dlrig.errors import ValidationError
from dlrig.io.validation import closest
from dlrig.mains import Mains
from dlrig.plan.kinds import BuildForm

MAX_GPUS_PER_NODE = 8


@dataclass(frozen=True)
class Constraints:
    """The user's limits. `include`/`exclude` hold catalog part names or vendor names."""

    gpus: int | None = None
    max_gpus: int = MAX_GPUS_PER_NODE
    form: BuildForm | None = None
    nodes: int = 1
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    exclude_vendors: tuple[Vendor, ...] = ()
    min_gpu_memory_gb: float = 0.0
    # The circuit every build is judged on (PSU.6); None: the default circuit.
    mains: Mains | None = None

    def gpu_counts(self) -> tuple[int, ...]:
        """GPU counts per node the search may use."""
        if self.gpus is not None:
            return (self.gpus,) if self.gpus <= self.max_gpus else ()
        return tuple(range(1, self.max_gpus + 1))


def validate_constraints(constraints: Constraints, catalog: Catalog) -> None:
    """Raise ValidationError for limits that cannot mean anything (a name nothing matches)."""
    if constraints.gpus is not None and not 1 <= constraints.gpus <= MAX_GPUS_PER_NODE:
        raise ValidationError(f"--gpus must be 1-{MAX_GPUS_PER_NODE} per node")
    if not 1 <= constraints.max_gpus <= MAX_GPUS_PER_NODE:
        raise ValidationError(f"--max-gpus must be 1-{MAX_GPUS_PER_NODE} per node")
    if constraints.nodes < 1:
        raise ValidationError("--nodes must be at least 1")
    if constraints.min_gpu_memory_gb < 0:
        raise ValidationError("--min-gpu-memory must not be negative")
    for option, given in (("--include", constraints.include), ("--exclude", constraints.exclude)):
        for name in given:
            if not normalize(name):  # an empty key is in every name: it would match them all
                raise ValidationError(
                    f"{option} {name!r}: no part or vendor named (letters or digits expected)",
                    hint=f'e.g. {option} "RTX 4090" or {option} amd',
                )
    for name in (*constraints.include, *constraints.exclude):
        if _vendor(name) is None and not _matching_parts(catalog, name):
            names = [p.name for kind in catalog.parts for p in catalog.of(kind)]
            near = closest(name, [*names, *(v.value for v in Vendor)])
            raise ValidationError(
                f"'{name}' is neither a catalog part nor a vendor",
                hint=f"closest: {', '.join(near)}" if near else None,
            )

    _refuse_contradictions(constraints, catalog)


def _refuse_contradictions(constraints: Constraints, catalog: Catalog) -> None:
    """An --include whose every part the --exclude or --exclude-vendor options leave out is a
    contradiction to name, not a plan in which nothing fits."""
    only_excluded = Constraints(
        include=(), exclude=constraints.exclude, exclude_vendors=constraints.exclude_vendors
    )
    allowed = part_filter(only_excluded, catalog)
    for name in constraints.include:
        vendor = _vendor(name)
        if vendor is not None:
            parts = [p for kind in ("gpus", "cpus") for p in catalog.of(kind)]
            parts = [p for p in parts if part_vendor(p) == vendor]
        else:
            parts = _matching_parts(catalog, name)
        if parts and not any(_allowed(allowed, p, catalog) for p in parts):
            by = [
                f"--exclude {x!r}"
                for x in constraints.exclude
                if not all(_allowed(part_filter(Constraints(exclude=(x,)), catalog), p, catalog)
                           for p in parts)
            ] + [
                f"--exclude-vendor {v.value}"
                for v in constraints.exclude_vendors
                if any(part_vendor(p) == v for p in parts)
            ]  # fmt: skip
            raise ValidationError(
                f"--include {name!r} contradicts {' and '.join(by)}: every part it names is "
                "excluded",
                hint="drop one of them",
            )


def _allowed(allowed: PartFilter, part: PartBase, catalog: Catalog) -> bool:
    return any(allowed.allows(kind, part) for kind in catalog.parts if part in catalog.of(kind))


def _vendor(name: str) -> Vendor | None:
    key = normalize(name)
    return next((v for v in Vendor if v.value == key), None)


def _matching_parts(catalog: Catalog, name: str) -> list[PartBase]:
    """Parts whose name or alias equals name (normalised), or, failing that, contains it."""
    key = normalize(name)
    every = [p for kind in catalog.parts for p in catalog.of(kind)]
    exact = [p for p in every if key in {normalize(n) for n in (p.name, *p.aliases)}]
    if exact:
        return exact
    return [p for p in every if any(key in normalize(n) for n in (p.name, *p.aliases))]


def part_vendor(part: PartBase) -> Vendor | None:
    """The vendor of a GPU or CPU (other parts carry none)."""
    if isinstance(part, GPU | CPU):
        return part.vendor
    return None


@dataclass(frozen=True)
class PartFilter:
    """Constraints turned into a yes/no per part, resolved once against the catalog."""

    excluded_names: frozenset[str]
    excluded_vendors: frozenset[Vendor]
    required: dict[str, frozenset[str]]
    required_vendors: dict[str, frozenset[Vendor]]
    min_gpu_memory_gb: float

    def allows(self, kind: str, part: PartBase) -> bool:
        """Whether part may appear in a build as a part of this kind."""
        if part.name in self.excluded_names:
            return False
        vendor = part_vendor(part)
        if vendor is not None and vendor in self.excluded_vendors:
            return False
        if isinstance(part, GPU) and part.memory_gb < self.min_gpu_memory_gb:
            return False
        vendors = self.required_vendors.get(kind)
        if vendors is not None and vendor not in vendors:
            return False
        wanted = self.required.get(kind)
        return wanted is None or part.name in wanted

    def allows_platform(self, platform: Platform, catalog: Catalog) -> bool:
        """A platform, judged also by the GPU and CPU it bundles."""
        if not self.allows("platforms", platform):
            return False
        for kind, bundled in (("gpus", platform.included_gpu), ("cpus", platform.included_cpu)):
            if bundled is None:
                continue
            part = next((p for p in catalog.of(kind) if p.name == bundled), None)
            if part is None or not self.allows(kind, part):
                return False
        return True


def part_filter(constraints: Constraints, catalog: Catalog) -> PartFilter:
    """Resolve include/exclude names against the catalog.

    An included part forces its kind: `--include "RTX 4090"` plans only with that GPU; several
    included parts of one kind are alternatives. An included vendor forces the GPUs and CPUs
    of the kinds it makes (`--include amd`: AMD GPUs and AMD CPUs); an excluded vendor removes
    its GPUs and CPUs.
    """
    vendors = set(constraints.exclude_vendors)
    excluded: set[str] = set()
    for name in constraints.exclude:
        vendor = _vendor(name)
        if vendor is not None:
            vendors.add(vendor)
        else:
            excluded.update(p.name for p in _matching_parts(catalog, name))
    required: dict[str, set[str]] = {}
    required_vendors: dict[str, set[Vendor]] = {}
    for name in constraints.include:
        vendor = _vendor(name)
        if vendor is not None:
            for kind in ("gpus", "cpus"):
                if any(part_vendor(p) == vendor for p in catalog.of(kind)):
                    required_vendors.setdefault(kind, set()).add(vendor)
            continue
        for part in _matching_parts(catalog, name):
            kind = next(k for k in catalog.parts if part in catalog.of(k))
            required.setdefault(kind, set()).add(part.name)
    return PartFilter(
        excluded_names=frozenset(excluded),
        excluded_vendors=frozenset(vendors),
        required={k: frozenset(v) for k, v in required.items()},
        required_vendors={k: frozenset(v) for k, v in required_vendors.items()},
        min_gpu_memory_gb=constraints.min_gpu_memory_gb,
    )
