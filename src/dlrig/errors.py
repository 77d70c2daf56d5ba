"""The project's error hierarchy.

Core code raises these; only the CLI turns them into one line on stderr, a hint and exit code 2.
"Does not fit" and "nothing under this budget" are results, not errors.
"""

from __future__ import annotations


class DlrigError(Exception):
    """Base of every error dlrig raises on purpose.

    `hint` is a short suggestion the CLI prints after the message (what to type instead).
    """

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class InputFileError(DlrigError):
    """A file the user gave cannot be read: missing, a directory, too large, not UTF-8."""


class ParseError(DlrigError):
    """A file is not valid YAML/TOML/JSON."""


class ValidationError(DlrigError):
    """A document parsed but a field is wrong: unknown key, bad type, out of range.

    `field` (dotted, as the user wrote it) and `reason` say which field and why, when known, so
    that a caller can re-address the error (to the `--set` that wrote the field)."""

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        field: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint)
        self.field = field
        self.reason = reason


class UnknownPartError(ValidationError):
    """A part name matched nothing in the catalog; the hint names the closest ones."""


class UnknownWorkloadError(ValidationError):
    """A workload name matched nothing in the zoo; the hint names the closest ones."""


class CatalogError(DlrigError):
    """A catalog data file (built in or the user's --catalog) is malformed."""


class HardwareError(DlrigError):
    """A hardware reading failed in a way the caller asked to be fatal."""


class HistoryError(DlrigError):
    """The history database cannot be opened, is corrupt, or is locked."""


class SourceUnreachableError(DlrigError):
    """A source the user named (a BMC's address) cannot be read: no answer in time, refused
    credentials, a certificate that does not verify, or an answer that is not what it should be.
    The message names the source and never carries a credential."""
