"""The one unit convention of every report: numbers in, text out.

Sizes and rates are decimal and in bytes, the way git and storage tools count
what a push moves: ``65535 B`` (exact below 100 kB), ``1.6 MB``; ``1.31 MB/s``,
``614.4 kB/s``. Durations are ``50 ms`` below a second, ``3.4 s`` above;
shares are percentages (``83%``, two decimals below 10%: ``0.50%``).
docs/report-schema.md documents the same convention for readers of the JSON,
which carries the raw numbers with their :data:`~gitnetdiag.diagnosis.model.Unit`.

The scalar formatters live in :mod:`gitnetdiag.diagnosis.units` because the
diagnosis writes its one-sentence summaries with them and may not import
renderers; every renderer imports them from here.
"""

from __future__ import annotations

from gitnetdiag.diagnosis.model import Unit
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s, fmt_share

__all__ = [
    "fmt_bytes",
    "fmt_quantity",
    "fmt_rate",
    "fmt_s",
    "fmt_share",
]


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


def fmt_quantity(value: float | None, unit: Unit | None) -> str:
    """A number in its unit, by the report convention; ``-`` when unknown."""
    if value is None:
        return "-"
    if unit == "B":
        return fmt_bytes(value)
    if unit == "B/s":
        return fmt_rate(value)
    if unit == "s":
        return fmt_s(value)
    if unit == "ratio":
        return fmt_share(value)
    if unit == "IOPS":
        return f"{value:.0f} IOPS"
    return _count(value)
