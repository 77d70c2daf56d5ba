"""The workload's `parallel` (a strategy name or a block) and the model block's structure
fields: each form of `parallel` reports its own error, in one line naming the file and field,
exit 2; structure that cannot be a transformer's is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dlrig.errors import ValidationError
from dlrig.workloads import resolve_workload

BUILD = """\
name: one 3090
gpus:
  - model: GeForce RTX 3090
    count: 1
"""


def run_estimate(tmp_path: Path, workload: str) -> subprocess.CompletedProcess[str]:
    build, job = tmp_path / "build.yaml", tmp_path / "job.yaml"
    build.write_text(BUILD)
    job.write_text(workload)
    return subprocess.run(
        [sys.executable, "-m", "dlrig", "estimate", str(build), "--workload", str(job)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_a_block_reports_its_own_error_not_the_strategy_names(tmp_path: Path) -> None:
    """`parallel: {sequence: true}` used to say "Input should be 'ddp', 'fsdp' or 'host-ps'"."""
    out = run_estimate(tmp_path, "model: resnet50\nparallel: {sequence: true}\n")
    assert out.returncode == 2
    assert "'sequence' parallelism needs 'tensor' of 2 or more" in out.stderr
    assert "'ddp', 'fsdp' or 'host-ps'" not in out.stderr
    assert "job.yaml" in out.stderr and "Traceback" not in out.stderr


def test_a_misspelt_block_key_is_named_with_a_suggestion(tmp_path: Path) -> None:
    out = run_estimate(tmp_path, "model: resnet50\nparallel: {tensr: 2}\n")
    assert out.returncode == 2
    assert "unknown key 'parallel.tensr'" in out.stderr
    assert "did you mean 'tensor'" in out.stderr


def test_a_bad_strategy_name_lists_the_names(tmp_path: Path) -> None:
    out = run_estimate(tmp_path, "model: resnet50\nparallel: fsdpp\n")
    assert out.returncode == 2
    assert "field 'parallel': Input should be 'ddp', 'fsdp' or 'host-ps'" in out.stderr


def test_the_layout_is_fixed_only_when_the_document_names_it() -> None:
    assert not resolve_workload({"model": "llama-3-70b-qlora"}, "t").parallel_fixed
    fixed = resolve_workload({"model": "llama-3-70b-qlora", "parallel": "ddp"}, "t")
    assert fixed.parallel_fixed


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"num_heads": 32, "kv_heads": 5}, "'num_heads' is a multiple of 'kv_heads'"),
        ({"num_heads": 30}, "'hidden_size' is a multiple of 'num_heads'"),
        ({"encoder_layers": 12}, "give 'encoder_layers' and 'encoder_seq_len' together"),
    ],
)
def test_structure_that_is_no_transformer_is_refused(extra: dict[str, int], message: str) -> None:
    model = {"params": 8e9, "forward_flops_per_token": 16e9, "seq_len": 2048,
             "hidden_size": 4096, "num_layers": 32, **extra}  # fmt: skip
    with pytest.raises(ValidationError, match=message):
        resolve_workload({"model": model}, "job.yaml")
