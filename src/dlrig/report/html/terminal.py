"""What the terminal prints, as HTML: each page carries the very renderables the command
prints (its tables cell by cell, its lines word for word), so that a page never says less than
the terminal and `--json` do. Every string is escaped."""

from __future__ import annotations

import io
from collections.abc import Iterable

from markupsafe import Markup, escape
from rich.console import Console, Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text

# A line's look on the page, from the colour the terminal gives it.
STYLE_CLASS = {"yellow": "sev-warning", "red": "sev-error", "green": "why", "dim": "note"}


def _line_class(style: str | Style) -> str:
    words = str(style).split()
    return next((STYLE_CLASS[w] for w in words if w in STYLE_CLASS), "")


def _cell(value: RenderableType) -> str:
    if isinstance(value, Text):
        return value.plain
    if isinstance(value, str):
        return Text.from_markup(value).plain
    return _plain(value)


def _plain(renderable: RenderableType) -> str:
    """Anything else rich can print, as the text it prints (wide enough not to wrap)."""
    console = Console(width=400, file=io.StringIO(), color_system=None)
    console.print(renderable)
    file = console.file
    return file.getvalue() if isinstance(file, io.StringIO) else ""


def _table(table: Table) -> str:
    head = "".join(
        f'<th class="{"num" if c.justify == "right" else ""}">{escape(_cell(c.header))}</th>'
        for c in table.columns
    )
    columns = [[_cell(v) for v in c.cells] for c in table.columns]
    rows = []
    for i in range(table.row_count):
        cells = "".join(
            f'<td class="{"num" if c.justify == "right" else ""}">{escape(col[i])}</td>'
            for c, col in zip(table.columns, columns, strict=True)
        )
        rows.append(f"<tr>{cells}</tr>")
    title = f"<h3>{escape(_cell(table.title))}</h3>" if table.title else ""
    header = f"<tr>{head}</tr>" if table.show_header else ""
    return f'{title}<table class="terminal">{header}{"".join(rows)}</table>'


def _text(text: Text) -> str:
    base = _line_class(text.style)
    lines = []
    for line in text.split("\n"):
        cls = base or next((_line_class(s.style) for s in line.spans if s.start == 0), "")
        lines.append(f'<p class="line {cls}">{escape(line.plain)}</p>')
    return "".join(lines)


def _parts(renderables: Iterable[RenderableType]) -> Iterable[str]:
    for r in renderables:
        if isinstance(r, Group):
            yield from _parts(r.renderables)
        elif isinstance(r, Table):
            yield _table(r)
        elif isinstance(r, Text):
            yield _text(r)
        elif isinstance(r, str):
            yield _text(Text(r))
        else:
            yield f'<pre class="terminal">{escape(_plain(r))}</pre>'


def terminal_html(*renderables: RenderableType) -> Markup:
    """The renderables as HTML: tables as tables (title, header, every cell), text line by
    line (warnings, errors and notes in their colours), anything else as the text it prints."""
    return Markup("".join(_parts(renderables)))
