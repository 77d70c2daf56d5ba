"""The estimate page of a serving workload under Poisson arrivals (issue 36): its headline
facts carry the p99 latency at the asked rate and the largest rate meeting the bounds, the
same figures as `--json`'s `serving.load`."""

from __future__ import annotations

import html
from dataclasses import replace

from dlrig.catalog import load_catalog
from dlrig.machine import resolve_build
from dlrig.model.estimate import estimate
from dlrig.report.estimate import ms
from dlrig.report.html.pages import estimate_page
from dlrig.workloads import load_workload


def test_the_page_states_the_rate_the_bounds_allow() -> None:
    build = resolve_build(
        {"name": "1x H100", "gpus": [{"model": "H100 SXM", "count": 1}]}, "test",
        load_catalog(None),
    )  # fmt: skip
    w = load_workload("llama-3.1-8b-serve")
    assert w.serve is not None
    w = replace(w, serve=replace(w.serve, arrival_rate=10.0, ttft_target_s=2.0,
                                 tpot_target_s=0.1))  # fmt: skip
    est = estimate(build, w, arrivals=True)
    assert est.serving is not None and est.serving.load is not None
    load = est.serving.load
    assert load.at_rate is not None and load.at_rate.ttft_p99_s is not None
    assert load.max_requests_per_s is not None and load.limit is not None
    page = html.unescape(estimate_page(est))
    assert "at 10 requests/s" in page and f"TTFT p99 {ms(load.at_rate.ttft_p99_s)}" in page
    assert f"{load.max_requests_per_s:,.3g} requests/s" in page
    assert f"then binds: {load.limit.value}" in page
    assert "Poisson arrivals" in page  # the terminal's lines, carried on the page
