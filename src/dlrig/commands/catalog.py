"""`dlrig catalog KIND`: list the built-in parts (plus a user's --catalog file)."""

from __future__ import annotations

from typing import Annotated

import typer

from dlrig.commands.app import DlrigTyper
from dlrig.commands.inputs import CatalogOption

app = DlrigTyper(
    help="List the parts dlrig knows: gpus, cpus, motherboards, psus, ...", no_args_is_help=True
)

JsonOption = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


def _list(kind: str, catalog_file: str | None, as_json: bool) -> None:
    from dlrig.commands.inputs import user_catalog
    from dlrig.report.catalog import catalog_json, catalog_table
    from dlrig.report.console import print_renderable, print_text

    parts = user_catalog(catalog_file).of(kind)
    if as_json:
        print_text(catalog_json(parts))
    else:
        print_renderable(catalog_table(kind, parts))


def _register(kind: str, help_text: str) -> None:
    def command(catalog: CatalogOption = None, json: JsonOption = False) -> None:
        _list(kind, catalog, json)

    command.__doc__ = help_text
    app.command(kind)(command)


for _kind, _help in [
    ("gpus", "GPUs: memory, bandwidth, tensor TFLOPS, TDP, cooler, price."),
    ("cpus", "CPUs: cores, clocks, PCIe lanes, memory channels, TDP, price."),
    ("motherboards", "Motherboards: socket, memory, x16 slots with lanes and positions."),
    ("psus", "Power supplies: watts, efficiency, PCIe connectors."),
    ("cases", "Cases: max GPU length, expansion slots, radiator mounts."),
    ("storage", "Storage: HDD, SATA SSD, NVMe with read MB/s and capacity."),
    ("memory", "RAM kits: type, size, speed."),
    ("platforms", "Server platforms: GPU count, form, interconnect, power."),
    ("cooling", "Water-loop parts: GPU blocks, radiators, pumps, fittings (priced where dated)."),
]:
    _register(_kind, _help)
