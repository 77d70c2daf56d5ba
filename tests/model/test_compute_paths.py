"""Every compute path the model can pick has its fitted matmul efficiency (model/data): a path
added to the enum without a calibration entry would fail at estimate time, not here."""

from __future__ import annotations

from dlrig.model.calibration import default_calibration
from dlrig.model.rates import ComputePath


def test_every_compute_path_has_a_matmul_efficiency() -> None:
    assert set(default_calibration().matmul_efficiency) == {p.value for p in ComputePath}
