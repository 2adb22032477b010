"""Human formatting of bytes, rates and durations: the report convention.

Decimal bytes and bytes per second everywhere (docs/report-schema.md). The
diagnosis writes its summary sentences with these; renderers import them
through :mod:`gitnetdiag.report.units`.
"""

from __future__ import annotations


def fmt_bytes(n: float | None) -> str:
    """``65535 B``, ``1.6 MB``, ``24.0 MB`` (decimal units; small values exact)."""
    if n is None:
        return "-"
    if abs(n) < 100_000:
        return f"{round(n)} B"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{round(n)} B"  # pragma: no cover - unreachable, kept for mypy


def fmt_rate(bytes_per_s: float | None) -> str:
    """A byte rate as ``1.31 MB/s``."""
    if bytes_per_s is None:
        return "-"
    if bytes_per_s >= 1e6:
        return f"{bytes_per_s / 1e6:.2f} MB/s"
    return f"{bytes_per_s / 1e3:.1f} kB/s"


def fmt_s(seconds: float | None) -> str:
    """``50 ms`` below a second, ``3.4 s`` above."""
    if seconds is None:
        return "-"
    if abs(seconds) < 1.0:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s"


def fmt_share(share: float | None) -> str:
    """A fraction as ``83%``; below 10% with two decimals (``0.50%``), where loss rates live."""
    if share is None:
        return "-"
    if 0 < abs(share) < 0.1:
        return f"{share * 100:.2f}%"
    return f"{share * 100:.0f}%"
