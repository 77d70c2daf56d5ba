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


def model_fields_at(model: type[pydantic.BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """Field names valid at a location inside model (for suggesting a key); [] if unknown."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            return []
        current = _inner_model(fields[part].annotation)
        if current is None:
            return []
    fields = getattr(current, "model_fields", None)
    return list(fields) if fields else []


def _inner_model(annotation: Any) -> type[pydantic.BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def to_validation_error(
    source: str, exc: pydantic.ValidationError, model: type[pydantic.BaseModel]
) -> ValidationError:
    """The first problem of exc as a ValidationError: 'file: field a.b: what was expected'."""
    err = exc.errors()[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    field = ".".join(str(p) for p in loc) or "(top level)"
    more = len(exc.errors()) - 1
    tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    if err["type"] == "extra_forbidden":
        valid = model_fields_at(model, loc[:-1])
        near = closest(str(loc[-1]), valid) if valid else []
        hint = f"did you mean {', '.join(repr(n) for n in near)}?" if near else None
        return ValidationError(f"{source}: unknown key '{field}'{tail}", hint=hint)
    got = err.get("input")
    shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
    return ValidationError(f"{source}: field '{field}': {err['msg']}{shown}{tail}")


def validate_document(model: type[M], doc: dict[str, Any], source: str) -> M:
    """Validate a parsed user document against model; errors name the file and the field."""
    try:
        return model.model_validate(doc)
    except pydantic.ValidationError as exc:
        raise to_validation_error(source, exc, model) from None
    except RecursionError:
        raise ValidationError(f"{source}: nested too deeply") from None
