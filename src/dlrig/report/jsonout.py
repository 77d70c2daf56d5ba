"""JSON rendering shared by every command: dataclasses, enums, dates and pydantic models."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import math
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Plain JSON types for any value the core returns."""
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump(mode="json", exclude_none=True))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps(value: Any) -> str:
    """Indented JSON of value."""
    return json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)
