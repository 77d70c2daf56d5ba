"""The report tests' shared build file: one H100 SXM5 (serving_cli.ONE_H100)."""

from __future__ import annotations

from pathlib import Path

import pytest
from serving_cli import ONE_H100


@pytest.fixture
def h100(tmp_path: Path) -> Path:
    path = tmp_path / "h100.yaml"
    path.write_text(ONE_H100)
    return path
