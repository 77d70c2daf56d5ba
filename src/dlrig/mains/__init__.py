"""The mains supply a build is plugged into: circuits, the load each carries for hours, and how
a build names them (`us-15a`, `2x-us-15a`, `eu-16a`, ...). Facts only; the power rules judge a
build's draw at the wall against them."""

from dlrig.mains.circuits import (
    DEFAULT_CIRCUIT,
    Circuit,
    Mains,
    circuit_names,
    default_mains,
    find_mains,
    load_circuits,
)

__all__ = [
    "DEFAULT_CIRCUIT",
    "Circuit",
    "Mains",
    "circuit_names",
    "default_mains",
    "find_mains",
    "load_circuits",
]
