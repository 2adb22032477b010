"""A hung git HTTP/2 push whose client stopped with credit left, derived from the HTTP/2
frames the probe kept after decrypting its capture (:mod:`gitnetdiag.probe.h2stop`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gitnetdiag.analysis.h2ledger import (
    client_stopped_with_credit,
    h2_ledgers_from_rows,
    parse_tshark_fields,
)
from gitnetdiag.diagnosis import observations as obs
from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.inputfile import MAX_JSON_BYTES, read_text_input
from gitnetdiag.pipeline._noted import Noted
from gitnetdiag.rundir.records import PushRecord

ARTIFACT = "http2_frames"
"""The probe's artifact kind for the frames file."""


def h2_client_stall(run_dir: Path,
                    records: Sequence[PushRecord]) -> Noted[obs.H2ClientStall | None]:
    """The first push whose HTTP/2 frames show the client stopping with credit left."""
    notes: list[str] = []
    for record in records:
        name = record.artifacts.get(ARTIFACT)
        if not name:
            continue
        try:
            text = read_text_input(run_dir / name, max_bytes=MAX_JSON_BYTES)
            ledgers = h2_ledgers_from_rows(parse_tshark_fields(text))
        except OSError as exc:
            notes.append(f"{name}: not read ({exc.__class__.__name__})")
            continue
        except GitnetdiagError as exc:
            notes.append(f"{name}: not read ({exc.message})")
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
