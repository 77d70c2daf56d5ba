"""No "does not fit" for a job people ran (issue 10): every Lambda training row (v0 2022 + v1
2024, 1-8 GPUs, as scripts/calibration_data.py reads them: 2279 rows) fits its GPU at its
published per-GPU batch, and the largest batch that fits is at least that batch. Before the
structure-based activations 1386 of them did not fit (BERT at 1.75x its need)."""

from __future__ import annotations

import sys
from pathlib import Path

from dlrig.catalog import load_catalog
from dlrig.model import estimate

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"
MAX_GPUS = 8


def test_every_lambda_row_fits_at_its_published_batch() -> None:
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True)
    rows = [r for r in rows if r.num_gpus <= MAX_GPUS]
    assert len(rows) > 2000  # 2,076 after the left-out rows (bench/results/accuracy.md)
    wrong = []
    for r in rows:
        m = estimate(r.build(), r.workload).memory
        if not m.fits or m.max_batch_per_gpu < r.workload.batch_size:
            wrong.append(f"{r.lambda_model} {r.workload.precision.value} batch "
                         f"{r.workload.batch_size} on {r.num_gpus}x {r.gpu.name}")  # fmt: skip
    assert not wrong, f"{len(wrong)} rows: {wrong[:5]}"
