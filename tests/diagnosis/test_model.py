"""The diagnosis types: evidence numbers always come with their unit."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.model import Evidence


def test_a_number_without_its_unit_is_refused() -> None:
    with pytest.raises(ValueError, match="needs its unit"):
        Evidence(what="window", value=65535)


def test_a_fact_that_is_not_a_number_needs_no_unit() -> None:
    assert Evidence(what="configured MaxStartups", text="10:30:100").unit is None
