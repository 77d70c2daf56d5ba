"""The user's config file: defaults set once, read here and nowhere else (core code never reads
the environment or the user's files).

`$DLRIG_CONFIG`, else `config.toml` in the user config directory (platformdirs: on Linux
`~/.config/dlrig/config.toml`):

    circuit = "us-20a"     # the mains circuit plan, check, estimate, compare and upgrade assume

A missing file is no error; a bad one is one line naming the file and the field (exit 2).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from pydantic import BaseModel

    from dlrig.machine.model import Build
    from dlrig.mains import Mains

CONFIG_ENV = "DLRIG_CONFIG"

CircuitOption = Annotated[
    str | None,
    typer.Option(
        "--circuit",
        help="mains circuit the machine runs on: us-15a, us-20a, us-240v-30a, eu-16a, uk-13a, "
        "2x-us-15a (two circuits), ... (default: the build file's, else `circuit` in "
        "config.toml, else us-15a)",
    ),
]


def _config_model() -> type[BaseModel]:
    """What config.toml may set (built on first use: `dlrig --help` imports no pydantic)."""
    from pydantic import BaseModel, ConfigDict, Field

    class UserConfig(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)

        circuit: str | None = Field(
            default=None,
            min_length=1,
            max_length=100,
            description="a circuit name (us-15a, us-20a, eu-16a, ...), or NNx-NAME",
        )

    return UserConfig


def config_path() -> Path:
    """$DLRIG_CONFIG, else config.toml in the user config directory."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    from platformdirs import user_config_path

    return user_config_path("dlrig") / "config.toml"


def user_circuit() -> tuple[str, str] | None:
    """(file, circuit) the user's config file sets; None when it sets none or there is none."""
    path = config_path()
    if not path.exists():
        return None
    from dlrig.io.documents import read_document
    from dlrig.io.validation import validate_document

    source, doc = read_document(path)
    circuit: str | None = validate_document(_config_model(), doc, source).circuit  # type: ignore[attr-defined]
    return None if circuit is None else (source, circuit)


def resolve_mains(flag: str | None, build_mains: Mains | None = None) -> Mains:
    """The circuit a command judges on: --circuit, else the build file's, else config.toml's,
    else the default (us-15a)."""
    from dlrig.mains import default_mains, find_mains

    if flag is not None:
        return find_mains(flag, where="--circuit", origin="--circuit")
    if build_mains is not None:
        return build_mains
    found = user_circuit()
    if found is not None:
        source, name = found
        return find_mains(name, where=f"{source}: field 'circuit'", origin=f"config file {source}")
    return default_mains()


def with_mains(build: Build, flag: str | None) -> Build:
    """The build with the circuit the command judges it on."""
    return dataclasses.replace(build, mains=resolve_mains(flag, build.mains))
