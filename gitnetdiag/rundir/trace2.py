"""git's trace2 event files (``GIT_TRACE2_EVENT``, ``<stem>.trace2.json``) read into events:
one JSON object per line, for git and every process it starts, told apart by ``sid``.

Both directions' phases come from them (:mod:`gitnetdiag.analysis.trace2`): a clone's at
the receiving client, a push's at the sending client (:func:`push_phases`, here because
the probe also reads them as it records a push, for git's own duration, and keeps them
in the manifest: what a run directory without its trace2 files still has). A push's
phases come from a few of the events:

- ``ref_advertisement_s``: start of ``git push`` to the end of its
  ``transport_push/get_refs_list`` region (connect, TLS/SSH, auth, refs);
- ``pack_prepare_s``: pack-objects' ``enumerate-objects`` + ``prepare-pack``;
- ``pack_write_s``: pack-objects' ``write-pack-file``: the pack streamed into
  the transport (socket for ssh/git, the remote helper's POST for HTTP), so
  for a large push this is the upload time;
- ``server_wait_s``: pack-objects' exit to the end of the process that ran
  it (the ``push_refs`` region of git push, or send-pack's exit over HTTP):
  the wait for the server's status report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from gitnetdiag.rundir.records import Trace2Record


def json_objects(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The JSON objects among ``lines`` (a JSON-lines file); cut-off, blank and junk lines
    are skipped."""
    rows: list[dict[str, Any]] = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def trace2_events(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The JSON events of a trace2 file; cut-off, blank and junk lines are skipped."""
    return [event for event in json_objects(lines) if isinstance(event.get("sid"), str)]


def event_time_s(event: dict[str, Any]) -> float | None:
    """An event's ``time`` (UTC, ISO 8601) in epoch seconds; None when absent or malformed."""
    stamp = event.get("time")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def push_phases(lines: Iterable[str]) -> Trace2Record:
    """Phases of a push from trace2 event lines; tolerant of cut-off and junk lines."""
    events = trace2_events(lines)
    root_sid = min((e["sid"] for e in events), key=len, default=None)
    root_start = next((event_time_s(e) for e in events if e["sid"] == root_sid), None)
    total_s: float | None = None
    exit_code: int | None = None
    ref_adv_s: float | None = None
    for event in events:
        if event["sid"] != root_sid:
            continue
        if event["event"] == "exit":
            exit_code = int(event.get("code", -1))
            total_s = float(event["t_abs"]) if "t_abs" in event else None
        if (
            event["event"] == "region_leave"
            and event.get("label") == "get_refs_list"
            and ref_adv_s is None
        ):
            leave = event_time_s(event)
            if leave is not None and root_start is not None:
                ref_adv_s = leave - root_start

    pack_sids = [
        e["sid"] for e in events if e["event"] == "cmd_name" and e.get("name") == "pack-objects"
    ]
    pack_prepare_s: float | None = None
    pack_write_s: float | None = None
    server_wait_s: float | None = None
    objects_written: int | None = None
    if pack_sids:
        pack_sid = pack_sids[-1]
        prepare = 0.0
        for event in events:
            if event["sid"] != pack_sid:
                continue
            label = event.get("label")
            if event["event"] == "region_leave" and label in ("enumerate-objects", "prepare-pack"):
                prepare += float(event.get("t_rel", 0.0))
            elif event["event"] == "region_leave" and label == "write-pack-file":
                pack_write_s = float(event.get("t_rel", 0.0))
            elif event["event"] == "data" and event.get("key") == "write_pack_file/wrote":
                objects_written = int(event.get("value", 0))
        pack_prepare_s = prepare
        server_wait_s = _server_wait_s(events, pack_sid)
    return Trace2Record(
        total_s=total_s,
        ref_advertisement_s=ref_adv_s,
        pack_prepare_s=pack_prepare_s,
        pack_write_s=pack_write_s,
        server_wait_s=server_wait_s,
        objects_written=objects_written,
        exit_code=exit_code,
        events=len(events),
    )


def _server_wait_s(events: list[dict[str, Any]], pack_sid: str) -> float | None:
    if "/" not in pack_sid:  # no parent process
        return None
    parent = pack_sid.rsplit("/", 1)[0]
    pack_exit: float | None = None
    for event in events:
        if event["sid"] != parent:
            continue
        if event["event"] == "child_exit" and pack_exit is None:
            # The parent's first child_exit after pack-objects started is pack-objects'.
            pack_exit = event_time_s(event)
        elif pack_exit is not None and (
            (event["event"] == "region_leave" and event.get("label") == "push_refs")
            or event["event"] == "exit"
        ):
            end = event_time_s(event)
            return None if end is None else max(0.0, end - pack_exit)
    return None
