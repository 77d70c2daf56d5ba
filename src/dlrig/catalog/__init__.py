"""The parts catalog: GPUs, CPUs, boards, PSUs, cases, storage, RAM kits and server platforms."""

from dlrig.catalog.loader import Catalog, load_catalog

__all__ = ["Catalog", "load_catalog"]
