"""An optimizer step run op by op (torch.optim's foreach path or its per-tensor loop, BERT's
BertAdam) against one fused kernel: the bytes every op moves, the launches of a per-tensor loop,
and the wait a per-tensor gradient clip adds on PyTorch before 1.10."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from model_fixtures import make_build, make_workload

from dlrig.catalog import load_catalog
from dlrig.errors import ValidationError
from dlrig.model import compute, estimate, layers, memory
from dlrig.workloads import load_workload
from dlrig.workloads.model import OptimizerStep

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "calibration"


def test_an_unfused_step_moves_every_ops_reads_and_writes() -> None:
    """torch/optim/adam.py `_single_tensor_adam` (v1.13): mul_ + add_ on exp_avg (2 + 3),
    mul_ + addcmul_ on exp_avg_sq (2 + 3), sqrt, / and add_ for the denominator (2 + 2 + 2),
    addcdiv_ on the weight (4) = 20 fp32 moves, 80 B a parameter where a fused kernel moves 7
    (28 B); AdamW's decay mul_ 2 more (88 B); SGD momentum 8 (32 B) against 5 (20 B)."""
    f = compute.optimizer_step_bytes_per_param
    assert f("adam", False, fused=False) == 80.0
    assert f("adamw", False, fused=False) == 88.0
    assert f("sgd", False, fused=False) == 32.0
    assert f("adamw", True, fused=False) == 44.0  # pure 16-bit: the same ops at 2 B
    assert f("adam", False) == 28.0
    # bitsandbytes' 8-bit optimizers are one kernel whatever the field says
    assert f("adamw8bit", False, fused=False) == f("adamw8bit", False)


def test_foreach_moves_the_unfused_bytes_in_the_memory_time() -> None:
    """BERT-large's 335,150,082 parameters (Lambda's log, model_weights_num): foreach AdamW
    moves (22 - 7) x 4 B = 60 B a parameter more than the fused step, 20.1 GB a step."""
    fused = make_workload("bert-large-squad", precision="tf32", optimizer="adamw")
    foreach = make_workload(
        "bert-large-squad", precision="tf32", optimizer="adamw", optimizer_step="foreach"
    )
    extra = compute.optimizer_bytes(foreach, fused.params) - compute.optimizer_bytes(
        fused, fused.params
    )
    assert extra == pytest.approx(60.0 * 335_150_082)
    assert not compute.optimizer_loops(foreach)


def test_bert_large_has_391_parameter_tensors() -> None:
    """DLE BERT (modeling.py): 24 layers x (6 linears x weight and bias + 2 LayerNorms x weight
    and bias) + 3 embedding tables, their LayerNorm and the SQuAD head's weight and bias =
    391; a Llama-family layer holds 9 (seven bias-free linears, two RMSNorm weights)."""
    bert = layers.layer_work(make_workload("bert-large-squad"))
    assert bert.parameter_tensors == 24 * 16 + 7
    llama = layers.layer_work(make_workload("llama-3-8b"))
    assert llama.parameter_tensors == 32 * 9 + 3


def test_a_synced_per_tensor_loop_dispatches_16_ops_a_tensor() -> None:
    """BertAdam on PyTorch before 1.10: per tensor, clip_grad_norm_'s 7 kernels and its wait,
    then AdamW's 9 ops, each dispatched at HOST_DISPATCH_S (15 us): 391 x 16 x 15 us = 93.8 ms
    a step; the same loop without the clip's wait 391 x 9 x 15 us = 52.8 ms; once per
    `gradient_accumulation` micro-batches."""
    synced = make_workload(
        "bert-large-squad", precision="tf32", optimizer="adamw", optimizer_step="per_tensor_synced"
    )
    work = layers.layer_work(synced)
    assert compute.optimizer_host_s(work, synced) == pytest.approx(391 * 16 * 15e-6)
    loop = make_workload(
        "bert-large-squad", precision="tf32", optimizer="adamw", optimizer_step="per_tensor"
    )
    assert compute.optimizer_host_s(work, loop) == pytest.approx(391 * 9 * 15e-6)
    accumulated = make_workload(
        "bert-large-squad",
        precision="tf32",
        optimizer="adamw",
        optimizer_step="per_tensor_synced",
        gradient_accumulation=4,
    )
    assert compute.optimizer_host_s(work, accumulated) == pytest.approx(391 * 16 * 15e-6 / 4)
    fused = make_workload("bert-large-squad", precision="tf32", optimizer="adamw")
    assert compute.optimizer_host_s(work, fused) == 0.0


def test_the_loop_binds_on_the_slower_side_or_tensor_by_tensor_when_it_waits() -> None:
    """(launch-bound, memory-bound) seconds. A loop that never waits costs the slower of its
    launches and its GPU work. BertAdam's, waiting per tensor, binds tensor by tensor: BERT-
    large's 243 vectors (biases, LayerNorm weights) at their launches alone, 391 x 16 x 15 us /
    391 = 240 us each (58.3 ms), its 148 matrices (24 x 6 linears, 3 embedding tables, the head)
    at the slower of those launches and their share of the GPU work: 148 x 240 us = 35.5 ms
    beside 10 ms of GPU work (an A100's ~2 TB/s), the 39 ms themselves beside an RTX 3080's."""
    loop = make_workload("bert-large-squad", optimizer_step="per_tensor")
    synced = make_workload("bert-large-squad", optimizer_step="per_tensor_synced")
    work = layers.layer_work(synced)
    assert (work.parameter_tensors, work.parameter_matrices) == (391, 148)
    assert compute.optimizer_phase_s(work, 0.010, 0.042, loop) == pytest.approx((0.032, 0.010))
    assert compute.optimizer_phase_s(work, 0.050, 0.042, loop) == (0.0, 0.050)
    host = 391 * 16 * 15e-6
    vectors = 243 * host / 391
    fast, gpu = compute.optimizer_phase_s(work, 0.010, host, synced)
    assert (fast + gpu, gpu) == pytest.approx((vectors + 148 * host / 391, 0.010))
    slow, gpu = compute.optimizer_phase_s(work, 0.039, host, synced)
    assert (slow, gpu) == pytest.approx((vectors, 0.039))


def test_bertadams_wait_slows_a_small_batch_step_by_its_launches() -> None:
    """Lambda's RTX 3080 BERT-large fp32 run at batch 2 (results/3080/
    PyTorch_bert_large_squad_FP32/28-10-2020_05-14-39.txt, NGC build 16972326): 4.22 it/s,
    237 ms a step. The synced loop adds, in series with the rest, its 243 vectors' launches
    (58.3 ms at HOST_DISPATCH_S) and its matrices' 29.5 GB (88 B x 335 M) at the card's
    bandwidth (~39 ms) in place of the fused step's 9.4 GB (~12 ms): ~85 ms."""
    build = make_build(None, gpus=[{"model": "GeForce RTX 3080"}])
    kw = {"precision": "tf32", "optimizer": "adamw", "batch_size": 2, "dataset": "synthetic"}
    fused = estimate(build, make_workload("bert-large-squad", **kw))
    synced = estimate(
        build, make_workload("bert-large-squad", optimizer_step="per_tensor_synced", **kw)
    )
    added = synced.step_time_s - fused.step_time_s
    assert 0.075 < added < 0.095


def test_the_field_is_read_from_a_job_file(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("model: bert-large-squad\noptimizer_step: per_tensor\n")
    assert load_workload(path).optimizer_step is OptimizerStep.PER_TENSOR
    path.write_text("model: bert-large-squad\noptimizer_step: unfused\n")
    with pytest.raises(ValidationError, match="optimizer_step"):
        load_workload(path)


def test_lambdas_bert_and_waveglow_rows_run_the_optimizer_their_code_ran() -> None:
    """BERT SQuAD in fp32 steps with BertAdam (run_squad.py), waiting per tensor on v0's
    PyTorch 1.4-1.9 containers but not on the RTX A4500's 2022 one (PyTorch 1.12) nor on v1;
    its fp16 runs take apex FusedAdam. WaveGlow's torch.optim.Adam loops per tensor on v0's
    PyTorch 1 and runs foreach on v1's PyTorch 2."""
    sys.path.insert(0, str(REPO / "scripts"))
    from calibration_data import read_lambda_rows

    rows, _ = read_lambda_rows(DATA, load_catalog(), multi_gpu=True, cleaned=False)
    steps = {
        (r.lambda_model, r.workload.precision.value, r.version, r.lambda_gpu.strip()): (
            r.workload.optimizer_step
        )
        for r in rows
        if r.num_gpus == 1
    }
    s = OptimizerStep
    assert steps[("bert_large_squad", "tf32", "v0", "RTX 3080")] is s.PER_TENSOR_SYNCED
    assert steps[("bert_large_squad", "tf32", "v0", "RTX A4500")] is s.PER_TENSOR
    assert steps[("bert_large_squad", "tf32", "v1", "RTX 4090")] is s.PER_TENSOR
    assert steps[("bert_large_squad", "fp16", "v0", "RTX 3080")] is s.FUSED
    # the RTX 3080's one-GPU WaveGlow row is its apex O1 run, put back as the fp16 it ran
    assert steps[("waveglow", "fp16", "v0", "RTX 3080")] is s.PER_TENSOR
    assert steps[("waveglow", "tf32", "v1", "RTX 4090")] is s.FOREACH


def test_a_job_without_an_optimizer_step_moves_no_step_bytes_and_holds_no_moments() -> None:
    """`optimizer_step: none` (a harness timing forward + backward, as NeuSight's measure_e2e
    does): no step bytes, where a fused fp32 AdamW moves 7 x 4 B = 28 B a parameter
    (optimizer_step_bytes_per_param); the GPU holds the weights and gradients but not Adam's
    two fp32 moments, 8 B a parameter less (memory.optimizer_state_bytes_per_param)."""
    stepped = make_workload("bert-large-squad", precision="fp32", optimizer="adamw")
    bare = make_workload(
        "bert-large-squad", precision="fp32", optimizer="adamw", optimizer_step="none"
    )
    assert compute.optimizer_bytes(stepped, stepped.params) == pytest.approx(28.0 * stepped.params)
    assert compute.optimizer_bytes(bare, bare.params) == 0.0
    layout = memory.declared_layout(bare, 1)
    assert memory.optimizer_state_bytes(bare, layout) == 0.0
    need = {
        w.optimizer_step: memory.memory_need(w, w.batch_size, False, layout, 0.0, 0.0)
        for w in (stepped, bare)
    }
    saved = (
        need[OptimizerStep.FUSED].model_states_bytes - need[OptimizerStep.NONE].model_states_bytes
    )
    assert saved == pytest.approx(8.0 * bare.params)
    build = make_build(None, gpus=[{"model": "A100 SXM4 80GB"}])
    assert estimate(build, bare).step_time_s < estimate(build, stepped).step_time_s
