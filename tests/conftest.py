"""Shared test set-up: no test touches the user's real data or cache directory or config file,
hypothesis runs without wall-clock deadlines (CI machines are small and shared), and a test
that judges CPU or wall time (marked `serial`) skips, saying why, when other processes keep the
machine busy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("dlrig", deadline=None, derandomize=True)
settings.load_profile("dlrig")


@pytest.fixture(autouse=True)
def isolated_dlrig_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Point DLRIG_HOME (the history database's folder) and DLRIG_CACHE (the validated
    catalog's cache) at fresh temporary directories, and DLRIG_CONFIG at a file that does not
    exist. They sit beside the test's own tmp_path, not in it: a test that checks what a
    command left in its folder must not find the catalog cache the first catalog load of its
    process writes."""
    env = tmp_path_factory.mktemp("dlrig-env")
    home = env / "dlrig-home"
    monkeypatch.setenv("DLRIG_HOME", str(home))
    monkeypatch.setenv("DLRIG_CACHE", str(env / "dlrig-cache"))
    # Nor the user's config file (commands/config.py): no test reads a circuit set there.
    monkeypatch.setenv("DLRIG_CONFIG", str(env / "no-config.toml"))
    yield home


# Busier than this (the share of all CPUs that other processes used over a short look), a
# verdict drawn from CPU time or wall time (a job is CPU-bound, a loader keeps up) says more
# about the neighbours than about the code under test.
BUSY_SHARE = 0.25
LOOK_S = 0.5


@pytest.fixture(autouse=True)
def judged_on_a_quiet_machine(request: pytest.FixtureRequest) -> None:
    """Skip a `serial` test while other processes load the machine (issue 39: `make test`
    failed once on a loaded machine), naming how busy it was."""
    if request.node.get_closest_marker("serial") is None:
        return
    import psutil

    busy = psutil.cpu_percent(interval=LOOK_S) / 100.0  # this process sleeps meanwhile
    if busy > BUSY_SHARE:
        pytest.skip(
            f"other processes kept {busy:.0%} of the CPUs busy over {LOOK_S:g} s (more than "
            f"{BUSY_SHARE:.0%}): this test judges CPU and wall time, which they would decide"
        )
