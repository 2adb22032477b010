"""What a window caps: bytes per round trip, the rate at a few RTTs, and the RTT where it hurts.

The rule of thumb: rate <= window / RTT. A window is compared with a
reference path (:data:`REFERENCE_RATE_BITS_PER_S`); it "starts to hurt" at the RTT
where window / RTT drops below that rate.
"""

from __future__ import annotations

REFERENCE_RATE_BITS_PER_S = 100e6
"""Path rate (bits/s) a window is held against: an ordinary office or data-centre uplink."""
REFERENCE_RTT_S = 0.1
"""RTT of a distant client (another continent); a window below the BDP at it is flagged."""
FLAG_BELOW_BYTES = int(REFERENCE_RATE_BITS_PER_S / 8 * REFERENCE_RTT_S)
"""Windows smaller than this (1.25 MB, the BDP of 100 Mbit/s x 100 ms) are flagged."""


def rate_bits_per_s(window_bytes: int, rtt_s: float) -> float:
    """The most ``window_bytes`` per round trip can carry at ``rtt_s``, bits per second."""
    return window_bytes * 8 / rtt_s


def hurts_from_rtt_s(window_bytes: int) -> float:
    """RTT from which ``window_bytes`` per round trip falls below
    :data:`REFERENCE_RATE_BITS_PER_S`."""
    return window_bytes * 8 / REFERENCE_RATE_BITS_PER_S


def _mbit(bits_per_s: float) -> str:
    return f"{bits_per_s / 1e6:.1f} Mbit/s"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def window_effect(window_bytes: int, what: str) -> str:
    """One sentence: ``caps <what> at N B per round trip: X Mbit/s at 100 ms RTT ...``."""
    return (
        f"caps {what} at {window_bytes} B per round trip: "
        f"{window_bytes} B/RTT = {_mbit(rate_bits_per_s(window_bytes, 0.1))} at 100 ms, "
        f"{_mbit(rate_bits_per_s(window_bytes, 0.05))} at 50 ms, "
        f"{_mbit(rate_bits_per_s(window_bytes, 0.02))} at 20 ms; "
        f"slower than a {_mbit(REFERENCE_RATE_BITS_PER_S)} path from "
        f"{_ms(hurts_from_rtt_s(window_bytes))} RTT on"
    )
