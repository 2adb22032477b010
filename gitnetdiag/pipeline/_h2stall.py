"""A hung git HTTP/2 push whose client stopped with credit left, derived from the HTTP/2
frames the probe kept after decrypting its capture, and a failed one whose client sent a
pack that fails its own trailer, from the probe's check of it (:mod:`gitnetdiag.probe.h2stop`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from gitnetdiag.analysis.h2ledger import (
    client_stopped_with_credit,
    h2_ledgers_from_rows,
    parse_tshark_fields,
)
from gitnetdiag.analysis.packbody import PACK_CHECK_SCHEMA
from gitnetdiag.diagnosis import observations as obs
from gitnetdiag.errors import GitnetdiagError, InputError
from gitnetdiag.inputfile import MAX_JSON_BYTES, read_text_input
from gitnetdiag.pipeline._noted import Noted
from gitnetdiag.rundir.records import PushRecord

ARTIFACT = "http2_frames"
"""The probe's artifact kind for the frames file."""
PACK_ARTIFACT = "pack_check"
"""The probe's artifact kind for its check of the packs a push's capture carried."""
T = TypeVar("T")


def h2_client_stall(run_dir: Path,
                    records: Sequence[PushRecord]) -> Noted[obs.H2ClientStall | None]:
    """The first push whose HTTP/2 frames show the client stopping with credit left."""
    notes: list[str] = []
    for record in records:
        name = record.artifacts.get(ARTIFACT)
        if not name:
            continue
        read = _read(run_dir, name, lambda text: h2_ledgers_from_rows(parse_tshark_fields(text)))
        notes += read.notes
        ledgers = read.value
        if ledgers is None:
            continue
        for ledger in sorted(ledgers, key=lambda g: -g.data_bytes_to_server):
            stop = client_stopped_with_credit(ledger)
            if stop is None:
                continue
            idle = record.wall_s - stop.last_data_s if stop.last_data_s is not None else None
            return Noted(notes=tuple(notes), value=obs.H2ClientStall(
                source=f"{name} stream {stop.stream_id}, frames "
                f"{ledger.first_frame}-{ledger.last_frame} (decrypted)",
                push=record.repeat, stream_id=stop.stream_id, sent_bytes=stop.sent_bytes,
                stream_credit_left_bytes=stop.stream_credit_left_bytes,
                connection_credit_left_bytes=stop.connection_credit_left_bytes,
                idle_s=max(0.0, idle) if idle is not None else None))
    return Noted(value=None, notes=tuple(notes))


def h2_spoiled_bodies(run_dir: Path, records: Sequence[PushRecord]
                      ) -> Noted[tuple[obs.H2SpoiledBody, ...]]:
    """Every failed push whose client sent a whole pack that fails its own SHA-1 trailer."""
    notes: list[str] = []
    found: list[obs.H2SpoiledBody] = []
    for record in records:
        name = record.artifacts.get(PACK_ARTIFACT)
        if not name:
            continue
        loaded = _read(run_dir, name, _pack_streams)
        notes += loaded.notes
        streams = loaded.value
        if streams is None:
            continue
        for stream in streams:
            body, pack, objects = (stream.get(key) for key in ("body_bytes", "pack_bytes",
                                                               "objects"))
            if stream.get("trailer_ok") is False and isinstance(pack, int):
                found.append(obs.H2SpoiledBody(
                    source=f"{name} stream {stream.get('stream_id')} (decrypted capture)",
                    push=record.repeat, body_bytes=body if isinstance(body, int) else pack,
                    pack_bytes=pack, objects=objects if isinstance(objects, int) else None,
                    built_pack_bytes=record.pack_bytes or None))
                break
    return Noted(value=tuple(found), notes=tuple(notes))


def _pack_streams(text: str) -> list[dict[str, object]]:
    """The checks of a ``pack_check`` file; an InputError when it is not one."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"not JSON ({exc})", hint="the probe writes this file") from exc
    streams = data.get("streams") if isinstance(data, dict) else None
    if (not isinstance(data, dict) or data.get("schema") != PACK_CHECK_SCHEMA
            or not isinstance(streams, list)):
        raise InputError(f"not a {PACK_CHECK_SCHEMA} file", hint="the probe writes this file")
    return [s for s in streams if isinstance(s, dict)]


def _read(run_dir: Path, name: str, parse: Callable[[str], T]) -> Noted[T | None]:
    """``parse`` of the run directory's file ``name``; None, with a note, when it is
    unreadable or not what ``parse`` expects."""
    try:
        return Noted(value=parse(read_text_input(run_dir / name, max_bytes=MAX_JSON_BYTES)))
    except OSError as exc:
        return Noted(value=None, notes=(f"{name}: not read ({exc.__class__.__name__})",))
    except GitnetdiagError as exc:
        return Noted(value=None, notes=(f"{name}: not read ({exc.message})",))
