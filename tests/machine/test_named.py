"""The loader reads a build file with the named-parts schema first and the full one when it is
refused (machine/named.py): whatever the document, the answer is the full schema's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlrig.errors import ValidationError
from dlrig.io.documents import read_document
from dlrig.io.validation import validate_document
from dlrig.machine.loader import parse_build
from dlrig.machine.named import NamedBuildFile
from dlrig.machine.schema import BuildFile

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples" / "builds").iterdir())


def outcome(read: Any) -> tuple[str, Any]:
    """('ok', the fields) or ('error', the message) of one way of reading a document."""
    try:
        return "ok", read().model_dump()
    except ValidationError as exc:
        return "error", str(exc)


def assert_same_as_full_schema(doc: Any) -> None:
    assert outcome(lambda: parse_build(doc, "b.yaml")) == outcome(
        lambda: validate_document(BuildFile, doc, "b.yaml")
    )


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_builds_read_by_the_named_schema_as_by_the_full_one(path: Path) -> None:
    _, doc = read_document(path)
    assert type(parse_build(doc, path.name)) is NamedBuildFile
    assert_same_as_full_schema(doc)


@pytest.mark.parametrize(
    "doc",
    [
        {"gpus": [{"spec": {"name": "my card", "memory_gb": 24}}]},  # inline spec
        {"gpus": {"name": "my card", "tdp_w": 300}, "cpu": {"cores": 16}},  # spec fields
        {"gpus": [{"model": "NVIDIA RTX A5000", "count": 0}]},  # count below 1
        {"gpus": [{"model": "NVIDIA RTX A5000", "cuont": 2}]},  # a typo in a setting
        {"gpu": ["NVIDIA RTX A5000"]},  # a typo in a field
        {"gpus": [7]},  # none of the four forms
        {"nodes": True},  # a YAML bool where a number belongs
        {"prices": {"currency": "dollars"}},
        {"measured": {"taken": "2026-12-06", "allreduce_gpus": 4}},
    ],
)
def test_other_forms_and_errors_are_the_full_schemas(doc: dict[str, Any]) -> None:
    assert_same_as_full_schema(doc)


def test_a_file_with_an_inline_part_is_read_by_the_full_schema() -> None:
    doc = {"gpus": ["NVIDIA RTX A5000", {"spec": {"name": "my card"}}]}
    assert type(parse_build(doc, "b.yaml")) is BuildFile


keys = st.sampled_from([*sorted(BuildFile.model_fields), "model", "spec", "count", "name"])
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2000),
    st.sampled_from(["NVIDIA RTX A5000", "blower", "2026-12-06", "us-15a", "USD", ""]),
)
documents = st.dictionaries(
    keys,
    st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=12,
    ),
    max_size=6,
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents)
def test_any_document_reads_as_the_full_schema_reads_it(doc: dict[str, Any]) -> None:
    assert_same_as_full_schema(doc)
