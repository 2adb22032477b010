"""After a hung HTTP/2 push kept with its TLS keys (``probe --full``): decrypt its capture
and keep its HTTP/2 frames, so the pipeline can tell who stopped the upload; after any
failed one, check the pack its request body carried against the pack's own SHA-1 trailer
(:mod:`gitnetdiag.analysis.packbody`), so a body the client's HTTP stack spoiled is not
blamed on the server that refused it.

A push through an edge with a small HTTP/2 window can hang for good with libcurl 7.88.1:
the client stops a few KB short of the request body's end, without END_STREAM, while
the server's stream and connection windows still have room (docs/culprits.md). The
frames tell that apart from a server that withholds credit. Running ``tshark`` belongs
here, on the probe's side; the pipeline derives the ledger from the text written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from gitnetdiag.analysis.packbody import PACK_CHECK_SCHEMA
from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.rundir.records import PushRecord
from gitnetdiag.safefile import replace_file
from gitnetdiag.serial import to_jsonable

STALLED_OUTCOMES = frozenset({"hung", "stalled"})
"""Push outcomes whose capture is worth decrypting."""
TSHARK_TIMEOUT_S = 60.0
"""Bound on decrypting one push's capture."""
ARTIFACT = "http2_frames"
"""Artifact kind of the file written: ``<stem>.http2.tsv``, tshark's fields of every
HTTP/2 frame (:data:`gitnetdiag.analysis.h2ledger.TSHARK_FIELDS`)."""
FAILED_OUTCOMES = frozenset({"failed", "hung", "stalled"})
"""Push outcomes whose request body is worth checking (a bounded push is cut on purpose)."""
PACK_ARTIFACT = "pack_check"
"""Artifact kind of ``<stem>.packcheck.json``: :data:`PACK_CHECK_SCHEMA`, one check per
receive-pack POST of the capture (:class:`gitnetdiag.analysis.packbody.PackCheck`)."""
PACK_CHECK_MAX_CAPTURE_BYTES = 64 * 1024 * 1024
"""Captures above this are not followed for the check: tshark decrypts about 4 MB a second
here (a 3.6 MB capture in 0.8 s, 2026-12-04) and its text of a body is twice the body."""


def with_http2_frames(run_dir: Path, protocol: str, record: PushRecord,
                      warn: Callable[[str], None]) -> PushRecord:
    """``record`` with the ``http2_frames`` artifact when it is a hung HTTP/2 push with a
    capture and its TLS keys; unchanged otherwise (and when tshark cannot read it)."""
    keylog = record.artifacts.get("keylog")
    if (protocol != "h2" or record.outcome not in STALLED_OUTCOMES or record.capture is None
            or not keylog):
        return record
    from gitnetdiag.tools import tshark  # only for a hung push kept with its keys

    try:
        text = tshark.http2_fields(run_dir / record.capture.path, run_dir / keylog,
                                   timeout_s=TSHARK_TIMEOUT_S)
    except GitnetdiagError as exc:
        warn(f"h2 push {record.repeat}: its HTTP/2 frames were not read ({exc.message})")
        return record
    name = Path(record.capture.path).with_suffix(".http2.tsv").name
    replace_file(run_dir / name, text.encode())
    return replace(record, artifacts={**record.artifacts, ARTIFACT: name})


def with_pack_check(run_dir: Path, protocol: str, record: PushRecord,
                    warn: Callable[[str], None]) -> PushRecord:
    """``record`` with the ``pack_check`` artifact when it is a failed HTTP/2 push with a
    capture and its TLS keys; unchanged otherwise (and when tshark cannot read it)."""
    keylog = record.artifacts.get("keylog")
    if (protocol != "h2" or record.outcome not in FAILED_OUTCOMES or record.capture is None
            or not keylog or not (run_dir / keylog).is_file()
            or (run_dir / keylog).stat().st_size == 0):
        return record
    size = (run_dir / record.capture.path).stat().st_size if (
        run_dir / record.capture.path).is_file() else 0
    if size > PACK_CHECK_MAX_CAPTURE_BYTES:
        warn(f"h2 push {record.repeat}: the pack it sent was not checked (its capture's "
             f"{size} B are above the {PACK_CHECK_MAX_CAPTURE_BYTES} B bound; a smaller "
             "--size checks it)")
        return record
    from gitnetdiag.tools import tshark

    try:
        checks = tshark.pack_checks_from_capture(run_dir / record.capture.path,
                                                 run_dir / keylog, timeout_s=TSHARK_TIMEOUT_S)
    except GitnetdiagError as exc:
        warn(f"h2 push {record.repeat}: the pack it sent was not checked ({exc.message})")
        return record
    name = Path(record.capture.path).with_suffix(".packcheck.json").name
    body = {"schema": PACK_CHECK_SCHEMA,
            "streams": [{"tcp_stream": tcp, "stream_id": sid, **to_jsonable(check)}
                        for tcp, sid, check in checks]}
    replace_file(run_dir / name, json.dumps(body, indent=1).encode())
    return replace(record, artifacts={**record.artifacts, PACK_ARTIFACT: name})
