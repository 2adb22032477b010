"""The reference fio job and the parsing of ``--size`` / ``--runtime`` values (pure).

The job is the one hosting operators quote figures for: random 4 KiB I/O, 75%
reads, queue depth 64, libaio, O_DIRECT, on one test file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitnetdiag.errors import UsageError

BLOCK_BYTES = 4096
"""I/O size of the reference job."""
READ_MIX_PERCENT = 75
"""Share of reads in the mixed random job."""
IODEPTH = 64
"""Outstanding I/Os."""
JOB_NAME = "gitnetdiag-storage"
"""fio job name (shows in fio's output)."""

_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_size(text: str) -> int:
    """``1G``, ``64M``, ``512k``, ``65536`` -> bytes (binary units, like fio)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgtKMGT]?)(?:i?[bB])?\s*", text)
    if match is None or float(match.group(1)) <= 0:
        raise UsageError(
            f"cannot read the size '{text}'",
            hint="give a positive size such as 64M or 1G (binary units k, M, G)",
        )
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])


def parse_duration(text: str) -> float:
    """``30s``, ``30``, ``2m``, ``1.5s`` -> seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhSMH]?)\s*", text)
    if match is None or float(match.group(1)) <= 0:
        raise UsageError(
            f"cannot read the duration '{text}'",
            hint="give a positive duration such as 30s, 2s or 1m",
        )
    return float(match.group(1)) * _DURATION_UNITS[match.group(2).lower()]


@dataclass(frozen=True, kw_only=True)
class FioJob:
    """One run of the reference job."""

    filename: str
    """Test file fio creates and uses."""
    size_bytes: int
    """Test file size."""
    runtime_s: float
    """Run time (time based: the job loops over the file until then)."""
    direct: bool = True
    """O_DIRECT; ``False`` for the buffered fallback."""

    def argv(self, fio: str = "fio") -> list[str]:
        """The fio command line."""
        return [
            fio,
            f"--name={JOB_NAME}",
            f"--filename={self.filename}",
            "--rw=randrw",
            f"--rwmixread={READ_MIX_PERCENT}",
            f"--bs={BLOCK_BYTES}",
            f"--iodepth={IODEPTH}",
            "--ioengine=libaio",
            f"--direct={1 if self.direct else 0}",
            f"--size={self.size_bytes}",
            f"--runtime={max(1, round(self.runtime_s))}s",
            "--time_based",
            "--group_reporting",
            # one process: killing fio (timeout, Ctrl-C) then stops its I/O too
            "--thread",
            "--output-format=json",
        ]
