"""The `kernels` job field: the job fields each kernel library sets (workloads/kernels.py), an
explicit field winning over its library's, and a bad library name refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dlrig.workloads import resolve_workload
from dlrig.workloads.model import KernelLibrary

BUILD = Path(__file__).resolve().parents[2] / "examples" / "builds" / "budget-1gpu-3090.yaml"


def _job(**keys: object) -> object:
    return resolve_workload({"model": "llama-3-8b-lora", **keys}, "test")


def test_eager_sets_nothing() -> None:
    """PyTorch eager as transformers writes Llama: an fp32 cross-entropy over whole logits,
    a two-kernel SwiGLU, no CUDA graphs (the job fields' defaults)."""
    w = _job(kernels="eager")
    assert w.kernels is KernelLibrary.EAGER
    assert (w.fused_loss, w.loss_chunks, w.fused_activation, w.cuda_graphs) == (
        False, 1, False, False
    )  # fmt: skip


def test_compile_sets_no_job_field_and_reduce_overhead_adds_cuda_graphs() -> None:
    """torch.compile's default mode only fuses (PyTorch docs, torch.compiler Getting Started);
    mode="reduce-overhead" "reduces the overhead of python with CUDA graphs" (torch.compile
    docstring)."""
    plain = _job(kernels="compile")
    assert (plain.fused_loss, plain.fused_activation, plain.cuda_graphs) == (False, False, False)
    assert _job(kernels="compile-reduce-overhead").cuda_graphs


def test_compilers_fuse_a_convnets_batch_norm_with_its_relu_and_add() -> None:
    """Inductor decomposes a training batch norm into its reductions and one element-wise
    normalisation the ReLU and the add join (torch/_decomp native_batch_norm); XLA's GPU
    backend expands it the same way (xla/service/batchnorm_expander.cc): both set
    fused_norm_activation, eager does not, and a file's own `false` wins."""
    resnet = {"model": "resnet50"}
    assert not resolve_workload({**resnet, "kernels": "eager"}, "t").fused_norm_activation
    for library in ("compile", "compile-reduce-overhead", "xla"):
        assert resolve_workload({**resnet, "kernels": library}, "t").fused_norm_activation
    own = resolve_workload({**resnet, "kernels": "xla", "fused_norm_activation": False}, "t")
    assert own.kernels is KernelLibrary.XLA and not own.fused_norm_activation


def test_liger_sets_its_fused_linear_cross_entropy_and_swiglu() -> None:
    """Liger's apply_liger_kernel_to_llama defaults (linkedin/Liger-Kernel): fused linear
    cross-entropy over cdiv(V, H) chunks (ops/fused_linear_cross_entropy.py: Llama 3's
    128,256 / 4,096 = 31.3 -> 32) and a SwiGLU that recomputes its SiLU (ops/swiglu.py)."""
    w = _job(kernels="liger")
    assert w.fused_loss and w.fused_activation and not w.cuda_graphs
    assert w.loss_chunks == 32
    assert not w.chunked_logits_kept


def test_unsloth_sets_its_kernels_and_its_gradient_checkpointing() -> None:
    """Unsloth (unsloth/kernels: cross_entropy_loss.py, swiglu.py; get_peft_model's
    use_gradient_checkpointing="unsloth"): a fused loss over the 16-bit logits, one-kernel
    SwiGLU, every layer recomputed in the backward."""
    w = resolve_workload(
        {"model": "llama-3-8b-lora", "activation_checkpointing": False, "kernels": "unsloth"},
        "test",
    )
    # The file's own `activation_checkpointing: false` is explicit: it wins (next test); a zoo
    # entry's value does not stand in the way of the library's.
    assert not w.activation_checkpointing
    assert not resolve_workload({"model": "gpt2"}, "test").activation_checkpointing
    w = resolve_workload({"model": "gpt2", "kernels": "unsloth"}, "test")
    assert w.activation_checkpointing and w.fused_loss and w.fused_activation
    assert w.loss_chunks == 1  # its loss takes the materialised logits
    # Its checkpoints go to host RAM, which the memory estimate does not model: it says so.
    assert any("host RAM" in a and "over-estimate" in a for a in w.assumptions)


def test_fused_sets_the_hand_written_trainers_loss_and_swiglu() -> None:
    """llm.c / llm.q: fused_classifier (llm.q src/kernels/fused_classifier.cu) and swiglu.cu,
    whose backward takes only its input."""
    w = _job(kernels="fused")
    assert w.fused_loss and w.fused_activation and w.loss_chunks == 1


def test_an_explicit_field_overrides_the_library() -> None:
    """`kernels: liger` with `loss_chunks: 1` is Liger without its fused linear cross-entropy."""
    w = _job(kernels="liger", loss_chunks=1, fused_activation=False)
    assert w.loss_chunks == 1 and not w.fused_activation
    assert w.fused_loss  # what the file did not set still comes from the library


def test_the_users_library_replaces_the_zoo_entrys_loss_chunks() -> None:
    """llama-3-8b-full-single is torchtune's recipe: 8 chunks, every chunk's logits kept. A
    user's `kernels: liger` on it is Liger's chunking, not torchtune's."""
    zoo = resolve_workload({"model": "llama-3-8b-full-single"}, "test")
    assert (zoo.loss_chunks, zoo.chunked_logits_kept) == (8, True)
    liger = resolve_workload({"model": "llama-3-8b-full-single", "kernels": "liger"}, "test")
    assert (liger.loss_chunks, liger.chunked_logits_kept) == (32, False)


def test_a_bad_library_is_one_line_naming_the_choices_and_exit_2(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("model: llama-3-8b-lora\nkernels: ligr\n")
    run = subprocess.run(
        [sys.executable, "-m", "dlrig", "estimate", str(BUILD), "--workload", str(job)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "field 'kernels'" in lines[0] and "'liger'" in lines[0] and "'ligr'" in lines[0]
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("library", [k.value for k in KernelLibrary])
def test_every_library_resolves_on_every_kind_of_model(library: str) -> None:
    for model in ("llama-3-8b-lora", "gpt2", "bert-base-squad", "resnet50"):
        assert resolve_workload({"model": model, "kernels": library}, "test").kernels == library


def test_a_library_on_a_convnet_says_its_layers_stay_eager() -> None:
    """The per-layer counts are a transformer layer's: on ResNet-50 `kernels: compile` changes
    no layer, and the estimate says so rather than passing it over, naming the job field it
    does set (its fused batch norm) unless the file turned that off."""
    said = resolve_workload({"model": "resnet50", "kernels": "compile"}, "test").assumptions
    note = next(a for a in said if a.startswith("kernels compile: counted per transformer layer"))
    assert note.endswith("apply (fused_norm_activation)")
    off = {"model": "resnet50", "kernels": "xla", "fused_norm_activation": False}
    said = resolve_workload(off, "test").assumptions
    assert any(a.startswith("kernels xla") and a.endswith("apply") for a in said)
    plain = resolve_workload({"model": "resnet50"}, "test").assumptions
    assert not any(a.startswith("kernels") for a in plain)
