"""Read a YAML, TOML or JSON document from a path or standard input, with one clear error.

Every loader of user input (build, workload, catalog override) goes through `read_document`, so
that a missing file, a directory, a huge file, bad bytes or bad syntax all give the same kind of
one-line error naming the file.
"""

from __future__ import annotations

import functools
import io
import json
import sys
import tomllib
from pathlib import Path
from typing import Any, BinaryIO

from dlrig.errors import InputFileError, ParseError, ValidationError
from dlrig.units import MB

MAX_DOCUMENT_BYTES = (
    5_000_000  # a build or workload file is a few KB; anything this big is a mistake
)


def _read_bounded(stream: BinaryIO, name: str) -> bytes:
    """At most MAX_DOCUMENT_BYTES from a stream (stdin, a pipe, /dev/zero): one byte more is an
    error, so an endless input stops at the limit instead of filling memory."""
    data = stream.read(MAX_DOCUMENT_BYTES + 1)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise InputFileError(
            f"{name}: larger than the {MAX_DOCUMENT_BYTES / MB:.0f} MB a document may be; "
            "is this the right input?"
        )
    return data


def _decode(name: str, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{name}: not UTF-8 text (bad byte at offset {exc.start})",
            hint="save the file as UTF-8",
        ) from None
    return text


def read_text(path: str | Path, *, stdin_text: str | None = None) -> tuple[str, str]:
    """Return (display name, text) of a file or of standard input when path is '-'."""
    if str(path) == "-":
        if stdin_text is not None:
            data = _read_bounded(io.BytesIO(stdin_text.encode("utf-8", "replace")), "<stdin>")
        else:
            data = _read_bounded(sys.stdin.buffer, "<stdin>")
        return "<stdin>", _decode("<stdin>", data)
    p = Path(path)
    if not p.exists():
        raise InputFileError(
            f"{p}: no such file",
            hint="check the path; a build or workload may also be - for standard input",
        )
    if p.is_dir():
        raise InputFileError(f"{p}: is a directory, expected a YAML or TOML file")
    try:
        if p.is_file():
            size = p.stat().st_size
            if size > MAX_DOCUMENT_BYTES:
                raise InputFileError(
                    f"{p}: {size / MB:.0f} MB is larger than the "
                    f"{MAX_DOCUMENT_BYTES / MB:.0f} MB a document may be"
                )
        # A device or a pipe (/dev/zero, <(yes)) has no size: read it up to the limit.
        with p.open("rb") as fh:
            data = _read_bounded(fh, str(p))
    except OSError as exc:
        raise InputFileError(f"{p}: cannot read ({exc.strerror})") from None
    return str(p), _decode(str(p), data)


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
            doc = json.loads(text, object_pairs_hook=_unique_pairs)
        except json.JSONDecodeError as exc:
            raise ParseError(f"{name}: invalid JSON: {exc.msg} at line {exc.lineno}") from None
        except ValueError as exc:
            raise ParseError(f"{name}: invalid JSON: {exc}") from None
        except RecursionError:
            raise ParseError(f"{name}: invalid JSON: nested too deeply") from None
    else:
        doc = _parse_yaml_or_toml(name, text)
    if doc is None:
        raise ValidationError(f"{name}: the document is empty, expected a mapping of keys")
    if not isinstance(doc, dict):
        raise ValidationError(
            f"{name}: the top level is a {type(doc).__name__}, expected a mapping of keys"
        )
    return doc


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are all different (json keeps the last of a repeated key)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


@functools.lru_cache(maxsize=1)
def _yaml_loader() -> type[Any]:
    """PyYAML's safe loader, refusing a key given twice in one mapping (it keeps the last)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    repeated = key in seen
                except TypeError:  # an unhashable key: the base class reports it
                    break
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
            mapping: dict[Any, Any] = super().construct_mapping(node, deep)
            return mapping

    return UniqueKeyLoader


def _parse_yaml_or_toml(name: str, text: str) -> Any:
    import yaml

    try:
        doc = yaml.load(text, Loader=_yaml_loader())  # a SafeLoader: no arbitrary objects
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
    if name == "<stdin>" and doc is not None and not isinstance(doc, dict):
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
