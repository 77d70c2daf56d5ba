"""Charts as inline SVG, drawn on the server: pages open offline and need no script. Each chart
takes values already computed by the core and only lays them out (scales, ticks, labels);
every label is escaped, and each mark carries a `<title>` that the browser shows on hover."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH = 720
LEFT = 190  # room for bar labels
RIGHT = 24
BAR_H = 22
GAP = 8
TOP = 34
AXIS_H = 40
# A label's box: about 7 px a character of the 11-12 px label fonts, 12 px high.
LABEL_CHAR_W, LABEL_H = 7.0, 12.0


@dataclass(frozen=True)
class Bar:
    """One bar: its label, value, the part of it that is highlighted (e.g. the exposed part of a
    stage; None: all), hover text and a style class."""

    label: str
    value: float
    highlighted: float | None = None
    hover: str = ""
    style: str = "primary"
    low: float | None = None  # the model's interval, drawn as a whisker across the bar's end
    high: float | None = None


@dataclass(frozen=True)
class Segment:
    """One part of a stacked bar."""

    label: str
    value: float
    style: str


@dataclass(frozen=True)
class Point:
    """One point of a scatter plot; `chosen` points are drawn larger and labelled."""

    x: float
    y: float
    label: str
    hover: str
    chosen: bool = False


@dataclass(frozen=True)
class Series:
    """One line of a timeline."""

    name: str
    xs: Sequence[float]
    ys: Sequence[float | None]
    style: str


LABEL_CHARS = 27


def clip(label: str, chars: int = LABEL_CHARS) -> str:
    """A label short enough for the space left of the bars (the full text is in the hover)."""
    return label if len(label) <= chars else label[: chars - 1] + "…"


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `high` (1, 2, 2.5 or 5 times a power of ten)."""
    # An all-zero series (callers floor `high` at 1e-12) gets a plain 0-1 axis, not 0-1e-12.
    if not math.isfinite(high) or high <= 1e-9:
        return [0.0, 1.0]
    raw = high / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = math.ceil(high / step - 1e-9)
    return [i * step for i in range(n + 1)]


def fmt(value: float) -> str:
    """A tick or value label: 3 significant figures, thousands separated."""
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def bar_value_label(value: float, high: float) -> str:
    """A bar's value at the axis's resolution (3 significant figures of its largest bar): a
    stage of 0.00111 ms beside one of 396 ms reads "<1", its hover keeping the figure."""
    if value == 0 or high <= 0:
        return fmt(value)
    resolution = 10.0 ** (math.floor(math.log10(high)) - 2)
    return fmt(value) if abs(value) >= resolution else f"<{fmt(resolution)}"


def _svg(width: float, height: float, title: str, body: str) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
        f'height="{height:.0f}" role="img" aria-label="{escape(title)}">'
        f'<text class="chart-title" x="0" y="18">{escape(title)}</text>{body}</svg>'
    )


def _x_axis(ticks: Sequence[float], x0: float, x1: float, y: float, top: float, label: str) -> str:
    span = ticks[-1] or 1.0
    parts = []
    for t in ticks:
        x = x0 + (x1 - x0) * t / span
        parts.append(
            f'<line class="grid" x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{x:.1f}" y="{y + 14:.1f}" text-anchor="middle">{fmt(t)}</text>'
        )
    parts.append(
        f'<text class="axis-label" x="{(x0 + x1) / 2:.1f}" y="{y + 32:.1f}" '
        f'text-anchor="middle">{escape(label)}</text>'
    )
    return "".join(parts)


def bar_chart(
    title: str,
    bars: Sequence[Bar],
    axis_label: str,
    *,
    line_at: float | None = None,
    line_label: str = "",
    legend: Sequence[tuple[str, str]] = (),
) -> Markup:
    """Horizontal bars against one value axis; `line_at` draws a labelled vertical rule (a
    capacity, a fault threshold); `legend` is (style, text) pairs."""
    high = max([max(b.value, b.high or 0.0) for b in bars] + [line_at or 0.0, 1e-12])
    ticks = nice_ticks(high)
    x0, x1 = LEFT, WIDTH - RIGHT
    key, more = _legend(legend, TOP - 6) if legend else ("", 0.0)
    top = TOP + (20 + more if legend else 0)
    plot_h = len(bars) * (BAR_H + GAP)
    axis_y = top + plot_h
    scale = (x1 - x0) / (ticks[-1] or 1.0)
    parts = [key]
    parts.append(_x_axis(ticks, x0, x1, axis_y, top, axis_label))
    right = float(WIDTH)  # a value label past the last tick widens the chart to show it
    for i, b in enumerate(bars):
        y = top + i * (BAR_H + GAP)
        hover = escape(b.hover or f"{b.label}: {fmt(b.value)}")
        parts.append(
            f'<text class="bar-label" x="{x0 - 8}" y="{y + BAR_H * 0.7:.1f}" '
            f'text-anchor="end">{escape(clip(b.label))}</text>'
        )
        whole = max(b.value, 0.0) * scale
        style = b.style if b.highlighted is None else "faint"
        parts.append(
            f'<rect class="mark {style}" x="{x0}" y="{y:.1f}" width="{whole:.1f}" '
            f'height="{BAR_H}"><title>{hover}</title></rect>'
        )
        if b.highlighted is not None and b.highlighted > 0:
            parts.append(
                f'<rect class="mark {b.style}" x="{x0}" y="{y:.1f}" '
                f'width="{b.highlighted * scale:.1f}" height="{BAR_H}">'
                f"<title>{hover}</title></rect>"
            )
        label_x = x0 + whole + 4
        if b.low is not None and b.high is not None:
            lo, hi, mid = x0 + b.low * scale, x0 + b.high * scale, y + BAR_H / 2
            parts.append(
                f'<path class="interval" d="M{lo:.1f},{mid:.1f}H{hi:.1f}M{lo:.1f},{y + 4:.1f}'
                f'V{y + BAR_H - 4:.1f}M{hi:.1f},{y + 4:.1f}V{y + BAR_H - 4:.1f}">'
                f"<title>80% interval {fmt(b.low)} to {fmt(b.high)}</title></path>"
            )
            label_x = max(label_x, hi + 4)
        value = bar_value_label(b.value, high)
        right = max(right, label_x + LABEL_CHAR_W * len(value))
        parts.append(
            f'<text class="value" x="{label_x:.1f}" y="{y + BAR_H * 0.7:.1f}">'
            f"{escape(value)}</text>"
        )
    if line_at is not None:
        x = x0 + line_at * scale
        parts.append(_limit(x, top - 4, axis_y, line_label, x + 4, top + 10, "start"))
    return _svg(right, axis_y + AXIS_H, title, "".join(parts))


def stacked_bars(
    title: str,
    rows: Sequence[tuple[str, Sequence[Segment]]],
    axis_label: str,
    *,
    capacity: float | None = None,
    capacity_label: str = "",
) -> Markup:
    """Bars made of segments (memory by use, a step by stage), one row each, against one axis
    and an optional capacity line; the legend names the segments of the first row."""
    totals = [sum(max(s.value, 0.0) for s in segs) for _, segs in rows]
    ticks = nice_ticks(max([*totals, capacity or 0.0, 1e-12]))
    labelled = any(label for label, _ in rows)
    x0, x1 = (LEFT if labelled else 20), WIDTH - RIGHT
    styles = list(dict.fromkeys((s.style, s.label) for _, segs in rows for s in segs))
    key, more = _legend(styles, TOP - 6)
    top = TOP + 22 + more
    axis_y = top + len(rows) * (BAR_H + GAP)
    scale = (x1 - x0) / (ticks[-1] or 1.0)
    parts = [key, _x_axis(ticks, x0, x1, axis_y, top, axis_label)]
    for i, (label, segs) in enumerate(rows):
        y = top + i * (BAR_H + GAP)
        if label:
            parts.append(
                f'<text class="bar-label" x="{x0 - 8}" y="{y + BAR_H * 0.7:.1f}" '
                f'text-anchor="end">{escape(clip(label))}</text>'
            )
        x = float(x0)
        for s in segs:
            w = max(s.value, 0.0) * scale
            parts.append(
                f'<rect class="mark {s.style}" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
                f'height="{BAR_H}"><title>{escape(s.label)}: {fmt(s.value)}</title></rect>'
            )
            x += w
        parts.append(
            f'<text class="value" x="{x + 4:.1f}" y="{y + BAR_H * 0.7:.1f}">{fmt(totals[i])}</text>'
        )
    if capacity is not None:
        cx = x0 + capacity * scale
        # The label sits left of the line unless the line is too near the left edge for it.
        left = cx - 4 - LABEL_CHAR_W * len(capacity_label) >= 0
        lx, anchor = (cx - 4, "end") if left else (cx + 4, "start")
        parts.append(_limit(cx, top - 4, axis_y, capacity_label, lx, axis_y - 4, anchor))
    return _svg(WIDTH, axis_y + AXIS_H, title, "".join(parts))


def _label_spot(
    cx: float, cy: float, chars: int, placed: list[tuple[float, float, float, float]]
) -> tuple[float, float]:
    """Where a point's label goes (its text's left and baseline): above right of the point,
    else the first of the other corners and further rows whose box overlaps no label placed
    before (builds close in price and speed would print #2 over #3); the box is recorded."""
    w = chars * LABEL_CHAR_W
    spots = [(cx + 9, cy - 7), (cx + 9, cy + 7 + LABEL_H), (cx - 9 - w, cy - 7)]
    spots += [(cx - 9 - w, cy + 7 + LABEL_H)]
    spots += [(cx + 9, cy - 7 - k * LABEL_H) for k in range(1, 4)]
    for x, y in spots:
        box = (x, y - LABEL_H, x + w, y)
        if all(box[2] <= a or box[0] >= c or box[3] <= b or box[1] >= d for a, b, c, d in placed):
            placed.append(box)
            return x, y
    x, y = spots[0]
    placed.append((x, y - LABEL_H, x + w, y))
    return x, y


def scatter(title: str, points: Sequence[Point], x_label: str, y_label: str) -> Markup:
    """Points on two value axes (price against throughput); chosen points are labelled."""
    height = 400
    x0, x1, y0, y1 = 70.0, WIDTH - RIGHT, height - AXIS_H - 10, TOP + 40
    xt = nice_ticks(max([p.x for p in points] + [1e-12]))
    yt = nice_ticks(max([p.y for p in points] + [1e-12]))
    sx = (x1 - x0) / (xt[-1] or 1.0)
    sy = (y0 - y1) / (yt[-1] or 1.0)
    parts = [_x_axis(xt, x0, x1, y0, y1, x_label)]
    parts.append(_y_axis(yt, x0, x1, y0, y1, y_label))
    ordered = sorted(points, key=lambda p: p.x)
    path = " ".join(f"{x0 + p.x * sx:.1f},{y0 - p.y * sy:.1f}" for p in ordered)
    if len(ordered) > 1:
        parts.append(f'<polyline class="frontier" points="{path}"/>')
    placed: list[tuple[float, float, float, float]] = []
    for p in sorted(points, key=lambda p: p.chosen):
        cx, cy = x0 + p.x * sx, y0 - p.y * sy
        r, style = (7, "chosen") if p.chosen else (4.5, "other")
        parts.append(
            f'<circle class="mark {style}" cx="{cx:.1f}" cy="{cy:.1f}" r="{r}">'
            f"<title>{escape(p.hover)}</title></circle>"
        )
        if p.chosen:
            lx, ly = _label_spot(cx, cy, len(p.label), placed)
            parts.append(
                f'<text class="point-label" x="{lx:.1f}" y="{ly:.1f}">{escape(p.label)}</text>'
            )
    parts.append(_legend([("chosen", "ranked builds"), ("other", "frontier builds")], TOP - 6)[0])
    return _svg(WIDTH, height, title, "".join(parts))


def timeline(
    title: str,
    series: Sequence[Series],
    y_label: str,
    *,
    marks: Sequence[tuple[float, str]] = (),
    x_label: str = "time since start (s)",
) -> Markup:
    """Lines over time, with vertical marks for alarms."""
    key, more = _legend([(s.style, s.name) for s in series], TOP - 4)
    height = 260 + more
    x0, x1, y0, y1 = 60.0, WIDTH - RIGHT, height - AXIS_H - 8, TOP + 22 + more
    xs = [x for s in series for x in s.xs]
    ys = [y for s in series for y in s.ys if y is not None]
    xt = nice_ticks(max([*xs, 1e-12]))
    yt = nice_ticks(max([*ys, 1e-12]))
    sx = (x1 - x0) / (xt[-1] or 1.0)
    sy = (y0 - y1) / (yt[-1] or 1.0)
    parts = [key, _x_axis(xt, x0, x1, y0, y1, x_label)]
    parts.append(_y_axis(yt, x0, x1, y0, y1, y_label))
    for s in series:
        pts = [
            f"{x0 + x * sx:.1f},{y0 - y * sy:.1f}"
            for x, y in zip(s.xs, s.ys, strict=True)
            if y is not None
        ]
        if pts:
            parts.append(
                f'<polyline class="line {s.style}" points="{" ".join(pts)}">'
                f"<title>{escape(s.name)}</title></polyline>"
            )
    for x, label in marks:
        mx = x0 + x * sx
        parts.append(
            f'<line class="alarm" x1="{mx:.1f}" y1="{y1:.1f}" x2="{mx:.1f}" y2="{y0:.1f}">'
            f"<title>{escape(label)}</title></line>"
        )
    return _svg(WIDTH, height, title, "".join(parts))


def _limit(
    x: float, top: float, bottom: float, label: str, label_x: float, label_y: float, anchor: str
) -> str:
    """A dashed vertical rule (a capacity, a fault line) with its label."""
    return (
        f'<line class="limit" x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom:.1f}"/>'
        f'<text class="limit-label" x="{label_x:.1f}" y="{label_y:.1f}" text-anchor="{anchor}">'
        f"{escape(label)}</text>"
    )


def _y_axis(ticks: Sequence[float], x0: float, x1: float, y0: float, y1: float, label: str) -> str:
    """Horizontal grid lines with their values, and the axis label turned upright."""
    step = (y0 - y1) / (ticks[-1] or 1.0)
    parts = []
    for t in ticks:
        y = y0 - t * step
        parts.append(
            f'<line class="grid" x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{fmt(t)}</text>'
        )
    parts.append(
        f'<text class="axis-label" transform="rotate(-90)" x="{-(y0 + y1) / 2:.1f}" y="14" '
        f'text-anchor="middle">{escape(label)}</text>'
    )
    return "".join(parts)


LEGEND_ROW_H = 18


def _legend(items: Sequence[tuple[str, str]], y: float) -> tuple[str, float]:
    """The legend's swatches and names from the left, a new row when the next would pass the
    chart's width; (markup, the height the rows past the first add)."""
    parts: list[str] = []
    x, row = 0.0, 0
    for style, text in items:
        width = 24 + LABEL_CHAR_W * len(text)
        if x > 0 and x + width > WIDTH:
            x, row = 0.0, row + 1
        top = y + row * LEGEND_ROW_H
        parts.append(
            f'<rect class="mark {style}" x="{x:.1f}" y="{top + 8:.1f}" width="12" height="12"/>'
            f'<text class="legend" x="{x + 16:.1f}" y="{top + 18:.1f}">{escape(text)}</text>'
        )
        x += width
    return "".join(parts), row * LEGEND_ROW_H
