"""`similar_to` follows the zoo entry's own `similar_to` (issue 10, finding 7): a workload
"similar to gpt2" gets the layer facts of the model gpt2 borrows from, not the defaults."""

from __future__ import annotations

import dataclasses

from dlrig.model.layers import CLASSIC_STRUCTURE, structure_of
from dlrig.workloads import resolve_workload


def test_similar_to_gpt2_follows_gpt2_to_bert_base() -> None:
    """zoo.toml: gpt2 is `similar_to = "bert-base-squad"` (a 12-layer, 768-wide transformer).
    Since the model computes work by layer class, a model that states its own transformer
    fields (gpt2) uses them; one that does not borrows the named model's counted layers."""
    job = resolve_workload({"model": "gpt2", "similar_to": "gpt2"}, "test")
    assert job.similar_to == "bert-base-squad"
    assert "gpt2" not in CLASSIC_STRUCTURE
    assert structure_of(job) is None
    bare = dataclasses.replace(job, model_name="my-bert", name="my-bert", hidden_size=None)
    assert structure_of(bare) is CLASSIC_STRUCTURE["bert-base-squad"]


def test_similar_to_an_entry_without_its_own_similar_to_stays_on_it() -> None:
    job = resolve_workload({"model": "resnet152", "similar_to": "resnet50"}, "test")
    assert job.similar_to == "resnet50"
