"""Read a YAML, TOML or JSON document from a path or standard input, with one clear error.

Every loader of user input (build, workload, catalog override) goes through `read_document`, so
that a missing file, a directory, a huge file, bad bytes or bad syntax all give the same kind of
one-line error naming the file.
"""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path
from typing import Any

from dlrig.errors import InputFileError, ParseError, ValidationError
from dlrig.units import MB

MAX_DOCUMENT_BYTES = (
    5_000_000  # a build or workload file is a few KB; anything this big is a mistake
)


def read_text(path: str | Path, *, stdin_text: str | None = None) -> tuple[str, str]:
    """Return (display name, text) of a file or of standard input when path is '-'."""
    if str(path) == "-":
        raw = stdin_text if stdin_text is not None else sys.stdin.read()
        if len(raw.encode("utf-8", errors="replace")) > MAX_DOCUMENT_BYTES:
            raise InputFileError("<stdin>: larger than 5 MB; is this the right input?")
        return "<stdin>", raw
    p = Path(path)
    if not p.exists():
        raise InputFileError(
            f"{p}: no such file",
            hint="check the path; a build or workload may also be - for standard input",
        )
    if p.is_dir():
        raise InputFileError(f"{p}: is a directory, expected a YAML or TOML file")
    size = p.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise InputFileError(f"{p}: {size / MB:.0f} MB is larger than the 5 MB a document may be")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputFileError(f"{p}: cannot read ({exc.strerror})") from None
    try:
        return str(p), data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{p}: not UTF-8 text (bad byte at offset {exc.start})",
            hint="save the file as UTF-8",
        ) from None


def parse_text(name: str, text: str) -> dict[str, Any]:
    """Parse text as TOML (by .toml suffix), else JSON or YAML; the top level must be a mapping."""
    doc: Any
    if name.endswith(".toml"):
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ParseError(f"{name}: invalid TOML: {exc}") from None
    elif name.endswith(".json"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ParseError(f"{name}: invalid JSON: {exc.msg} at line {exc.lineno}") from None
    else:
        doc = _parse_yaml_or_toml(name, text)
    if doc is None:
        raise ValidationError(f"{name}: the document is empty, expected a mapping of keys")
    if not isinstance(doc, dict):
        raise ValidationError(
            f"{name}: the top level is a {type(doc).__name__}, expected a mapping of keys"
        )
    return doc


def _parse_yaml_or_toml(name: str, text: str) -> Any:
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as yaml_exc:
        # Standard input has no suffix: a TOML document is accepted there too.
        if name == "<stdin>":
            try:
                return tomllib.loads(text)
            except tomllib.TOMLDecodeError:
                pass
        mark = getattr(yaml_exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(yaml_exc, "problem", None) or "syntax error"
        raise ParseError(f"{name}: invalid YAML{where}: {problem}") from None
    except RecursionError:
        raise ParseError(f"{name}: invalid YAML: nested too deeply") from None
    if name == "<stdin>" and not isinstance(doc, dict):
        # A TOML document often reads as one YAML string: on stdin, TOML gets its turn.
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            pass
    return doc


def read_document(path: str | Path, *, stdin_text: str | None = None) -> tuple[str, dict[str, Any]]:
    """Read and parse a document; returns (display name, mapping)."""
    name, text = read_text(path, stdin_text=stdin_text)
    return name, parse_text(name, text)
