"""`checkpointed_layers`: Megatron's block recompute (--recompute-method block
--recompute-num-layers N) checkpoints N of the layers; the rest keep their activations."""

from __future__ import annotations

import pytest
from model_fixtures import make_workload

from dlrig.errors import DlrigError
from dlrig.model.compute import training_flop_multiplier
from dlrig.model.memory import per_sample_bytes


def test_a_block_recompute_of_21_of_80_layers_recomputes_that_share() -> None:
    """MLPerf Training's AMD Llama 2 70B LoRA configs (ACG=full ACM=block ACL=21, 80 layers):
    a LoRA step's FLOPs per forward FLOP are 1 + 1 (no weight gradients) + 21/80 = 2.2625,
    against 3 with every layer recomputed and 2 with none."""
    partial = make_workload(
        "llama-3-70b-qlora", activation_checkpointing=True, checkpointed_layers=21
    )
    assert partial.num_layers == 80
    assert partial.recompute_share == pytest.approx(21 / 80)
    assert training_flop_multiplier(partial) == pytest.approx(2.2625)
    every = make_workload("llama-3-70b-qlora", activation_checkpointing=True)
    assert training_flop_multiplier(every) == pytest.approx(3.0)


def test_layers_not_checkpointed_keep_their_activations() -> None:
    """Per-sample activation memory sits between full checkpointing's and none's, by the
    share recomputed: 21 of 80 layers keep their inputs alone, 59 all they save."""
    none = make_workload("llama-3-70b-qlora", activation_checkpointing=False)
    every = make_workload("llama-3-70b-qlora", activation_checkpointing=True)
    partial = make_workload(
        "llama-3-70b-qlora", activation_checkpointing=True, checkpointed_layers=21
    )
    low, mid, high = (per_sample_bytes(w, True) for w in (every, partial, none))
    assert low < mid < high


def test_checkpointed_layers_need_checkpointing_and_a_model_that_deep() -> None:
    with pytest.raises(DlrigError, match="activation_checkpointing"):
        make_workload("llama-3-70b-qlora", activation_checkpointing=False, checkpointed_layers=21)
    with pytest.raises(DlrigError, match="checkpointed_layers"):
        make_workload("llama-3-70b-qlora", activation_checkpointing=True, checkpointed_layers=81)
