"""Thresholds shared by the I/O side and the diagnosis (stdlib only, imports nothing).

A number lives here when a collector and a culprit must agree on it: the host
report flags what the engine would call a culprit, without the host layer
importing the diagnosis.
"""

from __future__ import annotations

MIN_RATE_BYTES = 10 * 1460 * (1 + 2 + 4)
"""Fewest pack bytes a push must move for its duration to be a rate: what TCP's slow start
sends in its first three round trips from the initial window of 10 segments (RFC 6928).
Below it the push time is round trips and set-up, not transfer (255-433 B packs of tiny,
shallow or submodule-only repositories were once called healthy at "1.4 kB/s")."""
MIN_RATE_SIZE = "1MiB"
"""The ``--size`` to suggest for a push under :data:`MIN_RATE_BYTES` (several times it)."""

SMALL_BACKLOG = 16
"""A listen backlog at or below this overflows under ordinary bursts."""
