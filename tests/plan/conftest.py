"""Fixtures for the planner's tests; the fakes themselves live in plan_fakes.py."""

from __future__ import annotations

import pytest
from plan_fakes import fake_catalog

from dlrig.catalog.loader import Catalog


@pytest.fixture
def catalog() -> Catalog:
    return fake_catalog()
