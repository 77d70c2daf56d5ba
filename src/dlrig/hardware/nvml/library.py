"""The real library: pynvml (nvidia-ml-py) as the calls layer, and `open_nvml`. The only module
of dlrig that imports `pynvml`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from dlrig.hardware.nvml.backend import Nvml
from dlrig.hardware.nvml.readings import NvmlCallError

_ARG_CONSTANTS = {
    "GPU": "NVML_TEMPERATURE_GPU",
    "SLOWDOWN": "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN",
    "SHUTDOWN": "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN",
    "V2": "nvmlMemory_v2",  # nvmlDeviceGetMemoryInfo(handle, version): the _v2 structure
    "GRAPHICS": "NVML_CLOCK_GRAPHICS",
    "SM": "NVML_CLOCK_SM",
    "MEM": "NVML_CLOCK_MEM",
    "TX_BYTES": "NVML_PCIE_UTIL_TX_BYTES",
    "RX_BYTES": "NVML_PCIE_UTIL_RX_BYTES",
}


# An event storm (a GPU throwing Xids in a loop) is read at most this many events a call; the
# rest wait in NVML's queue for the next call.
_MAX_EVENTS_PER_WAIT = 256


def _error_kind(exc: BaseException) -> str:
    name = type(exc).__name__
    return name.removeprefix("NVMLError_") if name.startswith("NVMLError_") else name


class PynvmlCalls:
    """The calls layer over the real pynvml module, imported on first use."""

    def __init__(self) -> None:
        self._nvml: Any = None
        self._handles: dict[int, Any] = {}
        self._event_set: Any = None

    def init(self) -> None:
        """Import pynvml and initialise NVML; a missing library or driver is an NvmlCallError."""
        try:
            import pynvml
        except ImportError as exc:  # nvidia-ml-py is a dependency, but may be uninstalled
            raise NvmlCallError("LibraryNotFound", f"nvidia-ml-py not installed: {exc}") from exc
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as exc:
            raise NvmlCallError(_error_kind(exc), f"NVML unavailable: {exc}") from exc
        except OSError as exc:
            raise NvmlCallError("LibraryNotFound", f"NVML unavailable: {exc}") from exc
        self._nvml = pynvml

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except self._nvml.NVMLError as exc:
            raise NvmlCallError(_error_kind(exc), str(exc)) from exc
        except AttributeError as exc:  # an older nvidia-ml-py without this function
            raise NvmlCallError("FunctionNotFound", str(exc)) from exc

    def _function(self, call: str) -> Callable[..., Any]:
        fn = getattr(self._nvml, call, None)
        if fn is None:
            raise NvmlCallError("FunctionNotFound", f"{call} not in this nvidia-ml-py")
        return fn  # type: ignore[no-any-return]

    def system(self, call: str) -> Any:
        """Call a system-level pynvml function by name."""
        return self._call(self._function(call))

    def _handle(self, index: int) -> Any:
        if index not in self._handles:
            self._handles[index] = self._call(self._nvml.nvmlDeviceGetHandleByIndex, index)
        return self._handles[index]

    def _argument(self, text: str) -> Any:
        """One argument of a call key: a short alias (`SM`), an integer (a link), or the name
        of a pynvml constant (`NVML_VOLATILE_ECC`), resolved on the installed pynvml."""
        if text in _ARG_CONSTANTS:
            return getattr(self._nvml, _ARG_CONSTANTS[text])
        if text.lstrip("-").isdigit():
            return int(text)
        if not hasattr(self._nvml, text):
            raise NvmlCallError("FunctionNotFound", f"{text} not in this nvidia-ml-py")
        return getattr(self._nvml, text)

    def device(self, index: int, call: str, arg: str | None = None) -> Any:
        """Call a device function by name on GPU `index`; `arg` is its arguments after the
        handle, comma-separated (`0,NVML_NVLINK_ERROR_DL_REPLAY`), each a constant or a link."""
        handle = self._handle(index)
        fn = self._function(call)
        if arg is None:
            return self._call(fn, handle)
        return self._call(fn, handle, *(self._argument(part) for part in arg.split(",")))

    def events(self, timeout_ms: int) -> list[dict[str, Any]]:
        """The Xid events NVML queued since the first call (which registers every GPU for
        them), waiting up to `timeout_ms` for the first: `[{"gpu", "eventType",
        "eventData"}]`. NVML delivers only events that happen after the registration."""
        nvml = self._nvml
        if self._event_set is None:
            self._event_set = self._call(nvml.nvmlEventSetCreate)
            for index in range(int(self._call(nvml.nvmlDeviceGetCount))):
                # A GPU without Xid events (a GeForce under an old driver) is left out.
                with contextlib.suppress(NvmlCallError):
                    handle = self._handle(index)
                    self._call(
                        nvml.nvmlDeviceRegisterEvents,
                        handle,
                        nvml.nvmlEventTypeXidCriticalError,
                        self._event_set,
                    )
        found: list[dict[str, Any]] = []
        wait_ms = timeout_ms
        while len(found) < _MAX_EVENTS_PER_WAIT:
            try:
                data = self._call(nvml.nvmlEventSetWait_v2, self._event_set, wait_ms)
            except NvmlCallError as exc:
                if exc.kind == "Timeout":
                    break
                raise
            found.append(
                {
                    "gpu": self._index_of(data.device),
                    "eventType": int(data.eventType),
                    "eventData": int(data.eventData),
                }
            )
            wait_ms = 0  # what else is queued, without waiting again
        return found

    def _index_of(self, handle: Any) -> int | None:
        try:
            return int(self._call(self._nvml.nvmlDeviceGetIndex, handle))
        except NvmlCallError:
            return None

    def pair(self, a: int, b: int, call: str) -> Any:
        """Call a two-device function by name."""
        return self._call(self._function(call), self._handle(a), self._handle(b))

    def begin_sample(self) -> None:
        """Nothing to do: the real library always answers with the present."""

    def shutdown(self) -> None:
        """nvmlShutdown, when nvmlInit succeeded."""
        if self._nvml is not None:
            if self._event_set is not None:
                with contextlib.suppress(self._nvml.NVMLError):
                    self._nvml.nvmlEventSetFree(self._event_set)
                self._event_set = None
            # Shutting down a library that is already gone is not worth reporting.
            with contextlib.suppress(self._nvml.NVMLError):
                self._nvml.nvmlShutdown()
            self._nvml = None
            self._handles = {}


def open_nvml() -> Nvml:
    """The real NVML backend; unavailability shows in `system()`, never as an exception."""
    return Nvml(PynvmlCalls())
