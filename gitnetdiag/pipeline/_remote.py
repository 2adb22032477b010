"""The checkout's remote a run was started from, read back from its options. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gitnetdiag.hops import FirstHop
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
    hops = tuple(_timed(run.first_hop, record) for run in record.protocols
                 if run.first_hop is not None)
    return {"first_hops": hops} if hops else {}


def _timed(hop: FirstHop, record: RunRecord) -> FirstHop:
    """The hop with its leg's connect RTT from the run's path check of it, when one was made."""
    leg = next((p for p in record.paths if hop.protocol in p.first_hop_of), None)
    if leg is None:
        return hop
    return replace(hop, leg_endpoint=leg.endpoint, leg_rtt_s=leg.connect_rtt_min_s)
