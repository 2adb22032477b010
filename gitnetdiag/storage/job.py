"""The reference fio job (pure); :mod:`gitnetdiag.vocabulary` reads ``--size`` / ``--runtime``.

The job is the one hosting operators quote figures for: random 4 KiB I/O, 75%
reads, queue depth 64, libaio, O_DIRECT, on one test file.
"""

from __future__ import annotations

from dataclasses import dataclass

BLOCK_BYTES = 4096
"""I/O size of the reference job."""
READ_MIX_PERCENT = 75
"""Share of reads in the mixed random job."""
IODEPTH = 64
"""Outstanding I/Os."""
JOB_NAME = "gitnetdiag-storage"
"""fio job name (shows in fio's output)."""


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
