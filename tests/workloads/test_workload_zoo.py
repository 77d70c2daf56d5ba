"""The workload zoo and workload files: names, overrides, defaults and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlrig.enums import Precision
from dlrig.errors import UnknownWorkloadError, ValidationError
from dlrig.workloads import FinetuneMethod, Mode, load_workload, resolve_workload, zoo

REQUIRED_NAMES = [
    "resnet50", "resnet152", "ssd300", "maskrcnn", "vit-b16", "bert-base-squad",
    "bert-large-squad", "gnmt", "transformer-xl-base", "transformer-xl-large", "tacotron2",
    "waveglow", "ncf", "gpt2", "llama-3-8b", "llama-3-8b-lora", "llama-3-8b-qlora",
    "llama-3-70b-qlora", "stable-diffusion-unet", "llama-3-8b-inference",
]  # fmt: skip


def test_zoo_has_every_name_the_issue_lists_each_sourced() -> None:
    by_name = {w.name: w for w in zoo()}
    assert set(REQUIRED_NAMES) <= set(by_name)
    for w in by_name.values():
        assert w.sources, f"{w.name} has no sources"
        assert w.params > 0 and w.forward_flops_per_sample > 0
        assert not w.assumptions, f"{w.name} relies on defaults: {w.assumptions}"


def test_zoo_facts_match_the_reference_table() -> None:
    # workloads_reference.csv: torchvision resnet50 25,557,032 params, 4.09 GMACs = 8.18 GFLOPs;
    # the PCIE.1 mini-batch sample is 3 x 224 x 224 float32 = 602,112 bytes.
    r50 = load_workload("resnet50")
    assert r50.params == 25_557_032
    assert r50.forward_flops_per_sample == pytest.approx(8.18e9)
    assert r50.input_bytes_per_sample == 3 * 224 * 224 * 4
    # Llama 3 8B: 16.083 GFLOPs per token at S=2048, 2048 tokens per sample.
    llama = load_workload("llama-3-8b")
    assert llama.forward_flops_per_token == pytest.approx(16.083e9)
    assert llama.seq_len == 2048


def test_names_forgive_case_and_spacing() -> None:
    assert load_workload("ResNet 50").name == "resnet50"
    assert load_workload("LLAMA_3_8B_QLORA").name == "llama-3-8b-qlora"


def test_unknown_name_suggests_three_closest() -> None:
    with pytest.raises(UnknownWorkloadError) as err:
        load_workload("resnet5")
    assert err.value.hint is not None
    assert "resnet50" in err.value.hint
    assert err.value.hint.count(",") >= 2


def test_qlora_and_lora_and_inference_presets() -> None:
    q = load_workload("llama-3-70b-qlora")
    assert q.finetune is FinetuneMethod.QLORA and q.weight_bits == 4
    assert q.trainable_fraction == pytest.approx(207_093_760 / 70_553_706_496, rel=1e-3)
    assert load_workload("llama-3-8b-lora").weight_bits is None
    inf = load_workload("llama-3-8b-inference")
    assert inf.mode is Mode.INFERENCE and inf.synthetic and inf.kv_bytes_per_token == 131072


def test_file_on_a_zoo_model_overrides_keys_and_merges_blocks(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "name: r152-fp16\nmodel: resnet152\nbatch_size: 64\nprecision: fp16\n"
        "loader: {pin_memory: false}\n"
    )
    w = load_workload(path)
    assert (w.name, w.batch_size, w.precision) == ("r152-fp16", 64, Precision.FP16)
    assert w.pin_memory is False and w.loader_workers == 8  # workers kept from the preset
    assert w.params == 60_192_808


def test_inline_model_block_from_describe_is_accepted_and_defaults_are_stated() -> None:
    # The dict dlrig.torch.describe returns (params, param_bytes, FLOPs, activation bytes).
    block = {
        "params": 1.2e6,
        "param_bytes": 4.8e6,
        "forward_flops_per_sample": 3.0e8,
        "activation_bytes_per_sample": 2.0e6,
    }
    w = resolve_workload({"name": "mine", "model": block}, "test")
    assert w.params == 1.2e6 and w.activation_bytes_per_sample == 2.0e6
    text = " ".join(w.assumptions)
    assert "batch size" in text and "precision" in text and "synthetic" in text


def test_synthetic_dataset_means_no_input_pipeline() -> None:
    w = resolve_workload({"model": "resnet50", "dataset": "synthetic"}, "test")
    assert w.synthetic and w.dataset is None


def test_unknown_key_is_an_error_naming_it_and_the_nearest() -> None:
    with pytest.raises(ValidationError) as err:
        resolve_workload({"model": "resnet50", "batchsize": 8}, "job.yaml")
    assert "batchsize" in err.value.message and "job.yaml" in err.value.message
    assert err.value.hint is not None and "batch_size" in err.value.hint


def test_bad_values_are_errors() -> None:
    with pytest.raises(ValidationError, match="precision"):
        resolve_workload({"model": "resnet50", "precision": "fp64"}, "job.yaml")
    with pytest.raises(ValidationError, match="batch_size"):
        resolve_workload({"model": "resnet50", "batch_size": 0}, "job.yaml")
    with pytest.raises(ValidationError, match="seq_len"):
        resolve_workload({"model": {"params": 1e6, "forward_flops_per_token": 1e6}}, "job.yaml")
    with pytest.raises(UnknownWorkloadError, match="resnt50"):
        resolve_workload({"model": "resnt50"}, "job.yaml")


def test_flops_per_token_times_seq_len() -> None:
    w = resolve_workload(
        {"model": {"params": 1e8, "forward_flops_per_token": 2e8, "seq_len": 512}}, "t"
    )
    assert w.forward_flops_per_sample == pytest.approx(2e8 * 512)
    assert w.input_bytes_per_sample == 512 * 8  # int64 tokens assumed, and said
    assert any("int64 tokens" in a for a in w.assumptions)


def test_similar_to_names_a_zoo_model() -> None:
    assert load_workload("resnet152").similar_to == "resnet50"
    job = resolve_workload(
        {"model": {"params": 1e6, "forward_flops_per_sample": 1e9}, "similar_to": "ResNet 50"}, "t"
    )
    assert job.similar_to == "resnet50"
    with pytest.raises(UnknownWorkloadError):
        resolve_workload({"model": "resnet50", "similar_to": "resnet5000"}, "t")


def test_activation_assumption_only_where_the_figure_is_used() -> None:
    # A training transformer's activations come from its layers (model.memory, Korthikanti et
    # al.); the FLOPs / 80 stand-in is then never used, so no assumption may claim it.
    structure = {"params": 1.5e9, "forward_flops_per_token": 3e9, "seq_len": 1024,
                 "hidden_size": 1536, "num_layers": 28, "num_heads": 12}  # fmt: skip
    transformer = resolve_workload({"model": structure}, "t")
    assert not any("activation bytes" in a for a in transformer.assumptions)
    bare = resolve_workload({"model": {"params": 1e8, "forward_flops_per_sample": 1e10}}, "t")
    assert any("activation bytes per sample not given" in a for a in bare.assumptions)
