"""`dlrig schema build|workload|catalog`: the JSON Schema of each file format, for editors."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, assert_never

import typer


class FileFormat(StrEnum):
    """The file formats a user writes."""

    BUILD = "build"
    WORKLOAD = "workload"
    CATALOG = "catalog"


JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def file_schema(kind: FileFormat) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one file format, from the models that validate it."""
    from pydantic import BaseModel

    model: type[BaseModel]
    if kind is FileFormat.BUILD:
        from dlrig.machine.schema import BuildFile

        model = BuildFile
    elif kind is FileFormat.WORKLOAD:
        from dlrig.workloads.schema import WorkloadFile

        model = WorkloadFile
    elif kind is FileFormat.CATALOG:
        from dlrig.catalog.schema import catalog_file_model

        model = catalog_file_model()
    else:
        assert_never(kind)
    return {"$schema": JSON_SCHEMA_DIALECT, **model.model_json_schema()}


def schema(
    kind: Annotated[
        FileFormat, typer.Argument(help="which file format: build | workload | catalog")
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="print JSON, as every command takes (a schema is JSON with or without it)",
        ),
    ] = False,
) -> None:
    """Print the JSON Schema of a file format (point your editor's YAML/TOML plugin at it)."""
    from dlrig.report.console import print_text

    del as_json  # the output is the same with or without it
    print_text(json.dumps(file_schema(kind), indent=2))
