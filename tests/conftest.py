"""Shared test set-up: no test touches the user's real data directory or config file, and
hypothesis runs without wall-clock deadlines (CI machines are small and shared)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("dlrig", deadline=None, derandomize=True)
settings.load_profile("dlrig")


@pytest.fixture(autouse=True)
def isolated_dlrig_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point DLRIG_HOME (the history database's folder) at a fresh temporary directory, and
    DLRIG_CONFIG at a file that does not exist."""
    home = tmp_path / "dlrig-home"
    monkeypatch.setenv("DLRIG_HOME", str(home))
    # Nor the user's config file (commands/config.py): no test reads a circuit set there.
    monkeypatch.setenv("DLRIG_CONFIG", str(tmp_path / "no-config.toml"))
    yield home
