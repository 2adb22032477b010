"""git's trace2 event files (``GIT_TRACE2_EVENT``, ``<stem>.trace2.json``) read into events:
one JSON object per line, for git and every process it starts, told apart by ``sid``.

The probe reads a push's phases from them (:mod:`gitnetdiag.probe.trace2`), the analysis a
clone's (:mod:`gitnetdiag.analysis.trace2`); both read the lines and the times here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any


def trace2_events(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The JSON events of a trace2 file; cut-off, blank and junk lines are skipped."""
    events: list[dict[str, Any]] = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and isinstance(event.get("sid"), str):
            events.append(event)
    return events


def event_time_s(event: dict[str, Any]) -> float | None:
    """An event's ``time`` (UTC, ISO 8601) in epoch seconds; None when absent or malformed."""
    stamp = event.get("time")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
