"""Shared test set-up: no test touches the user's real data directory, and hypothesis runs
without wall-clock deadlines (CI machines are small and shared)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("dlrig", deadline=None, derandomize=True)
settings.load_profile("dlrig")


@pytest.fixture(autouse=True)
def isolated_dlrig_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point DLRIG_HOME (the history database's folder) at a fresh temporary directory."""
    home = tmp_path / "dlrig-home"
    monkeypatch.setenv("DLRIG_HOME", str(home))
    yield home
