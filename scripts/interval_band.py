"""The 80% interval a training estimate carries, set from the calibration sources' residuals so
that it holds for a source the fit never saw (scripts/calibrate.py gathers the residuals).

A new job comes from a new source: other software, other people's settings, another day. Rows
of one source share much of their error, so the rows of the largest source say little about
the next one. The interval is therefore computed over sources, not rows:

1. Each calibration source's rows are predicted from outside it as far as the repository
   allows (a Lambda run by the fit on the other run; every other source by the shipped fit,
   which never fits on it), as measured / predicted.
2. Their 10th, 50th and 90th percentiles are taken with each source weighing 1 in all, split
   evenly over its rows, so that no source dominates (Lambda's 2022 run has 80x the rows of
   DGX Cloud's tables).
3. That band is widened about its median by the smallest factor (in steps of 0.01) under which
   the calibration sources, each left out of steps 1-2 in turn, have at least 80% of their rows,
   counted together, inside the band the others give: split conformal prediction with the
   source, not the row, as the unit that is left out (what is left out is what is judged), and
   the rows as what the interval promises: "the interval covers 80% of held-out rows" (issue
   36). A source's rows count as rows here, not as one vote, so a source the others' band
   misses widens it by as much as it has rows to miss.

Bands are kept separately for one GPU and for several (a scaling adds its own error), each from
the sources with rows of that kind. A job on a GPU model the fit never saw is given a wider band
if, and only if, the calibration rows say such jobs err more: within the sources that have rows
on both (Lambda's runs, each predicted by the fit on the other, share some GPUs and not others),
the spread (90th over 10th percentile, in log) of the rows on GPUs that fit lacked over that of
all their rows; never narrower. Pure functions: no reading, no printing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

QUANTILES = (0.1, 0.5, 0.9)
COVERAGE = 0.8
WIDENING_STEP = 0.01
MAX_WIDENING = 5.0


@dataclass(frozen=True)
class Residual:
    """One measured row of a calibration source as predicted from outside it."""

    source: str
    gpus: int
    ratio: float  # measured / predicted throughput
    fitted_gpu: bool = True  # the GPU model is among the rows the predicting fit was fitted on

    @property
    def group(self) -> str:
        return "multi_gpu" if self.gpus > 1 else "single_gpu"


@dataclass(frozen=True)
class Band:
    """measured / predicted at the low and high end of the interval, its median, the widening
    applied, and the sources and rows it was computed from."""

    low: float
    median: float
    high: float
    widening: float
    sources: tuple[str, ...]
    rows: int

    def holds(self, ratio: float) -> bool:
        return self.low <= ratio <= self.high

    @property
    def width(self) -> float:
        """high / low - 1: how much larger the top of the interval is than its bottom."""
        return self.high / self.low - 1.0


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, qs: Iterable[float]) -> np.ndarray:
    """Quantiles of a weighted sample: each value sits at the middle of its weight on the
    cumulative scale, linear between (with equal weights, numpy's 'hazen' definition)."""
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cdf = (np.cumsum(w) - 0.5 * w) / w.sum()
    return np.asarray(np.interp(list(qs), cdf, v), dtype=float)


def source_quantiles(residuals: list[Residual]) -> tuple[float, float, float]:
    """The 10th, 50th and 90th percentile of log(measured / predicted), each source weighing 1."""
    per_source: dict[str, int] = {}
    for r in residuals:
        per_source[r.source] = per_source.get(r.source, 0) + 1
    logs = np.log([r.ratio for r in residuals])
    weights = np.array([1.0 / per_source[r.source] for r in residuals])
    low, mid, high = weighted_quantiles(logs, weights, QUANTILES)
    return float(low), float(mid), float(high)


def widened(quantiles: tuple[float, float, float], factor: float) -> tuple[float, float]:
    """(low, high) as ratios, the log band stretched about its median by `factor`."""
    low, mid, high = quantiles
    return math.exp(mid + factor * (low - mid)), math.exp(mid + factor * (high - mid))


def left_out_coverage(
    residuals: list[Residual], factor: float, fitted_gpu: bool | None = None
) -> dict[str, float]:
    """Each source's share of rows inside the band the other sources give at `factor` (of its
    rows on fitted or on unfitted GPUs only, if `fitted_gpu` is given; the band is always from
    all the others' rows)."""
    out = {}
    for s in sorted({r.source for r in residuals}):
        mine = [
            r.ratio
            for r in residuals
            if r.source == s and (fitted_gpu is None or r.fitted_gpu == fitted_gpu)
        ]
        if not mine:
            continue
        low, high = widened(source_quantiles([r for r in residuals if r.source != s]), factor)
        out[s] = sum(low <= x <= high for x in mine) / len(mine)
    return out


def pooled_left_out_coverage(residuals: list[Residual], factor: float) -> float:
    """The share of all rows inside the band the other sources give at `factor`, each source
    left out in turn, every row counting once."""
    rows: dict[str, int] = {}
    for r in residuals:
        rows[r.source] = rows.get(r.source, 0) + 1
    covered = left_out_coverage(residuals, factor)
    return sum(share * rows[s] for s, share in covered.items()) / sum(rows.values())


def widening(residuals: list[Residual]) -> float:
    """The smallest factor (a multiple of WIDENING_STEP from 1) at which the sources, each left
    out in turn, have COVERAGE of their rows, counted together, inside the others' band; 1 with
    fewer than two sources (nothing to leave out)."""
    if len({r.source for r in residuals}) < 2:
        return 1.0
    steps = round((MAX_WIDENING - 1.0) / WIDENING_STEP)
    for i in range(steps + 1):
        factor = round(1.0 + i * WIDENING_STEP, 4)
        if pooled_left_out_coverage(residuals, factor) >= COVERAGE:
            return factor
    return MAX_WIDENING


def band(residuals: list[Residual], factor: float | None = None) -> Band:
    """The interval from these residuals, widened by `factor` (by `widening` if not given);
    it always holds 1, the estimate itself."""
    factor = widening(residuals) if factor is None else factor
    quantiles = source_quantiles(residuals)
    low, high = widened(quantiles, factor)
    return Band(
        low=min(low, 1.0),
        median=math.exp(quantiles[1]),
        high=max(high, 1.0),
        widening=factor,
        sources=tuple(sorted({r.source for r in residuals})),
        rows=len(residuals),
    )


# A source speaks to the GPUs the fit lacked only with this many rows on each kind.
MIN_ROWS_EACH = 10


def spread(residuals: list[Residual]) -> float:
    """log(90th / 10th percentile) of measured / predicted, each source weighing 1."""
    low, _, high = source_quantiles(residuals)
    return high - low


def unfitted_gpu_widening(residuals: list[Residual]) -> float:
    """How much wider the band of a GPU model the fit lacked is: the spread of such rows over
    the spread of all rows, within the sources with at least MIN_ROWS_EACH rows of each kind
    (so that the sources' own differences cancel), rounded to 0.01; 1 where none has, or where
    such rows err no more."""
    both = [
        s
        for s in {r.source for r in residuals}
        if sum(r.fitted_gpu for r in residuals if r.source == s) >= MIN_ROWS_EACH
        and sum(not r.fitted_gpu for r in residuals if r.source == s) >= MIN_ROWS_EACH
    ]
    mine = [r for r in residuals if r.source in both]
    if not mine:
        return 1.0
    ratio = spread([r for r in mine if not r.fitted_gpu]) / spread(mine)
    return max(1.0, round(ratio, 2))


@dataclass(frozen=True)
class Bands:
    """The band of one kind of job (one GPU or several): on a GPU model the fit was fitted on,
    and on one it lacked."""

    fitted: Band
    unfitted: Band

    def holds(self, ratio: float, fitted_gpu: bool) -> bool:
        return (self.fitted if fitted_gpu else self.unfitted).holds(ratio)


def group_bands(residuals: list[Residual]) -> Bands:
    """A kind's two bands: the unfitted one widened by unfitted_gpu_widening on top."""
    fitted = band(residuals)
    extra = unfitted_gpu_widening(residuals)
    return Bands(fitted, band(residuals, round(fitted.widening * extra, 4)))


def bands(residuals: list[Residual]) -> dict[str, Bands]:
    """The single-GPU and the multi-GPU bands, each from its own rows."""
    return {
        group: group_bands([r for r in residuals if r.group == group])
        for group in ("single_gpu", "multi_gpu")
    }


def left_out_bands(residuals: list[Residual]) -> dict[tuple[str, str], Bands]:
    """For each (source, group): the bands the other sources give, at the widenings they would
    find among themselves: what judges that source as if it were new."""
    out = {}
    for group in ("single_gpu", "multi_gpu"):
        mine = [r for r in residuals if r.group == group]
        for s in sorted({r.source for r in mine}):
            others = [r for r in mine if r.source != s]
            if others:
                out[(s, group)] = group_bands(others)
    return out
