"""A card run under a power limit (`power_limit_w` in the build, nvidia-smi -pl): how much of
its sustained matmul rate is left.

Two bounds, the lower one holds:
- the card's own curve: the rate falls as (limit / stock power) ** POWER_LIMIT_EXPONENT. The
  exponent is fitted (least squares in logs) to published sweeps of compute-bound deep-learning
  work on power-limited RTX 3090s (350 W stock): Puget Systems, D. Kinghorn, "Quad RTX3090 GPU
  Wattage Limited MaxQ TensorFlow Performance", 2020-11-13,
  https://www.pugetsystems.com/labs/hpc/quad-rtx3090-gpu-wattage-limited-maxq-tensorflow-performance-1974/
  (280 W: 95% of the performance); llmgarage.ai, "power limit tokens per second benchmark",
  https://llmgarage.ai/power-limit-tokens-per-second-benchmark (6x RTX 3090, prefill at 198K
  context, compute-bound: 9,326 tokens/s at 300 W and 8,436 at 250 W against 9,893 at 350 W).
  The fit gives 0.397; the three points sit within 4 points of the curve. Voltage falls with
  the clock, so power falls faster than speed: the exponent is well under 1.
- the architecture's efficiency: the clock the limit feeds under tensor work at boost
  (model/rates.py's `sustained_clock`, with the limit in place of the stock power).

A probe of the machine (`measured:`) already ran under whatever limit was set: it is used as it
is.
"""

from __future__ import annotations

from dlrig.enums import Precision
from dlrig.machine.model import GPUGroup, Measured
from dlrig.model.rates import achievable_matmul

POWER_LIMIT_EXPONENT = 0.397


def power_limit_factor(
    group: GPUGroup, precision: Precision, measured: Measured | None = None
) -> tuple[float, str | None]:
    """(share of the card's sustained matmul rate left under its power limit, a note saying
    why); (1.0, None) without a limit below stock power or with the machine's own probe."""
    limit_w, stock_w = group.power_limit_w, group.gpu.tdp_w
    if limit_w is None or limit_w >= stock_w:
        return 1.0, None
    if measured is not None and measured.matmul_tflops(group.gpu.name, precision) is not None:
        return 1.0, None
    at_stock = achievable_matmul(group.gpu, precision).value
    if at_stock <= 0:
        return 1.0, None
    curve = (limit_w / stock_w) ** POWER_LIMIT_EXPONENT
    limited_card = group.gpu.model_copy(update={"tdp_w": limit_w})
    efficiency_cap = achievable_matmul(limited_card, precision).value / at_stock
    factor = min(curve, efficiency_cap, 1.0)
    note = (
        f"{group.gpu.name} limited to {limit_w:g} of {stock_w:g} W: sustained matmul rate "
        f"x{factor:.2f} ((limit/stock)^{POWER_LIMIT_EXPONENT} from published RTX 3090 sweeps"
        + (", capped by the clock the limit feeds" if efficiency_cap < curve else "")
        + ")"
    )
    return factor, note
