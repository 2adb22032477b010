"""Results of one storage check: frozen dataclasses with ``to_dict`` for JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

IoMode = Literal["direct", "buffered"]
"""``direct`` O_DIRECT (the reference job), ``buffered`` through the page cache (fallback)."""


@dataclass(frozen=True, kw_only=True)
class FioDirection:
    """fio's figures for one direction (read or write) of the mixed job."""

    iops: float
    """Completed I/Os per second."""
    bandwidth_bytes_per_s: float
    """Bytes per second."""
    io_count: int
    """I/Os completed over the run."""
    latency_p50_s: float | None = None
    """Median completion latency (fio ``clat``), seconds."""
    latency_p99_s: float | None = None
    """99th percentile completion latency, seconds."""
    latency_mean_s: float | None = None
    """Mean total latency (fio ``lat``: submission + completion), seconds."""


@dataclass(frozen=True, kw_only=True)
class FioResult:
    """One fio run of the reference job, parsed from ``--output-format=json``."""

    fio_version: str
    """``fio-3.33``."""
    read: FioDirection
    """Random 4 KiB reads."""
    write: FioDirection
    """Random 4 KiB writes."""
    runtime_s: float
    """Measured run time of the job (fio ``job_runtime``), seconds."""
    direct: bool
    """Whether the job ran with ``direct=1`` (O_DIRECT)."""
    options: dict[str, str] = field(default_factory=dict)
    """fio's ``job options`` as it echoed them (proves what was run)."""


@dataclass(frozen=True, kw_only=True)
class SmallFileResult:
    """Write N small files (fsync each), drop them from the page cache, read them back."""

    files: int
    """How many files."""
    file_bytes: int
    """Size of each file."""
    write_s: float
    """Creating, writing and fsyncing every file, plus the directory fsync."""
    read_s: float
    """Opening and reading every file back (page cache dropped for them first)."""
    cold_read: bool
    """Whether the read-back came from the device (page cache dropped) or may be cached."""

    @property
    def total_s(self) -> float:
        """Write plus read time."""
        return self.write_s + self.read_s


@dataclass(frozen=True, kw_only=True)
class PackReadResult:
    """Timed sequential read of a repository's pack files (a clone's disk phase)."""

    repo: str
    """The repository (its git directory)."""
    packs: int
    """Pack files read."""
    bytes_read: int
    """Bytes read."""
    read_s: float
    """Wall time of the read."""
    cache: str
    """``cold (...)`` with how the cache was dropped, or ``warm``."""

    @property
    def rate_bytes_per_s(self) -> float | None:
        """Bytes per second, ``None`` when nothing measurable was read."""
        return self.bytes_read / self.read_s if self.read_s > 0 and self.bytes_read else None


@dataclass(frozen=True, kw_only=True)
class StorageCheck:
    """Everything ``gitnetdiag storage PATH`` measured."""

    path: str
    """The directory benchmarked (where the scratch directory was created)."""
    filesystem: str = ""
    """Filesystem type under ``path`` (``ext4``, ``tmpfs``, ...), empty when unknown."""
    size_bytes: int
    """fio test file size."""
    runtime_s: float
    """fio run time asked for."""
    io_mode: IoMode | None = None
    """How fio ran; ``None`` when it did not run."""
    fio: FioResult | None = None
    """The fio run, ``None`` when fio is missing."""
    small_files: SmallFileResult | None = None
    """The small-file test."""
    pack_read: PackReadResult | None = None
    """The pack read test (``--repo``)."""
    notes: tuple[str, ...] = ()
    """One-line remarks on fallbacks (no fio, no O_DIRECT, warm cache)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types; derived figures (totals, rates) included."""
        data = asdict(self)
        if self.small_files is not None:
            data["small_files"]["total_s"] = self.small_files.total_s
        if self.pack_read is not None:
            data["pack_read"]["rate_bytes_per_s"] = self.pack_read.rate_bytes_per_s
        return data
