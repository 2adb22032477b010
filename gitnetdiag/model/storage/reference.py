"""Reference points for the reference job and the verdict on a check (pure).

The figures are the ones hosting operators quote for this exact job (random
4 KiB, 75% reads, iodepth 64, O_DIRECT). In a mixed job the write rate is tied
to the read rate (about a third of it), so the lower of the two figures is the
write figure, and that is what the slow threshold is compared with, the same
rule the diagnosis engine's ``slow-storage`` culprit applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gitnetdiag.model.storage.records import StorageCheck

NETWORKED_SSD_READ_IOPS = 33_000.0
"""A networked SSD volume, reads on the reference job."""
NETWORKED_SSD_WRITE_IOPS = 11_000.0
"""A networked SSD volume, writes on the reference job."""
SPINNING_DISK_READ_IOPS = 2_000.0
"""A spinning disk, reads on the reference job."""
SPINNING_DISK_WRITE_IOPS = 700.0
"""A spinning disk, writes on the reference job."""
SLOW_IOPS = 1_000.0
"""Below this (lower of read and write IOPS) storage is slow: spinning-disk class.

A spinning disk (~2,000 / 700) is below it, a networked SSD (~33,000 / 11,000)
an order of magnitude above it. It is passed to the engine as ``reference_iops``.
"""
SMALL_FILES_SLOW_S = 10.0
"""The 1,000-file test (write + read) should finish well under this."""
SMALL_FILES_SLUGGISH_S = 2.0
"""Above this the 1,000-file test is not "well under" 10 s any more."""

Grade = Literal["fast", "adequate", "slow", "unknown"]
"""``fast`` at or above the networked-SSD reference, ``adequate`` between the slow
threshold and that, ``slow`` below :data:`SLOW_IOPS` or a small-file test of 10 s
or more, ``unknown`` nothing measured."""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What the figures mean."""

    grade: Grade
    """Overall grade."""
    reasons: tuple[str, ...]
    """One short clause per figure that decided the grade."""
    comparable: bool
    """Whether the fio figures are comparable with the references (direct I/O)."""

    def line(self) -> str:
        """``verdict: SLOW - ...`` for the terminal and reports."""
        text = f"verdict: {self.grade.upper()}"
        if self.reasons:
            text += " - " + "; ".join(self.reasons)
        return text


def fio_grade(read_iops: float, write_iops: float) -> Grade:
    """Grade of a pair of IOPS figures on the reference job."""
    if min(read_iops, write_iops) < SLOW_IOPS:
        return "slow"
    if read_iops >= NETWORKED_SSD_READ_IOPS and write_iops >= NETWORKED_SSD_WRITE_IOPS:
        return "fast"
    return "adequate"


def small_files_grade(total_s: float) -> Grade:
    """Grade of the 1,000-file test time."""
    if total_s >= SMALL_FILES_SLOW_S:
        return "slow"
    if total_s >= SMALL_FILES_SLUGGISH_S:
        return "adequate"
    return "fast"


_ORDER: dict[Grade, int] = {"unknown": 0, "fast": 1, "adequate": 2, "slow": 3}


def verdict(check: StorageCheck) -> Verdict:
    """The worst grade over what was measured, with the reasons."""
    grades: list[Grade] = []
    reasons: list[str] = []
    comparable = True
    if check.fio is not None:
        r, w = check.fio.read.iops, check.fio.write.iops
        grade = fio_grade(r, w)
        grades.append(grade)
        where = {
            "slow": f"below the slow threshold of {SLOW_IOPS:,.0f} (spinning-disk class)",
            "adequate": (
                f"above the slow threshold of {SLOW_IOPS:,.0f} but below a networked SSD "
                f"({NETWORKED_SSD_READ_IOPS:,.0f} / {NETWORKED_SSD_WRITE_IOPS:,.0f})"
            ),
            "fast": (
                f"at or above a networked SSD ({NETWORKED_SSD_READ_IOPS:,.0f} / "
                f"{NETWORKED_SSD_WRITE_IOPS:,.0f})"
            ),
        }[grade]
        reasons.append(f"{r:,.0f} read / {w:,.0f} write IOPS, {where}")
        if not check.fio.direct:
            comparable = False
            reasons.append("buffered I/O: the page cache inflates these figures")
    if check.small_files is not None:
        sf = check.small_files
        grades.append(small_files_grade(sf.total_s))
        reasons.append(
            f"{sf.files:,} small files written and read in {sf.total_s:.2f} s "
            f"(should be well under {SMALL_FILES_SLOW_S:.0f} s)"
        )
    overall: Grade = max(grades, key=_ORDER.__getitem__) if grades else "unknown"
    return Verdict(grade=overall, reasons=tuple(reasons), comparable=comparable)
