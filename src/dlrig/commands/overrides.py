"""`--set KEY=VALUE`: what-if edits of the raw build or workload document (design.md).

KEY is a dotted path (`batch_size`, `loader.pin_memory`, `gpus.0.pcie.lanes`,
`storage.0.read_mb_s`), optionally prefixed `build.` or `workload.`; without a prefix it goes to
the workload when the workload schema has its first key, else to the build. VALUE is YAML. A
path is valid when the schema knows it, whether or not the document set it; anything else is an
error naming the nearest valid keys. A spec field set on a catalog part (`gpus.0.memory_gb` on
`model: RTX 3090`) turns that entry into an inline spec copied from the catalog.
"""

from __future__ import annotations

import copy
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

import pydantic
import yaml

from dlrig.catalog.loader import Catalog
from dlrig.errors import ValidationError
from dlrig.io.characters import describe, first_hidden
from dlrig.io.validation import closest
from dlrig.machine.schema import BuildFile

Target = Literal["build", "workload"]


@dataclass(frozen=True)
class Assignment:
    """One parsed `--set` (or one value of `--compare`): which document, the path inside it,
    the value, and how the user wrote it (`option` and `text` name it in errors)."""

    target: Target
    path: tuple[str, ...]
    value: Any
    text: str
    option: str = "--set"


# `--compare KEY=V1,V2,...` estimates once per value: a list this long is a typo or a loop.
MAX_COMPARE_VALUES = 32


def parse_value(text: str, option: str = "--set") -> Any:
    """A --set value read as YAML (`false`, `64`, `[3, 225, 225]`, `synthetic`)."""
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        raise ValidationError(f"{option}: cannot read value {text!r} as YAML") from None
    if isinstance(value, str):
        try:  # YAML 1.1 reads 1e9 as a string; a number is meant
            return float(value) if value.strip().lower() not in ("nan", "inf", "-inf") else value
        except ValueError:
            return value
    return value


def _workload_schema() -> type[pydantic.BaseModel]:
    from dlrig.workloads.schema import WorkloadFile

    return WorkloadFile


def _bare(annotation: Any) -> Any:
    """The type inside `Annotated[...]` (a union's tags and discriminator ride on it)."""
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _models_in(annotation: Any) -> list[type[pydantic.BaseModel]]:
    """pydantic models an annotation can hold (through Optional, unions and lists)."""
    annotation = _bare(annotation)
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    found: list[type[pydantic.BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(_models_in(arg))
    return found


def _direct_models(annotation: Any) -> list[type[pydantic.BaseModel]]:
    """pydantic models an annotation holds directly (through Optional and unions, not lists)."""
    annotation = _bare(annotation)
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _direct_models(arg)]
    return []


def _is_list(annotation: Any) -> bool:
    annotation = _bare(annotation)
    origin = typing.get_origin(annotation)
    if origin is list or origin is tuple:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_list(a) for a in typing.get_args(annotation))
    return False


def _fields(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """Fields of a schema model; an entry that takes an inline `spec` also takes the spec's
    fields directly (design.md: `{kind: hdd, read_mb_s: 180}`)."""
    fields = {name: f.annotation for name, f in model.model_fields.items()}
    spec = model.model_fields.get("spec")
    if spec is not None:
        for inner in _models_in(spec.annotation):
            for name, f in inner.model_fields.items():
                fields.setdefault(name, f.annotation)
    return fields


def validate_path(
    schema: type[pydantic.BaseModel], path: tuple[str, ...], where: str, option: str = "--set"
) -> list[Any]:
    """The annotations the schema has at `path` (list indices are digits); a ValidationError
    naming `option` and `where` unless the schema knows the path."""
    annotations: list[Any] = [schema]
    for depth, part in enumerate(path):
        if part.isdigit():
            if not any(_is_list(a) for a in annotations):
                raise ValidationError(f"{option} {where}: '{'.'.join(path[:depth])}' is not a list")
            annotations = [a for ann in annotations for a in _list_items(ann)]
            continue
        models = [m for ann in annotations for m in _direct_models(ann)]
        known_here = {name for m in models for name in _fields(m)}
        if part not in known_here and any(_is_list(a) for a in annotations):
            where_list = ".".join(path[:depth])
            raise ValidationError(
                f"{option} {where}: '{where_list}' is a list: give an index",
                hint=f"e.g. {'.'.join([*path[:depth], '0', *path[depth + 1 :]])}",
            )
        if not models:
            raise ValidationError(
                f"{option} {where}: '{'.'.join(path[:depth])}' has no keys under it"
            )
        known: dict[str, Any] = {}
        for m in models:
            for name, ann in _fields(m).items():
                known.setdefault(name, ann)
        if part not in known:
            prefix = ".".join(path[:depth])
            near = [f"{prefix}.{n}" if prefix else n for n in closest(part, known)]
            raise ValidationError(
                f"{option} {where}: unknown key '{'.'.join(path[: depth + 1])}'",
                hint=f"nearest valid keys: {', '.join(near)}" if near else None,
            )
        annotations = [known[part]]
    return annotations


def _list_items(annotation: Any) -> list[Any]:
    annotation = _bare(annotation)
    origin = typing.get_origin(annotation)
    if origin is list or origin is tuple:
        return list(typing.get_args(annotation)[:1])
    out: list[Any] = []
    for arg in typing.get_args(annotation):
        if _is_list(arg):
            out.extend(_list_items(arg))
    return out


@dataclass(frozen=True)
class Key:
    """A dotted KEY, routed: the document, the path in it, and the keys of the block it
    names when it names one that takes no plain value (`finetune`), else None."""

    target: Target
    path: tuple[str, ...]
    block_keys: tuple[str, ...] | None


def parse_key(key: str, option: str = "--set") -> Key:
    """Where a dotted KEY goes; an error naming `option` and the nearest valid keys when the
    schemas do not know it."""
    key = key.strip()
    if not key:
        raise ValidationError(
            f"{option}: no key before '='",
            hint="e.g. --set batch_size=64" if option == "--set" else "e.g. batch_size=32,64",
        )
    parts = tuple(p for p in key.split("."))
    if any(not p for p in parts):
        raise ValidationError(f"{option} {key}: empty part in key '{key}'")
    target: Target
    if parts[0] in ("build", "workload") and len(parts) > 1:
        target = "build" if parts[0] == "build" else "workload"
        parts = parts[1:]
    elif parts[0] in _workload_schema().model_fields:
        target = "workload"
    elif parts[0] in BuildFile.model_fields:
        target = "build"
    else:
        both = [*_workload_schema().model_fields, *BuildFile.model_fields]
        near = closest(parts[0], both)
        raise ValidationError(
            f"{option} {key}: unknown key '{parts[0]}' in both the workload and the build",
            hint=f"nearest valid keys: {', '.join(near)}" if near else None,
        )
    schema = BuildFile if target == "build" else _workload_schema()
    annotations = validate_path(schema, parts, key, option)
    blocks = [m for a in annotations for m in _direct_models(a)]
    only_blocks = bool(blocks) and all(_only_models(a) for a in annotations)
    keys = tuple(dict.fromkeys(n for m in blocks for n in _fields(m))) if only_blocks else None
    return Key(target, parts, keys)


def _only_models(annotation: Any) -> bool:
    """Whether an annotation takes a block (a pydantic model, or None) and no plain value."""
    annotation = _bare(annotation)
    if annotation is type(None):
        return True
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return all(_only_models(a) for a in typing.get_args(annotation))
    return False


def parse_assignment(text: str) -> Assignment:
    """Parse one `KEY=VALUE` and route it to the workload or the build."""
    key, sep, raw = text.partition("=")
    if not sep:
        raise ValidationError(
            f"--set {text!r}: expected KEY=VALUE", hint="e.g. --set batch_size=64"
        )
    routed = parse_key(key)
    hidden = first_hidden(raw, in_line=True)
    if hidden is not None:
        raise ValidationError(
            f"--set {text}: the value holds {describe(hidden)}, a character that hides, breaks "
            "or reorders text on a terminal and a page"
        )
    if not raw.strip():
        raise ValidationError(
            f"--set {text}: no value after '='", hint=f"e.g. --set {key.strip()}=VALUE"
        )
    return assignment(routed, parse_value(raw), text)


def assignment(key: Key, value: Any, text: str, option: str = "--set") -> Assignment:
    """An Assignment of a parsed value; a plain value where only a block goes (`--set
    finetune=qlora`) is an error naming the block's keys."""
    if key.block_keys is not None and value is not None and not isinstance(value, dict):
        name = ".".join(key.path)
        raise ValidationError(
            f"{option} {text}: '{name}' is a block of keys ({', '.join(key.block_keys)}), "
            "not a value",
            hint=f"e.g. {option} {name}.{key.block_keys[0]}=...",
        )
    return Assignment(key.target, key.path, value, text, option)


def _set(doc: dict[str, Any], a: Assignment, catalog: Catalog | None) -> None:
    cur: Any = doc
    for depth, part in enumerate(a.path[:-1]):
        nxt_is_index = a.path[depth + 1].isdigit()
        if isinstance(cur, list):
            index = int(part)
            if index >= len(cur):
                where = ".".join(a.path[:depth])
                raise ValidationError(
                    f"{a.option} {a.text}: the {a.target} has no entry {index} in '{where}' "
                    f"(it has {len(cur)})"
                )
            if isinstance(cur[index], str):
                cur[index] = {"model": cur[index]}
            cur = cur[index]
            continue
        child = cur.get(part)
        if child is None:
            child = [] if nxt_is_index else {}
            cur[part] = child
        elif isinstance(child, str) and not nxt_is_index and a.target == "build":
            child = {"model": child}  # a catalog name where the path goes deeper
            cur[part] = child
        elif isinstance(child, str) and not nxt_is_index and a.path[:1] == ("parallel",):
            child = {"strategy": child}  # `parallel: fsdp` with `--set parallel.tensor=2`
            cur[part] = child
        if not isinstance(child, list if nxt_is_index else dict):
            where = ".".join(a.path[: depth + 1])
            raise ValidationError(
                f"{a.option} {a.text}: '{where}' is {child!r} in the {a.target}, "
                f"not {'a list' if nxt_is_index else 'a block of keys'}",
                hint=f"set '{where}' itself",
            )
        cur = child
    last = a.path[-1]
    if isinstance(cur, list):
        index = int(last)
        if index >= len(cur):
            raise ValidationError(f"{a.option} {a.text}: no entry {index} to replace")
        cur[index] = a.value
        return
    if a.target == "build" and last not in _entry_settings(a.path[0]) and len(a.path) > 1:
        if "model" in cur:
            _inline_catalog_part(cur, a.path, catalog)
        if isinstance(cur.get("spec"), dict):
            cur["spec"][last] = a.value
            return
    cur[last] = a.value


@functools.cache
def _entry_settings(kind: str) -> frozenset[str]:
    """The keys of a build entry that are settings, not spec fields (`count`, `pcie`,
    `power_limit_w`): setting one keeps the entry's catalog `model`. They are the fields of the
    entry's by-model form, read from the schema."""
    field = BuildFile.model_fields.get(kind)
    models = _models_in(field.annotation) if field is not None else []
    by_model = [m for m in models if "model" in m.model_fields and "spec" not in m.model_fields]
    return frozenset({"spec", *(name for m in by_model for name in m.model_fields)})


_KINDS = {"gpus": "gpus", "cpu": "cpus", "motherboard": "motherboards", "psu": "psus",
          "case": "cases", "storage": "storage", "platform": "platforms"}  # fmt: skip


def _inline_catalog_part(
    entry: dict[str, Any], path: tuple[str, ...], catalog: Catalog | None
) -> None:
    """Replace `model: NAME` by an inline spec holding the catalog part's fields."""
    from dlrig.catalog import load_catalog
    from dlrig.catalog.schema import PART_MODELS
    from dlrig.enums import PartKind
    from dlrig.machine.schema import SPEC_MODELS

    kind = path[0]
    if kind not in _KINDS or kind not in SPEC_MODELS:
        return
    cat = catalog if catalog is not None else load_catalog()
    part = cat.find(PART_MODELS[PartKind(_KINDS[kind])], str(entry["model"]))
    spec_fields = set(SPEC_MODELS[kind].model_fields)
    fields = {
        k: v
        for k, v in part.model_dump(mode="json", exclude_none=True).items()
        if k in spec_fields and k not in ("aliases", "sources", "notes", "price_date")
    }
    entry.pop("model")
    entry["spec"] = {**fields, "name": f"{part.name} (edited)"}


def apply_overrides(
    build_doc: dict[str, Any],
    workload_doc: dict[str, Any],
    assignments: list[Assignment],
    catalog: Catalog | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of the two documents with every assignment applied, in order; `catalog` (the
    built-in one by default) supplies the specs of catalog parts edited field by field."""
    build = copy.deepcopy(build_doc)
    work = copy.deepcopy(workload_doc)
    edits_model = any(a.target == "workload" and a.path[0] == "model" for a in assignments)
    if edits_model and isinstance(work.get("model"), str):
        from dlrig.workloads.loader import expand_document

        work = copy.deepcopy(expand_document(work, "--set"))  # the zoo preset, made inline
    for a in assignments:
        _set(build if a.target == "build" else work, a, catalog)
    return build, work


def blame(
    exc: ValidationError,
    assignments: list[Assignment],
    target: Target,
    before: dict[str, Any] | None = None,
) -> ValidationError:
    """exc re-addressed to the `--set` that wrote its field, when one did: the file is not to
    blame for `--set storage.0.read_mb_s=-5`. With `before` (the document as the file, or the
    zoo preset, gave it), a field missing from a block that a `--set` started (`--set
    serve.users=8` on a workload with no `serve:`) is blamed on that `--set` too."""
    if exc.field is None:
        return exc
    # An inline spec puts a field under `spec` (`gpus.0.spec.memory_gb` for `gpus.0.memory_gb`).
    field = tuple(p for p in exc.field.split(".") if p != "spec")
    for a in reversed(assignments):  # the last --set of a field is the one that stands
        if a.target != target:
            continue
        path = tuple(p for p in a.path if p != "spec")
        if field[: len(path)] == path or path[: len(field)] == field:
            return ValidationError(
                f"{a.option} {a.text}: field '{exc.field}': {exc.reason}",
                hint=exc.hint,
                field=exc.field,
                reason=exc.reason,
            )
    for a in reversed(assignments) if before is not None else ():
        started = _started_block(before or {}, a.path) if a.target == target else None
        if started is not None and field[: len(started)] == started:
            block = ".".join(started)
            return ValidationError(
                f"{a.option} {a.text}: the {target} has no '{block}' block, and one started "
                f"here needs '{exc.field}' too ({exc.reason})",
                hint=BLOCK_HINTS.get(block, f"give the whole '{block}' block in a file"),
                field=exc.field,
                reason=exc.reason,
            )
    return exc


# Where to find a whole block that a `--set` of one key cannot start.
BLOCK_HINTS = {
    "serve": "serving presets have one: dlrig workloads --kind serving",
    "measured": "dlrig probe --save writes one; probe:latest is its build",
}


def _started_block(doc: Any, path: tuple[str, ...]) -> tuple[str, ...] | None:
    """The first block on path that doc lacks (so a `--set` of path started it), or None."""
    cur = doc
    for depth, part in enumerate(path[:-1]):
        if isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            return path[: depth + 1]
    return None
