"""Read a YAML, TOML or JSON document from a path or standard input, with one clear error.

Every loader of user input (build, workload, catalog override) goes through `read_document`, so
that a missing file, a directory, a huge file, bad bytes or bad syntax all give the same kind of
one-line error naming the file.
"""

from __future__ import annotations

import errno
import functools
import io
import json
import os
import select
import stat
import sys
import tomllib
import weakref
from pathlib import Path
from typing import Any, BinaryIO

from dlrig.errors import InputFileError, ParseError, ValidationError
from dlrig.io.characters import describe, first_hidden
from dlrig.io.paths import not_a_folder, shown
from dlrig.units import MB

MAX_DOCUMENT_BYTES = (
    5_000_000  # a build or workload file is a few KB; anything this big is a mistake
)
# Windows has no O_NONBLOCK (nor named pipes in the file system to block on).
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _read_bounded(stream: BinaryIO, name: str, max_bytes: int = MAX_DOCUMENT_BYTES) -> bytes:
    """At most max_bytes from a stream (stdin, a pipe, /dev/zero): one byte more is an error,
    so an endless input stops at the limit instead of filling memory."""
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(name, max_bytes)
    return data


def _too_large(name: str, max_bytes: int) -> InputFileError:
    return InputFileError(
        f"{name}: larger than the {max_bytes / MB:.0f} MB such a file may be; "
        "is this the right input?"
    )


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
            _claim_stdin()
            data = _read_bounded(sys.stdin.buffer, "<stdin>")
        return "<stdin>", _decode("<stdin>", data)
    name, data = read_input_bytes(path, MAX_DOCUMENT_BYTES)
    return name, _decode(name, data)


def read_input_bytes(
    path: str | Path, max_bytes: int, *, expected: str = "a YAML or TOML file"
) -> tuple[str, bytes]:
    """(display name, bytes) of a file the user named, at most max_bytes: a missing file, a
    folder, a name too long, a loop of links, a device without end or a named pipe that no
    process writes to are each an InputFileError naming the path (`expected` says what it
    should have been), never a hang or a traceback."""
    p = Path(path)
    name = shown(p)
    if not str(path).strip():
        raise InputFileError("an empty file name", hint=f"give the path of {expected}")
    try:
        # O_NONBLOCK: opening a named pipe that no process writes to returns at once instead
        # of waiting for a writer for ever; regular files and devices ignore it.
        fd = os.open(p, os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _open_error(p, exc) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputFileError(f"{name}: is a directory, expected {expected}")
        if stat.S_ISFIFO(mode):
            return name, _read_pipe(fd, name, max_bytes)
        if stat.S_ISREG(mode):
            size = os.fstat(fd).st_size
            if size > max_bytes:
                raise InputFileError(
                    f"{name}: {size / MB:.0f} MB is larger than the "
                    f"{max_bytes / MB:.0f} MB such a file may be"
                )
        # A device (/dev/zero, a terminal) has no size: read it up to the limit.
        if _NONBLOCK:
            os.set_blocking(fd, True)
        with os.fdopen(os.dup(fd), "rb") as fh:
            return name, _read_bounded(fh, name, max_bytes)
    except OSError as exc:
        raise InputFileError(f"{name}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


# Standard input, once read, is empty: a second '-' (`compare - -`) would read nothing.
_stdin_readers: weakref.WeakSet[Any] = weakref.WeakSet()


def _claim_stdin() -> None:
    stream = sys.stdin.buffer
    if stream in _stdin_readers:
        raise InputFileError(
            "<stdin>: standard input is given twice ('-'); it can be read once",
            hint="write one of the documents to a file",
        )
    _stdin_readers.add(stream)


def _open_error(p: Path, exc: OSError) -> InputFileError:
    """An error opening an input file, named for the user (not errno's words alone)."""
    name = shown(p)
    if exc.errno == errno.ENOENT:
        return InputFileError(
            f"{name}: no such file",
            hint="check the path; a build or workload may also be - for standard input",
        )
    if exc.errno == errno.ENOTDIR:
        return InputFileError(f"{name}: no such file ({not_a_folder(p)})")
    if exc.errno == errno.ENXIO:  # a socket
        return InputFileError(f"{name}: not a file that can be read (a socket?)")
    return InputFileError(f"{name}: cannot read ({exc.strerror})")


# A named pipe without a writer reads as empty at once; a writer started just after dlrig
# (`dlrig check f & cat b.yaml > f`) gets this long to connect.
PIPE_WRITER_GRACE_S = 1.0


def _read_pipe(fd: int, name: str, max_bytes: int) -> bytes:
    """A pipe's bytes, up to the size limit: waits for a writer's data as long as one holds
    the pipe open (process substitution, a slow generator), but not for a writer that never
    comes."""
    chunks: list[bytes] = []
    size = 0
    waited_for_writer = False
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:  # a writer holds the pipe and has not written yet
            select.select([fd], [], [])
            continue
        if not chunk:
            if size == 0 and not waited_for_writer:
                waited_for_writer = True
                select.select([fd], [], [], PIPE_WRITER_GRACE_S)
                continue
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(name, max_bytes)
    if size == 0:
        raise InputFileError(
            f"{name}: a pipe that nothing was written to",
            hint="start the program that writes it first, or give a file",
        )
    return b"".join(chunks)


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
            f"{name}: the top level is {_what(doc)}, expected a mapping of keys (key: value lines)"
        )
    _refuse_hidden_characters(name, doc)
    return doc


def _what(value: Any) -> str:
    """A parsed value's kind in words: 'a number (42)', 'a list', 'a string ('abc')'."""
    if isinstance(value, bool):
        return f"a true/false value ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value[:40]!r})"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


# Keys whose values are one-line names, shown in tables and page titles.
NAME_KEYS = frozenset({"name", "model"})


def _refuse_hidden_characters(name: str, doc: Any, where: tuple[str, ...] = ()) -> None:
    """A ValidationError naming the first key or string that holds a control or bidirectional
    formatting character (a name with a right-to-left override reads as another on a terminal
    or a page); line breaks and tabs are allowed in free text, not in names or keys."""
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for key, value in items:
        at = (*where, str(key))
        bad = first_hidden(str(key), in_line=True) if isinstance(key, str) else None
        if bad is None and isinstance(value, str):
            bad = first_hidden(value, in_line=str(key) in NAME_KEYS)
        if bad is not None:
            raise ValidationError(
                f"{name}: field '{'.'.join(at)}': holds {describe(bad)}, a character that "
                "hides, breaks or reorders text on a terminal and a page",
                hint="remove it (an editor that shows invisible characters finds it)",
                field=".".join(at),
                reason=f"holds {describe(bad)}",
            )
        _refuse_hidden_characters(name, value, at)


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
        if isinstance(yaml_exc, yaml.reader.ReaderError):
            # A byte YAML refuses anywhere (NUL, other control characters): say which, and where.
            line = text.count("\n", 0, yaml_exc.position) + 1
            column = yaml_exc.position - (text.rfind("\n", 0, yaml_exc.position) + 1) + 1
            raise ParseError(
                f"{name}: invalid YAML at line {line}, column {column}: "
                f"{describe(chr(yaml_exc.character))} is not allowed in a document"
            ) from None
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
