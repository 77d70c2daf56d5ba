"""Turn a pydantic validation error into dlrig's one-line error naming file, field and fix."""

from __future__ import annotations

import difflib
import typing
from typing import Any, TypeVar

import pydantic

from dlrig.errors import ValidationError

M = TypeVar("M", bound=pydantic.BaseModel)


def closest(word: str, choices: typing.Iterable[str], n: int = 3) -> list[str]:
    """The n choices most like word (case-insensitive), best first."""
    options = list(dict.fromkeys(choices))
    lowered = {c.lower(): c for c in options}
    found = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.0)
    return [lowered[f] for f in found]


def _models_in(
    annotation: Any, tag: str | None = None
) -> list[tuple[type[pydantic.BaseModel], str]]:
    """Every pydantic model an annotation can hold (through Annotated, unions, lists, dicts),
    each with the tag pydantic names its union branch by (its `Tag`, else its class name)."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [(annotation, tag or annotation.__name__)]
    if typing.get_origin(annotation) is typing.Annotated:
        tags = [m.tag for m in annotation.__metadata__ if isinstance(m, pydantic.Tag)]
        return _models_in(typing.get_args(annotation)[0], tags[0] if tags else tag)
    return [found for arg in typing.get_args(annotation) for found in _models_in(arg, tag)]


def _walk(
    model: type[pydantic.BaseModel], loc: tuple[int | str, ...]
) -> tuple[tuple[str, ...], list[type[pydantic.BaseModel]]]:
    """The location as the user wrote it (field names and list indices, without the union
    branch tags pydantic puts in between: `str`, `InputBlock`, `by-model`), and the models
    that can stand at its end."""
    models: list[tuple[type[pydantic.BaseModel], str]] = [(model, model.__name__)]
    out: list[str] = []
    for part in loc:
        if isinstance(part, int):
            out.append(str(part))
            continue
        fields = [m.model_fields[part] for m, _ in models if part in m.model_fields]
        if fields:
            out.append(part)
            models = [found for f in fields for found in _models_in(f.annotation)]
        elif any(tag == part for _, tag in models):
            models = [(m, tag) for m, tag in models if tag == part]  # a union branch
        elif not models:
            out.append(part)  # a key inside a plain mapping (`sources`)
    return tuple(out), [m for m, _ in models]


def _strip_tags(model: type[pydantic.BaseModel], loc: tuple[int | str, ...]) -> tuple[str, ...]:
    return _walk(model, loc)[0]


def model_fields_at(model: type[pydantic.BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """Field names valid at a location inside model (for suggesting a key); [] if unknown."""
    models = _walk(model, loc)[1]
    return list(dict.fromkeys(name for m in models for name in m.model_fields))


def _most_telling(errors: list[Any], model: type[pydantic.BaseModel]) -> Any:
    """Of the errors of a union, the one that went deepest into what the user wrote: for
    `model: {params: -5}` the bound on `model.params`, not "model is not a string"."""
    # On a tie, a branch that only says "wrong type" tells less than one that looked inside.
    return max(
        errors,
        key=lambda e: (len(_strip_tags(model, tuple(e["loc"]))), not e["type"].endswith("_type")),
    )


def to_validation_error(
    source: str, exc: pydantic.ValidationError, model: type[pydantic.BaseModel]
) -> ValidationError:
    """The first problem of exc as a ValidationError: 'file: field a.b: what was expected'."""
    errors = exc.errors()
    err = _most_telling(errors, model)
    loc = _strip_tags(model, tuple(err["loc"]))
    if err["type"] == "extra_forbidden":  # the unknown key itself is no field: keep it
        loc = (*_strip_tags(model, tuple(err["loc"])[:-1]), str(err["loc"][-1]))
    field = ".".join(loc) or "(top level)"
    # A union's losing branches report "not a string" at a prefix of the real problem's place:
    # they are one problem, not several.
    locs = {_strip_tags(model, tuple(e["loc"])) for e in errors}
    more = sum(not any(o[: len(x)] == x and o != x for o in locs) for x in locs) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    if err["type"] == "extra_forbidden":
        valid = model_fields_at(model, tuple(err["loc"])[:-1])
        near = closest(str(loc[-1]), valid) if valid else []
        hint = f"did you mean {', '.join(repr(n) for n in near)}?" if near else None
        return ValidationError(
            f"{source}: unknown key '{field}'{tail}", hint=hint, field=field, reason="unknown key"
        )
    got = err.get("input")
    shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
    reason = f"{err['msg']}{shown}"
    return ValidationError(f"{source}: field '{field}': {reason}{tail}", field=field, reason=reason)


def validate_document(model: type[M], doc: dict[str, Any], source: str) -> M:
    """Validate a parsed user document against model; errors name the file and the field."""
    try:
        validated = model.model_validate(doc)
    except pydantic.ValidationError as exc:
        raise to_validation_error(source, exc, model) from None
    except RecursionError:
        raise ValidationError(f"{source}: nested too deeply") from None
    refuse_bools_read_as_numbers(source, doc, validated)
    return validated


def refuse_bools_read_as_numbers(source: str, doc: Any, validated: Any) -> None:
    """A ValidationError naming the first true/false of doc that validation took for a number
    (pydantic reads `count: true` as 1 and `tdp_w: false` as 0.0)."""
    where = _bool_read_as_number(doc, validated, ())
    if where is not None:
        field = ".".join(where)
        reason = f"expected a number, got {str(_at(doc, where)).lower()}"
        raise ValidationError(f"{source}: field '{field}': {reason}", field=field, reason=reason)


def _bool_read_as_number(doc: Any, value: Any, where: tuple[str, ...]) -> tuple[str, ...] | None:
    if isinstance(doc, bool):
        return where if isinstance(value, int | float) and not isinstance(value, bool) else None
    pairs: list[tuple[str, Any, Any]] = []
    if isinstance(doc, dict) and isinstance(value, pydantic.BaseModel):
        fields = type(value).model_fields
        pairs = [(str(k), v, getattr(value, k)) for k, v in doc.items() if k in fields]
    elif isinstance(doc, dict) and isinstance(value, dict):
        pairs = [(str(k), v, value[k]) for k, v in doc.items() if k in value]
    elif isinstance(doc, list) and isinstance(value, list | tuple):
        pairs = [(str(i), d, v) for i, (d, v) in enumerate(zip(doc, value, strict=False))]
    for key, sub_doc, sub_value in pairs:
        found = _bool_read_as_number(sub_doc, sub_value, (*where, key))
        if found is not None:
            return found
    return None


def _at(doc: Any, where: tuple[str, ...]) -> Any:
    for key in where:
        doc = doc[int(key)] if isinstance(doc, list) else doc[key]
    return doc
