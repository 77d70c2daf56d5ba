"""Characters that reorder or hide text on a terminal or a page: C0/C1 control characters and
Unicode's bidirectional formatting characters (a right-to-left override turns
`gpu-fast\u202e.yaml` into what reads as another name). dlrig refuses them in the documents it
reads and escapes them in every error line it prints."""

from __future__ import annotations

import unicodedata

# Unicode's explicit directional formatting characters (UAX #9, table 1: LRE, RLE, PDF, LRO,
# RLO, LRI, RLI, FSI, PDI) and the marks ALM, LRM, RLM.
BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
# Line breaks and tabs are text in free-text fields (notes, sources); a name is one line.
TEXT_WHITESPACE = frozenset("\t\n\r")


def is_hidden(ch: str, *, in_line: bool = False) -> bool:
    """A character that hides or reorders text; with in_line, also a line break or tab."""
    if ch in BIDI_CONTROLS:
        return True
    if ch in TEXT_WHITESPACE:
        return in_line
    return unicodedata.category(ch) == "Cc"


def first_hidden(text: str, *, in_line: bool = False) -> str | None:
    """The first such character of text, or None."""
    return next((ch for ch in text if is_hidden(ch, in_line=in_line)), None)


# Unicode gives the C0 controls no character name; these are their names in ISO 6429.
_CONTROL_NAMES = {0x00: "NUL", 0x07: "BELL", 0x08: "BACKSPACE", 0x09: "TAB", 0x0A: "LINE FEED",
                  0x0D: "CARRIAGE RETURN", 0x1B: "ESCAPE", 0x7F: "DELETE"}  # fmt: skip


def describe(ch: str) -> str:
    """'U+202E RIGHT-TO-LEFT OVERRIDE', 'U+0000 NUL'; 'U+0001' for one without a name."""
    name = unicodedata.name(ch, "") or _CONTROL_NAMES.get(ord(ch), "")
    return f"U+{ord(ch):04X} {name}".rstrip()


def escaped(text: str) -> str:
    """text with each such character, line breaks included, written as a Python escape: the
    line stays one line and says what was there."""
    if not any(is_hidden(ch, in_line=True) for ch in text):
        return text
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if is_hidden(ch, in_line=True) else ch
        for ch in text
    )
