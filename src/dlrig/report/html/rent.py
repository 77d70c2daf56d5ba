"""The buy-or-rent section of the plan and estimate pages: the offers, the cumulative cost of
owning against renting over the months (crossing at the payback), and how the payback moves
with utilisation and the electricity price."""

from __future__ import annotations

from markupsafe import Markup, escape

from dlrig.cloud.analysis import BreakEven, RentAnalysis
from dlrig.report.html.charts import Series, timeline
from dlrig.report.rent import DEPRECIATION_TEXT, stale_line, verdict_lines


def _cell(text: str, num: bool = False) -> str:
    return f'<td class="num">{escape(text)}</td>' if num else f"<td>{escape(text)}</td>"


def _offers_table(analysis: RentAnalysis) -> str:
    head = "".join(
        f'<th class="num">{h}</th>' if h in ("USD/h", "h/run", "USD/run") else f"<th>{h}</th>"
        for h in ("provider", "instance", "GPUs", "USD/h", "h/run", "USD/run", "price date")
    )
    rows = []
    for r in analysis.offers:
        o = r.offer
        date = o.price_date.isoformat() + (" (old)" if o.stale(analysis.today) else "")
        rows.append(
            "<tr>"
            + _cell(o.provider)
            + f'<td title="{escape(o.source)}">{escape(o.instance)}'
            + (" (spot)" if o.spot else "")
            + "</td>"
            + _cell(f"{r.gpus}x {o.gpu.name}")
            + _cell(f"{r.price_per_hour_usd:,.2f}", True)
            + _cell(f"{r.hours_per_run:,.2f}", True)
            + _cell(f"{r.cost_per_run_usd:,.2f}", True)
            + _cell(date)
            + "</tr>"
        )
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _months(m: float | None) -> str:
    return "never" if m is None else f"{m:.1f}"


def _sensitivity(be: BreakEven) -> str:
    prices = sorted({p for _, p, _ in be.payback_grid})
    utils = sorted({u for u, _, _ in be.payback_grid})
    grid = {(u, p): m for u, p, m in be.payback_grid}
    head = "<th>utilisation</th>" + "".join(f'<th class="num">{p:g} USD/kWh</th>' for p in prices)
    rows = [
        "<tr>"
        + _cell(f"{u:.0%}")
        + "".join(_cell(_months(grid[(u, p)]), True) for p in prices)
        + "</tr>"
        for u in utils
    ]
    by_price = dict(be.utilisation_by_electricity)
    rows.append(
        "<tr>"
        + _cell(f"break-even utilisation over {be.horizon_months:g} months")
        + "".join(
            _cell("never" if by_price[p] is None else f"{by_price[p]:.0%}", True) for p in prices
        )
        + "</tr>"
    )
    return (
        "<h3>Months until owning pays off, by utilisation and electricity price</h3>"
        f"<table><tr>{head}</tr>{''.join(rows)}</table>"
        '<p class="note">"never": not within 10 years. The build is off when idle; its energy '
        "is paid for busy hours only.</p>"
    )


def _cost_chart(be: BreakEven) -> Markup:
    months = [c.months for c in be.curve]
    crossing = be.payback_months
    title = (
        f"Cumulative cost at {be.utilisation:.0%} utilisation: owning pays off after "
        f"{crossing:.1f} months (dashed line)"
        if crossing is not None
        else f"Cumulative cost at {be.utilisation:.0%} utilisation: owning does not pay off"
    )
    return timeline(
        title,
        [
            Series("owning (bought, powered, resold then)", months,
                   [c.owning_usd for c in be.curve], "s0"),
            Series(f"renting ({be.against.offer.provider})", months,
                   [c.renting_usd for c in be.curve], "s1"),
        ],
        "USD",
        marks=[(crossing, f"pays off after {crossing:.1f} months")] if crossing else [],
        x_label="months",
    )  # fmt: skip


def rent_section(analysis: RentAnalysis) -> Markup:
    """The section, as HTML (every name escaped)."""
    parts = [f"<h2>Buy or rent: {escape(analysis.job)} in the cloud</h2>"]
    if not analysis.offers:
        parts.append(f'<p class="note">None of the {analysis.priced} offers holds the job.</p>')
        return Markup("".join(parts))
    parts.append(_offers_table(analysis))
    stale = stale_line(analysis)
    if stale:
        parts.append(f'<p class="note">{escape(stale)}</p>')
    be = analysis.break_even
    if be is not None:
        parts.append("".join(f"<p>{escape(line.strip())}</p>" for line in verdict_lines(be)[:-1]))
        parts.append(str(_cost_chart(be)))
        parts.append(_sensitivity(be))
        parts.append(f'<p class="note">{escape(DEPRECIATION_TEXT)}</p>')
    return Markup("".join(parts))
