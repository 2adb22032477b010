"""Reading the figures against the reference points."""

from __future__ import annotations

import pytest

from gitnetdiag.model.storage.reference import (
    NETWORKED_SSD_READ_IOPS,
    NETWORKED_SSD_WRITE_IOPS,
    SPINNING_DISK_READ_IOPS,
    SPINNING_DISK_WRITE_IOPS,
    fio_grade,
    small_files_grade,
    verdict,
)
from tests.storage.fakes import check_from
from tests.storage.helpers import CRAFTED_SLOW, RAMFS_BUFFERED, REAL_DIRECT


def test_reference_points_grade_as_documented() -> None:
    assert fio_grade(NETWORKED_SSD_READ_IOPS, NETWORKED_SSD_WRITE_IOPS) == "fast"
    assert fio_grade(SPINNING_DISK_READ_IOPS, SPINNING_DISK_WRITE_IOPS) == "slow"
    assert fio_grade(9_000, 3_000) == "adequate"
    assert fio_grade(3_000, 999) == "slow"


@pytest.mark.parametrize(("seconds", "grade"), [(0.5, "fast"), (3.0, "adequate"),
                                                (10.0, "slow"), (25.0, "slow")])
def test_small_files_grade(seconds: float, grade: str) -> None:
    assert small_files_grade(seconds) == grade


def test_verdict_on_this_machines_disk() -> None:
    v = verdict(check_from(REAL_DIRECT))
    assert v.grade == "fast"
    assert v.comparable
    assert v.line().startswith("verdict: FAST - ")
    assert "networked SSD (33,000 / 11,000)" in v.line()


def test_verdict_on_the_crafted_slow_volume() -> None:
    v = verdict(check_from(CRAFTED_SLOW))
    assert v.grade == "slow"
    assert v.line().startswith(
        "verdict: SLOW - 450 read / 150 write IOPS, below the slow threshold"
    )


def test_slow_small_files_make_fast_iops_slow() -> None:
    v = verdict(check_from(REAL_DIRECT, small_total_s=12.0))
    assert v.grade == "slow"
    assert "12.00 s" in v.line()


def test_buffered_figures_are_flagged() -> None:
    v = verdict(check_from(RAMFS_BUFFERED))
    assert not v.comparable
    assert "buffered I/O" in v.line()


def test_small_files_alone() -> None:
    v = verdict(check_from(REAL_DIRECT, with_fio=False, small_total_s=0.4))
    assert v.grade == "fast"
    assert "IOPS" not in v.line()
