"""`similar_to` follows the zoo entry's own `similar_to` (issue 10, finding 7): a workload
"similar to gpt2" gets the factors fitted for the model gpt2 borrows from, not the defaults."""

from __future__ import annotations

from dlrig.model.calibration import default_calibration
from dlrig.workloads import resolve_workload


def test_similar_to_gpt2_follows_gpt2_to_bert_base() -> None:
    """zoo.toml: gpt2 is `similar_to = "bert-base-squad"` (a 12-layer, 768-wide transformer);
    bert-base-squad has fitted factors in the calibration, gpt2 has none of its own."""
    job = resolve_workload({"model": "gpt2", "similar_to": "gpt2"}, "test")
    assert job.similar_to == "bert-base-squad"
    cal = default_calibration()
    assert "gpt2" not in cal.workloads
    assert cal.workload(job.similar_to) == cal.workloads["bert-base-squad"]


def test_similar_to_an_entry_without_its_own_similar_to_stays_on_it() -> None:
    job = resolve_workload({"model": "resnet152", "similar_to": "resnet50"}, "test")
    assert job.similar_to == "resnet50"
