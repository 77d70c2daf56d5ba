"""The only place output is written: stdout for results (so `--json | jq` works), stderr for
notes about them (a page written)."""

from __future__ import annotations

import sys
from typing import Any


def print_text(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def print_renderable(renderable: Any) -> None:
    from rich.console import Console

    Console(soft_wrap=False).print(renderable)


def print_note(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
