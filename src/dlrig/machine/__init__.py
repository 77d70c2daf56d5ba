"""A machine as parts: the build file's schema, its loader, and the resolved `Build`."""

from dlrig.machine.loader import load_build, resolve_build
from dlrig.machine.model import Build, GPUGroup, MemoryConfig, Network, Prices

__all__ = ["Build", "GPUGroup", "MemoryConfig", "Network", "Prices", "load_build", "resolve_build"]
