"""`--set KEY=VALUE` on the raw documents (design.md): routing, schema-known paths, YAML
values, catalog parts edited into inline specs, and errors naming the nearest keys."""

from __future__ import annotations

import pytest

from dlrig.commands.overrides import apply_overrides, parse_assignment
from dlrig.errors import ValidationError
from dlrig.machine import resolve_build
from dlrig.workloads import resolve_workload

BUILD = {
    "gpus": [{"model": "RTX 3090", "count": 2}],
    "storage": [{"kind": "nvme", "capacity_tb": 2, "read_mb_s": 7000}],
}


def _apply(*texts: str) -> tuple[dict[str, object], dict[str, object]]:
    return apply_overrides(BUILD, {"model": "resnet50"}, [parse_assignment(t) for t in texts])


def test_routing_workload_first_then_build_or_explicit_prefix() -> None:
    assert parse_assignment("batch_size=64").target == "workload"
    assert parse_assignment("nodes=2").target == "build"
    assert parse_assignment("build.name=x").target == "build"
    assert parse_assignment("workload.name=x").target == "workload"


def test_values_are_yaml() -> None:
    assert parse_assignment("loader.pin_memory=false").value is False
    assert parse_assignment("input.shape=[3, 225, 225]").value == [3, 225, 225]
    assert parse_assignment("dataset=synthetic").value == "synthetic"
    assert parse_assignment("model.params=1e9").value == 1e9  # YAML 1.1 reads 1e9 as text


def test_a_path_the_file_never_set_is_valid() -> None:
    build, work = _apply("gpus.0.pcie.lanes=4", "loader.workers=0", "batch_size=16")
    resolved = resolve_build(build, "t")
    assert resolved.gpus[0].pcie_lanes == 4 and resolved.gpus[0].count == 2
    job = resolve_workload(work, "t")
    assert (job.loader_workers, job.batch_size, job.name) == (0, 16, "resnet50")
    assert job.pin_memory is True  # the preset's other loader settings are kept


def test_spec_field_on_a_catalog_part_makes_an_inline_spec() -> None:
    build, _ = _apply("gpus.0.memory_gb=48", "storage.0.read_mb_s=100")
    resolved = resolve_build(build, "t")
    assert resolved.gpus[0].gpu.memory_gb == 48
    assert resolved.gpus[0].gpu.memory_bandwidth_gb_s == 936  # the rest from the catalog
    assert resolved.storage[0].device.read_mb_s == 100  # an inline spec written flat


def test_editing_a_zoo_model_keeps_the_preset() -> None:
    _, work = _apply("model.params=1e9")
    job = resolve_workload(work, "t")
    assert job.params == 1e9 and job.batch_size == 256 and job.dataset is not None


def test_documents_are_not_modified() -> None:
    original = {"model": "resnet50"}
    apply_overrides(BUILD, original, [parse_assignment("batch_size=2")])
    assert original == {"model": "resnet50"}
    assert BUILD["gpus"] == [{"model": "RTX 3090", "count": 2}]


@pytest.mark.parametrize(
    ("text", "message", "nearest"),
    [
        ("batchsize=3", "unknown key 'batchsize'", "batch_size"),
        ("loader.pinmemory=1", "unknown key 'loader.pinmemory'", "loader.pin_memory"),
        ("gpus.0.pcie.lane=8", "unknown key 'gpus.0.pcie.lane'", "gpus.0.pcie.lanes"),
        ("gpus.x.count=1", "'gpus' is a list", "gpus.0.count"),
    ],
)
def test_unknown_paths_name_the_nearest_valid_keys(text: str, message: str, nearest: str) -> None:
    with pytest.raises(ValidationError) as err:
        parse_assignment(text)
    assert message in err.value.message
    assert err.value.hint is not None and nearest in err.value.hint


def test_malformed_assignments() -> None:
    for text in ("batch_size", "=3", "a..b=1"):
        with pytest.raises(ValidationError):
            parse_assignment(text)
    with pytest.raises(ValidationError, match="no entry 3"):
        _apply("gpus.3.count=1")
