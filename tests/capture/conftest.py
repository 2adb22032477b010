"""Fixtures of the capture tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=[False, True], ids=["one-process", "forked"])
def parallel(request: pytest.FixtureRequest) -> bool:
    """Read in this process, or in a forked child (the path large files take)."""
    value = request.param
    assert isinstance(value, bool)
    return value
