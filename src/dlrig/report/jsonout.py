"""JSON rendering shared by every command: dataclasses, enums, dates and pydantic models."""

from __future__ import annotations

import json
from typing import Any

from dlrig.jsonable import to_jsonable

__all__ = ["dumps", "to_jsonable"]


def dumps(value: Any) -> str:
    """Indented JSON of value."""
    return json.dumps(to_jsonable(value), indent=2, ensure_ascii=False)
