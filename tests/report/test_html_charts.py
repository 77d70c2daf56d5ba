"""The SVG charts' layout: labels of ranked builds that sit close together stay apart."""

from __future__ import annotations

import re

from dlrig.report.html.charts import Point, bar_value_label, scatter


def _label_boxes(svg: str) -> list[tuple[float, float, float, float]]:
    # A label's box as the chart lays it out: 7 px a character, 12 px high, above its baseline.
    boxes = []
    for x, y, text in re.findall(r'class="point-label" x="([\d.-]+)" y="([\d.-]+)">([^<]*)<', svg):
        left, base = float(x), float(y)
        boxes.append((left, base - 12.0, left + 7.0 * len(text), base))
    return boxes


def test_labels_of_neighbouring_ranked_builds_do_not_overlap() -> None:
    # plan resnet50 under 8,000 USD (2026-12-04): #2 and #3 are 3x RTX 5080 builds at 6,551 and
    # 6,641 USD, 2,750 and 2,794 samples/s; their labels used to print one over the other.
    points = [
        Point(6312, 2387, "#1", "", chosen=True),
        Point(6551, 2750, "#2", "", chosen=True),
        Point(6641, 2794, "#3", "", chosen=True),
        Point(7898, 2920, "", ""),
    ]
    boxes = _label_boxes(str(scatter("t", points, "price", "samples/s")))
    assert len(boxes) == 3
    for i, (a, b, c, d) in enumerate(boxes):
        for e, f, g, h in boxes[i + 1 :]:
            assert c <= e or a >= g or d <= f or b >= h, (boxes[i], (e, f, g, h))


def test_bar_values_below_the_axis_resolution_read_as_an_upper_bound() -> None:
    # An H200 LoRA estimate's stages: storage 0.00111 ms and pcie 0.000683 ms beside a 396 ms
    # compute bar printed as raw floats; at the axis's resolution (3 significant figures of
    # 396: 1 ms) they read "<1". A chart of small values keeps its figures.
    assert bar_value_label(0.00111, 396.0) == "<1"
    assert bar_value_label(0.1, 396.0) == "<1"
    assert bar_value_label(197.0, 396.0) == "197"
    assert bar_value_label(0.0, 396.0) == "0"
    assert bar_value_label(0.02, 0.05) == "0.02"
