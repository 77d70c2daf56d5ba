"""`dlrig schema build|workload|catalog`: the JSON Schemas accept every file dlrig ships and
reject what dlrig rejects, so that an editor's squiggles agree with `dlrig check`."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from dlrig.cli import app
from dlrig.commands.schema import FileFormat, file_schema
from dlrig.workloads.loader import zoo_documents

EXAMPLES = sorted(Path(__file__).parents[2].joinpath("examples", "builds").glob("*.*"))


def _plain(doc: Any) -> Any:
    """The document as JSON would carry it (YAML and TOML read dates as date objects)."""
    return json.loads(json.dumps(doc, default=str))


def _read(path: Path) -> dict[str, Any]:
    if path.suffix == ".toml":
        return tomllib.loads(path.read_text())
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def _validator(kind: FileFormat) -> jsonschema.protocols.Validator:
    schema = file_schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


BUILD = _validator(FileFormat.BUILD)
WORKLOAD = _validator(FileFormat.WORKLOAD)
CATALOG = _validator(FileFormat.CATALOG)


def test_the_command_prints_each_schema() -> None:
    for kind in FileFormat:
        result = CliRunner().invoke(app, ["schema", kind.value])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output) == file_schema(kind)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_build_is_valid(path: Path) -> None:
    BUILD.validate(_plain(_read(path)))


def test_every_part_form_is_valid() -> None:
    """design.md's four forms of a part, and a partial inline spec."""
    BUILD.validate(
        {
            "gpus": [
                "GeForce RTX 4090",
                {"model": "GeForce RTX 4090", "count": 2, "pcie": {"gen": 4, "lanes": 8}},
                {"spec": {"name": "My GPU", "memory_gb": 24, "tdp_w": 450}},
                {"name": "Mystery", "memory_gb": 24, "count": 2},
            ],
            "cpu": {"name": "Threadripper 32-core", "cores": 32, "pcie_lanes": 128, "tdp_w": 280},
            "storage": [{"kind": "hdd", "capacity_tb": 8, "read_mb_s": 180}],
            "psu": {"watts": 1600, "efficiency": "platinum"},
            "memory": {"size_gb": 128},
        }
    )


@pytest.mark.parametrize(
    "doc",
    [
        {"gpus": [{"model": "GeForce RTX 4090", "cout": 2}]},  # a typo in a setting
        {"gpus": [{"model": "GeForce RTX 4090", "count": 0}]},
        {"psu": {"watts": 1600, "efficiency": "unobtainium"}},
        {"gpus": [{"model": "GeForce RTX 4090", "pcie": {"gen": 99, "lanes": 1000}}]},
        {"cpu": 5},
        {"cpu": {}},  # names no part
        {"cpu": {"count": 2}},  # settings alone name no part either
        {"nodes": "two"},
        {"gpus": [{"name": "x", "tdp_w": 1e308}]},
        {"colour": "red"},
    ],
)
def test_a_wrong_build_is_rejected(doc: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        BUILD.validate(doc)


@pytest.mark.parametrize("name", list(zoo_documents()))
def test_every_zoo_workload_is_valid(name: str) -> None:
    WORKLOAD.validate(_plain(zoo_documents()[name]))


@pytest.mark.parametrize(
    "doc",
    [
        {"model": "resnet50", "batch_size": 0},
        {"model": "resnet50", "precision": "fp12"},
        {"model": {"params": -5, "forward_flops_per_sample": 1e9}},
        {"model": "resnet50", "input": {"shape": [3, 224], "dtype": "float31"}},
        {"model": "resnet50", "batch_sise": 8},
    ],
)
def test_a_wrong_workload_is_rejected(doc: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        WORKLOAD.validate(doc)


def test_the_builtin_catalog_is_a_valid_catalog_file() -> None:
    data = resources.files("dlrig.catalog").joinpath("data")
    for kind in ("gpus", "cpus", "motherboards", "psus", "cases", "storage", "memory", "platforms"):
        parts = tomllib.loads(data.joinpath(f"{kind}.toml").read_text())["part"]
        CATALOG.validate(_plain({kind: parts}))


def test_a_price_patch_is_a_valid_catalog_file_and_a_wrong_one_is_not() -> None:
    CATALOG.validate({"gpus": [{"name": "GeForce RTX 4090", "price_usd": 1799}]})
    for wrong in (
        {"gpu": [{"name": "GeForce RTX 4090"}]},
        {"gpus": [{"price_usd": 1799}]},
        {"gpus": [{"name": "x", "price_usd": -1}]},
    ):
        with pytest.raises(jsonschema.ValidationError):
            CATALOG.validate(wrong)
