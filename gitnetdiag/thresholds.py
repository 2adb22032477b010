"""Thresholds shared by the I/O side and the diagnosis (stdlib only, imports nothing).

A number lives here when a collector and a culprit must agree on it: the host
report flags what the engine would call a culprit, without the host layer
importing the diagnosis.
"""

from __future__ import annotations

SMALL_BACKLOG = 16
"""A listen backlog at or below this overflows under ordinary bursts."""
