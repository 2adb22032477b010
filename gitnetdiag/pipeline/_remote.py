"""The checkout's remote a run was started from, read back from its options. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitnetdiag.rundir.manifest import RunRecord


def remote_of(options: Mapping[str, object]) -> dict[str, Any]:
    """``remote_name`` and ``remote_notes`` of a run started from a checkout's remote
    (``options.remote``, :mod:`gitnetdiag.probe.gitremote`); nothing for any other run, or
    for a value that is not the shape the probe writes (a damaged manifest keeps its
    diagnosis)."""
    remote = options.get("remote")
    if not isinstance(remote, dict):
        return {}
    name, notes = remote.get("name"), remote.get("notes")
    if not isinstance(name, str) or not isinstance(notes, list) \
            or not all(isinstance(note, str) for note in notes):
        return {}
    return {"remote_name": name, "remote_notes": tuple(notes)}


def first_hops_of(record: RunRecord) -> dict[str, Any]:
    """``first_hops`` of the run's protocols that recorded one (none for older runs)."""
    hops = tuple(run.first_hop for run in record.protocols if run.first_hop is not None)
    return {"first_hops": hops} if hops else {}
