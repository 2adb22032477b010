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

MAX_GENERATED_BYTES = 4 * 1024**3
"""The largest repository a probe generates (``--size``, ``--fetch-seed``, ``watch``'s
``size``): its pack is held in memory, and a push stops at its time budget long before (at
10 Gbit/s, 10 s move about 12 GB only with ``--complete``)."""

SMALL_BACKLOG = 16
"""A listen backlog at or below this overflows under ordinary bursts."""
