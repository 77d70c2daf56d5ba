"""NVML fakes for tests and for scripts/gpu-check: `ReplayCalls` replays a recorded fixture through
dlrig's real `Nvml` backend, `RecordingCalls` records what a calls layer answers (on a real GPU,
`scripts/gpu-check`) in the same format.

Fixture format (what `scripts/gpu-check` records and the replay reads): a JSON object with
`provenance` (how it was made), `scenario`, `description`, `system` (NVML system call name ->
value), `gpus` (one object per GPU: call key -> value), optional `topology` ("i,j" -> the
`nvmlDeviceGetTopologyCommonAncestor` level) and optional `samples` ([{"t_s", "gpus": [call key ->
value overrides per GPU]}]). A call key is the pynvml function name, followed by `:ARG` when the
call takes an argument (`nvmlDeviceGetClockInfo:SM`, `nvmlDeviceGetTemperatureThreshold:SLOWDOWN`,
`nvmlDeviceGetNvLinkState:0`; `nvmlDeviceGetMemoryInfo:V2` is the call with
`version=nvmlMemory_v2`, whose structure adds `reserved`). A value is what pynvml returns
(structures as objects of their field names, e.g. `{"total", "free", "used"}` in bytes) or
`{"nvml_error": "NotSupported"}` for an NVML error (the pynvml class name without `NVMLError_`).
A key missing from a GPU is replayed as NotSupported, which is what NVML answers for a query
that a device or driver lacks.

A call with several constant arguments has the key `call:ARG1,ARG2`, each ARG the pynvml
constant's name or an integer (`nvmlDeviceGetTotalEccErrors:NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
NVML_VOLATILE_ECC`, `nvmlDeviceGetNvLinkErrorCounter:0,NVML_NVLINK_ERROR_DL_REPLAY`,
`nvmlDeviceGetRetiredPages:NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR`); the real calls
layer resolves each by getattr on pynvml (an integer string by int), as it resolves the short
aliases above. `nvmlDeviceGetRemappedRows` is its 4-tuple as a list (correctable, uncorrectable,
pending, failure).

Health recordings add top-level keys beside the NVML calls: `events` (what NVML event-set waits
returned: a list of `{"gpu", "eventType", "eventData"}`, or `{"nvml_error": "Timeout"}` items;
a sample of a time series may hold its own `events`, delivered while it is replayed),
`kernel_log` (the kernel log's text as read, or a list of its lines) and `sysfs` (file path ->
content as read, e.g. `/sys/bus/pci/devices/0000:1b:00.0/aer_dev_fatal`); `kernel_log_text()`
and `write_sysfs()` hand those to the readers of `dlrig.hardware.kernel_log` and
`dlrig.hardware.sysfs_health`.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dlrig.errors import HardwareError
from dlrig.hardware.nvml import Nvml, NvmlCallError, NvmlCalls
from dlrig.hardware.nvml.backend import LOST_KINDS

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"
_MISSING = object()  # a key the fixture does not hold


def _key(call: str, arg: str | None) -> str:
    return call if arg is None else f"{call}:{arg}"


def _replayed(value: Any) -> Any:
    if isinstance(value, dict) and "nvml_error" in value:
        raise NvmlCallError(
            str(value["nvml_error"]), str(value.get("message", value["nvml_error"]))
        )
    return value


class ReplayCalls:
    """The calls layer replaying a fixture dict (see the module docstring for the format)."""

    def __init__(self, fixture: dict[str, Any]) -> None:
        self.fixture = fixture
        self._system: dict[str, Any] = dict(fixture.get("system", {}))
        self._gpus: list[dict[str, Any]] = [dict(g) for g in fixture.get("gpus", [])]
        self._topology: dict[str, Any] = dict(fixture.get("topology", {}))
        self._samples: list[dict[str, Any]] = list(fixture.get("samples", []))
        self._sample = -1
        self._events_given: set[int] = set()  # -1: the base events; i: sample i's
        self._lock = threading.Lock()  # the backend reads PCIe throughput on threads
        self.counts: Counter[str] = Counter()
        """How often each device call key was asked for (what the tests of the cadence count)."""

    @property
    def sample_index(self) -> int:
        """The sample being replayed (-1 before the first `read_gpus()`)."""
        return self._sample

    @property
    def sample_times_s(self) -> tuple[float, ...]:
        """The `t_s` of each sample of a time series (empty for a single reading)."""
        return tuple(float(s.get("t_s", i)) for i, s in enumerate(self._samples))

    def sample_clock_s(self) -> float:
        """The replayed time series' clock: the current sample's `t_s` (0 before the first, and
        always for a single reading), so the backend's refresh intervals follow the recording."""
        if self._sample < 0 or not self._samples:
            return 0.0
        return float(self._samples[self._sample].get("t_s", self._sample))

    def init(self) -> None:
        """Replay nvmlInit (a fixture of a host without the library fails here)."""
        _replayed(self._system.get("nvmlInit"))

    def system(self, call: str) -> Any:
        """Replay a system call; a missing key is NotSupported."""
        if call not in self._system:
            raise NvmlCallError("NotSupported")
        return _replayed(self._system[call])

    def _overrides(self, index: int) -> dict[str, Any]:
        if self._sample < 0 or not self._samples:
            return {}
        gpus = self._samples[self._sample].get("gpus", [])
        return gpus[index] if index < len(gpus) else {}  # type: ignore[no-any-return]

    def _value(self, index: int, key: str) -> Any:
        """The current sample's value of a key, else the base value; _MISSING when neither."""
        overrides = self._overrides(index)
        if key in overrides:
            return overrides[key]
        return self._gpus[index].get(key, _MISSING)

    def device(self, index: int, call: str, arg: str | None = None) -> Any:
        """Replay a device call: the current sample's value, else the base value."""
        if index >= len(self._gpus):
            raise NvmlCallError("InvalidArgument", f"no GPU {index} in the fixture")
        handle = self._value(index, "nvmlDeviceGetHandleByIndex")
        if handle is not _MISSING:
            _replayed(handle)
        key = _key(call, arg)
        with self._lock:
            self.counts[key] += 1
        value = self._value(index, key)
        if value is _MISSING:
            if call in ("nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkRemotePciInfo"):
                raise NvmlCallError("InvalidArgument", f"no NVLink {arg}")
            raise NvmlCallError("NotSupported")
        return _replayed(value)

    def events(self, timeout_ms: int) -> list[dict[str, Any]]:
        """Replay an event-set wait: the fixture's `events` at the first call, then each
        sample's own `events` once while that sample is replayed (a real set delivers each
        event once)."""
        found: list[dict[str, Any]] = []
        base = self.fixture.get("events")
        if isinstance(base, dict):  # scripts/gpu_health_record.py: {"received": [...], "wait": ...}
            base = base.get("received")
        for where, records in ((-1, base), (self._sample, self._sample_events())):
            if where in self._events_given or not records:
                continue
            self._events_given.add(where)
            found.extend(r for r in records if isinstance(r, dict) and "nvml_error" not in r)
        return found

    def _sample_events(self) -> list[dict[str, Any]] | None:
        if self._sample < 0 or not self._samples:
            return None
        events = self._samples[self._sample].get("events")
        return list(events) if isinstance(events, list) else None

    def pair(self, a: int, b: int, call: str) -> Any:
        """Replay a pair call (only the topology ancestor is recorded)."""
        key = f"{min(a, b)},{max(a, b)}"
        if call != "nvmlDeviceGetTopologyCommonAncestor" or key not in self._topology:
            raise NvmlCallError("NotSupported")
        return _replayed(self._topology[key])

    def begin_sample(self) -> None:
        """Move to the next sample of a time series, staying on the last one."""
        if self._samples:
            self._sample = min(self._sample + 1, len(self._samples) - 1)

    def shutdown(self) -> None:
        """Nothing to release."""


def fixture_dir() -> Path:
    """tests/fixtures/nvml, beside this module's folder."""
    return FIXTURE_DIR


def fixture_path(scenario: str) -> Path:
    """The fixture file of a scenario name (`four_gpu_box`, `lost_gpu`, ...)."""
    path = fixture_dir() / f"{scenario}.json"
    if not path.is_file():
        known = sorted(p.stem for p in fixture_dir().glob("*.json"))
        raise HardwareError(f"no NVML scenario {scenario!r}", hint=f"known: {', '.join(known)}")
    return path


def load_fixture(path: Path) -> dict[str, Any]:
    """Read an NVML fixture file; a malformed one is a HardwareError naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HardwareError(f"cannot read NVML fixture {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("gpus", []), list):
        raise HardwareError(f"NVML fixture {path}: expected an object with a list of gpus")
    return data


def replay_calls(source: str | Path | dict[str, Any]) -> ReplayCalls:
    """The calls layer replaying a fixture: a scenario name, a fixture path, or a fixture dict."""
    if isinstance(source, dict):
        return ReplayCalls(source)
    path = Path(source)
    if not path.suffix:
        path = fixture_path(str(source))
    return ReplayCalls(load_fixture(path))


def replay_nvml(source: str | Path | dict[str, Any], **options: Any) -> Nvml:
    """A backend replaying a fixture (see `replay_calls`); `options` go to `Nvml` (refresh
    intervals, clock; the clock is the recording's own, `sample_clock_s`, unless given)."""
    calls = replay_calls(source)
    options.setdefault("clock", calls.sample_clock_s)
    return Nvml(calls, **options)


def _jsonable(value: Any) -> Any:
    """A pynvml return value as JSON: ctypes structures become objects of their fields."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    fields = getattr(value, "_fields_", None)
    if fields is not None:
        return {name: _jsonable(getattr(value, name)) for name, *_ in fields}
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def _recorded_error(exc: NvmlCallError) -> dict[str, str]:
    return {"nvml_error": exc.kind, "message": exc.message}


class RecordingCalls:
    """A calls layer that passes through to another and writes what it answered as a fixture.

    `scripts/gpu-check` wraps the real library in it; `fixture()` is then replayable by
    `replay_nvml`, because it holds exactly the calls `read_gpu` and `topology` made.
    """

    def __init__(self, inner: NvmlCalls) -> None:
        self._inner = inner
        self._system: dict[str, Any] = {}
        self._gpus: dict[int, dict[str, Any]] = {}
        self._topology: dict[str, Any] = {}
        self._events: list[Any] = []

    def _record(self, table: dict[str, Any], key: str, thunk: Callable[[], Any]) -> Any:
        try:
            value = thunk()
        except NvmlCallError as exc:
            table[key] = _recorded_error(exc)
            raise
        table[key] = _jsonable(value)
        return value

    def init(self) -> None:
        """Record nvmlInit's outcome."""
        self._record(self._system, "nvmlInit", lambda: self._inner.init())

    def system(self, call: str) -> Any:
        """Record a system call."""
        return self._record(self._system, call, lambda: self._inner.system(call))

    def device(self, index: int, call: str, arg: str | None = None) -> Any:
        """Record a device call."""
        table = self._gpus.setdefault(index, {})
        try:
            return self._record(
                table, _key(call, arg), lambda: self._inner.device(index, call, arg)
            )
        except NvmlCallError as exc:
            if exc.kind in LOST_KINDS:
                table["nvmlDeviceGetHandleByIndex"] = _recorded_error(exc)
            raise

    def events(self, timeout_ms: int) -> list[dict[str, Any]]:
        """Record what an event-set wait returned (under the fixture's `events`)."""
        try:
            found = self._inner.events(timeout_ms)
        except NvmlCallError as exc:
            self._events.append(_recorded_error(exc))
            raise
        self._events.extend(_jsonable(found))
        return found

    def pair(self, a: int, b: int, call: str) -> Any:
        """Record a pair call (the topology ancestor)."""
        return self._record(self._topology, f"{a},{b}", lambda: self._inner.pair(a, b, call))

    def begin_sample(self) -> None:
        """Pass through."""
        self._inner.begin_sample()

    def shutdown(self) -> None:
        """Pass through."""
        self._inner.shutdown()

    def fixture(self, scenario: str, provenance: str, description: str) -> dict[str, Any]:
        """What was recorded, in the fixture format (see the module docstring)."""
        return {
            "provenance": provenance,
            "scenario": scenario,
            "description": description,
            "system": dict(self._system),
            "gpus": [dict(self._gpus.get(i, {})) for i in range(max(self._gpus, default=-1) + 1)],
            "topology": dict(self._topology),
            **({"events": list(self._events)} if self._events else {}),
        }


def kernel_log_text(fixture: dict[str, Any]) -> str:
    """A fixture's `kernel_log` as text ("" without one): text, a list of lines, or
    scripts/gpu_health_record.py's `{"source", "nvrm_lines": [...]}`."""
    log = fixture.get("kernel_log") or ""
    if isinstance(log, dict):
        log = log.get("nvrm_lines") or []
    return "\n".join(str(line) for line in log) if isinstance(log, list) else str(log)


def write_sysfs(fixture: dict[str, Any], root: Path) -> Path:
    """Lay a fixture's `sysfs` files out under `root` (the readers' filesystem root); a value
    that is an object `{"link": "../../devices/..."}` becomes a symbolic link (PCI devices in
    /sys/bus/pci/devices are links into /sys/devices)."""
    files = dict(fixture.get("sysfs") or {})
    if isinstance(files.get("aer"), dict):
        files = _recorded_sysfs_files(files)
    for name, content in files.items():
        path = root / str(name).lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, dict) and "link" in content:
            path.symlink_to(str(content["link"]))
        else:
            path.write_text(str(content))
    return root


def _recorded_sysfs_files(sysfs: dict[str, Any]) -> dict[str, Any]:
    """scripts/gpu_health_record.py's `sysfs` ({"aer": {address: {device path: {file: text}}},
    "edac": {mc: {file: text}}, "thermal": {zone: {"type", "temp"}}}) as path -> content, with
    each GPU's /sys/bus/pci/devices link to its device path; unreadable files are left out."""
    files: dict[str, Any] = {}

    def keep(path: str, text: Any) -> None:
        if isinstance(text, str) and not text.startswith("<unreadable"):
            files[path] = text

    for address, chain in (sysfs.get("aer") or {}).items():
        if not isinstance(chain, dict):
            continue
        for node, node_files in chain.items():
            for name, text in (node_files or {}).items():
                keep(f"{node}/{name}", text)
        device = next((n for n in chain if n.endswith(address)), None)
        if device is not None:
            files[f"/sys/bus/pci/devices/{address}"] = {"link": "../../.." + device[len("/sys") :]}
    for mc, mc_files in (
        (sysfs.get("edac") or {}).items() if isinstance(sysfs.get("edac"), dict) else ()
    ):
        for name, text in (mc_files or {}).items():
            keep(f"/sys/devices/system/edac/mc/{mc}/{name}", text)
    for zone, zone_files in (sysfs.get("thermal") or {}).items():
        for name, text in (zone_files or {}).items():
            keep(f"/sys/class/thermal/{zone}/{name}", text)
    return files
