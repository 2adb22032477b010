"""The one unit convention of every renderer (terminal, Markdown, HTML, plots).

- Network rates in the decimal bit/s family (``12.3 Mbit/s``): what link
  speeds, shapers and bandwidth-delay products are quoted in.
- Sizes in bytes with binary prefixes (``24.0 MiB``): what windows, buffers
  and ``--size`` are set in. Small values stay exact (``65535 B``) because a
  window of 65535 bytes is itself evidence (no window scaling).
- Durations in ``ms`` below a second, ``s`` above.

Data types carry plain numbers (``rate_bps``, ``window_bytes``, ``rtt_s``);
only renderers call these.
"""

from __future__ import annotations

EXACT_BYTES_BELOW = 100 * 1024
"""Sizes below this are shown to the byte."""


def fmt_bytes(n: float | None) -> str:
    """``65535 B``, ``1.6 MiB``, ``24.0 MiB`` (binary prefixes; small values exact)."""
    if n is None:
        return "-"
    if abs(n) < EXACT_BYTES_BELOW:
        return f"{round(n)} B"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 2**10:.1f} KiB"


def fmt_rate_bps(bits_per_s: float | None) -> str:
    """A network rate as ``10.5 Mbit/s`` (decimal prefixes)."""
    if bits_per_s is None:
        return "-"
    if bits_per_s >= 1e9:
        return f"{bits_per_s / 1e9:.2f} Gbit/s"
    if bits_per_s >= 1e6:
        return f"{bits_per_s / 1e6:.1f} Mbit/s"
    return f"{bits_per_s / 1e3:.0f} kbit/s"


def mbit_per_s(bits_per_s: float | None) -> str:
    """A rate as a bare number of Mbit/s (``10.52``) for tables whose header names the unit."""
    return "-" if bits_per_s is None else f"{bits_per_s / 1e6:.2f}"


def fmt_s(seconds: float | None) -> str:
    """``50 ms`` below a second, ``3.4 s`` above."""
    if seconds is None:
        return "-"
    if abs(seconds) < 1.0:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s"


def fmt_ratio(share: float | None) -> str:
    """A fraction as ``83%``."""
    if share is None:
        return "-"
    return f"{share * 100:.0f}%"
