"""A failed HTTP/2 push whose client sent a pack that is not git's: from the decrypted body
to the ``client-http-stack`` finding, the edge's 502 no longer a pool member's.

Seen in the lab under CPU load (docs/lab.md): git 2.39.5's libcurl 7.88.1 sent the body's
second 65,535 B window twice, Traffic Server forwarded it, the server's git said ``early
EOF`` and the edge answered 502, while the tool's own native POST passed, which alone made
``edge-backend-errors`` rank first.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gitnetdiag.analysis.packbody import (
    check_pack,
    client_body,
    receive_pack_streams,
)
from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import H2SpoiledBody
from gitnetdiag.pipeline._h2stall import h2_spoiled_bodies
from gitnetdiag.rundir.records import PushRecord
from gitnetdiag.tools import tshark
from tests.diagnosis.culprits.test_nobackend import _failed, _redirecting_pool
from tests.h2packs import random_pack

RECORDED = Path(__file__).parent / "analysis" / "data" / "h2_small_window_push.pcapng"
"""A git HTTP/2 push through the lab's 64 KiB edge window, its TLS secrets embedded."""
WINDOW = 65_535
COMMAND = b"0" * 40 + b" " + b"1" * 40 + b" refs/heads/gitnetdiag/probe-x\0 report-status"


def _follow_text(body: bytes, *, end: bool = True, frame_bytes: int = 16_384) -> str:
    """tshark's ``follow,http2,raw`` text of a client sending ``body`` on stream 3: the
    HEADERS frame, the decoded header block (no frame header), the server's indented lines,
    one DATA frame per line (the first padded)."""
    lines = ["", "=" * 67,
             "Follow: http2,raw", "Filter: tcp.stream eq 0 and http2.streamid eq 3",
             (b"\x00\x00\x04\x01\x04\x00\x00\x00\x03" + b"\x83\x86\x84\x41").hex(),
             b"\x83\x86\x84\x41post".hex(), "\t000004010400000003" + "88c0bfbe"]
    chunks = [body[at:at + frame_bytes] for at in range(0, len(body), frame_bytes)]
    for index, chunk in enumerate(chunks):
        flags = 0x1 if end and index == len(chunks) - 1 else 0
        payload = chunk
        if index == 0:
            flags |= 0x8
            payload = bytes([3]) + chunk + b"\0\0\0"
        header = len(payload).to_bytes(3, "big") + bytes([0, flags]) + (3).to_bytes(4, "big")
        lines.append((header + payload).hex())
    return "\n".join([*lines, "=" * 67]) + "\n"


def _body(pack: bytes) -> bytes:
    return b"%04x" % (len(COMMAND) + 4) + COMMAND + b"0000" + pack


def test_the_pack_git_built_passes_and_one_window_sent_twice_does_not(tmp_path: Path) -> None:
    pack = random_pack(tmp_path)
    whole = check_pack(client_body(_follow_text(_body(pack))))
    assert (whole.pack_bytes, whole.objects, whole.ended) == (len(pack), 3, True)
    assert whole.trailer_ok is True and not whole.spoiled
    assert whole.body_bytes == len(_body(pack))
    body = _body(pack)
    twice = body[:2 * WINDOW] + body[WINDOW:2 * WINDOW] + body[2 * WINDOW:]
    spoiled = check_pack(client_body(_follow_text(twice)))
    assert spoiled.spoiled and spoiled.pack_bytes == len(pack) + WINDOW
    cut = check_pack(client_body(_follow_text(body[:200_000], end=False)))
    assert cut.trailer_ok is None and not cut.spoiled, "a body never ended proves nothing"
    no_pack = check_pack(client_body(_follow_text(b"%04x" % (len(COMMAND) + 4) + COMMAND
                                                  + b"0000")))
    assert no_pack.pack_bytes is None and no_pack.trailer_ok is None  # a delete's body


def test_receive_pack_streams_are_read_from_tsharks_fields() -> None:
    text = ("0\t1|3\t1|1\tGET|POST\t/git/lab.git/info/refs|/git/lab.git/git-receive-pack\n"
            "1\t3\t1\tPOST\t/git/lab.git/git-upload-pack\n"
            "bad line\n")
    assert receive_pack_streams(text) == [(0, 3)]


def test_a_recorded_push_through_the_lab_edge_carried_gits_own_pack() -> None:
    """tshark decrypts a real push (the capture's embedded secrets): its pack is whole and
    matches its trailer; the clean-up's delete on the next connection carried no pack."""
    checks = tshark.pack_checks_from_capture(RECORDED, None, timeout_s=60)
    assert [(tcp, stream) for tcp, stream, _ in checks] == [(0, 3), (1, 3)]
    push, delete = checks[0][2], checks[1][2]
    assert push.trailer_ok is True and push.objects == 4 and push.pack_bytes == 100_367
    assert delete.pack_bytes is None and delete.trailer_ok is None


def _record(repeat: int, check: str | None) -> PushRecord:
    return PushRecord(protocol="h2", repeat=repeat, branch="b", started_at="",
                      outcome="failed", failure_kind="http-status", last_line="",
                      wall_s=1.0, pack_bytes=3_000_000, rate_bytes_per_s=None,
                      http_version="HTTP/2", alpn="h2", post_s=None, curl_last_info=None,
                      phases=None, capture=None,
                      artifacts={"pack_check": check} if check else {})


def test_the_pipeline_reads_a_spoiled_pack_and_warns_of_a_broken_file(tmp_path: Path) -> None:
    streams = [{"tcp_stream": 0, "stream_id": 3, "body_bytes": 3_065_645,
                "pack_bytes": 3_065_500, "objects": 9, "ended": True, "trailer_ok": False}]
    (tmp_path / "h2-2.packcheck.json").write_text(json.dumps(
        {"schema": "gitnetdiag.pack-check/1", "streams": streams}))
    (tmp_path / "h2-1.packcheck.json").write_text(json.dumps(
        {"schema": "gitnetdiag.pack-check/1", "streams": [{**streams[0], "trailer_ok": True}]}))
    (tmp_path / "h2-3.packcheck.json").write_text("{not json")
    found = h2_spoiled_bodies(tmp_path, [_record(1, "h2-1.packcheck.json"),
                                         _record(2, "h2-2.packcheck.json"),
                                         _record(3, "h2-3.packcheck.json"), _record(4, None)])
    (body,) = found.value
    assert (body.push, body.body_bytes, body.pack_bytes, body.objects) == (
        2, 3_065_645, 3_065_500, 9)
    assert body.built_pack_bytes == 3_000_000
    assert "h2-2.packcheck.json stream 3" in body.source
    assert len(found.notes) == 1 and "h2-3.packcheck.json: not read" in found.notes[0]


ATS = "ATS/9.2.0"


def _ats_502(*, spoiled: bool):  # type: ignore[no-untyped-def]
    """The loaded lab run: every HTTP/2 push answered 502 by the edge, the tool's own
    native POST passing (the pool rule's evidence), with or without the body check."""
    obs = _redirecting_pool(ATS)
    h2 = obs.protocols["h2"]
    failed = replace(_failed("error: RPC failed; HTTP 502 curl 22 The requested URL "
                             "returned error: 502"), body_spoiled=spoiled)
    h2 = replace(h2, pushes=(failed,) * 3, http_requests=tuple(
        replace(r, status=502) if r.method == "POST" else r for r in h2.http_requests),
        h2_spoiled_body=H2SpoiledBody(source="h2-1.packcheck.json stream 3 (decrypted "
                                      "capture)", push=1, body_bytes=3_211_180,
                                      pack_bytes=3_211_030, objects=9,
                                      built_pack_bytes=3_145_495) if spoiled else None)
    protocols = {"h2": h2, "ssh": obs.protocols["ssh"]}
    return replace(obs, run=replace(obs.run, libcurl_version="7.88.1"), protocols=protocols)


def test_a_spoiled_pack_is_the_clients_failure_not_a_pool_members() -> None:
    before = diagnose(_ats_502(spoiled=False))
    assert before.findings[0].id == "edge-backend-errors"
    result = diagnose(_ats_502(spoiled=True))
    ids = [f.id for f in result.findings]
    assert ids[0] == "client-http-stack" and "edge-backend-errors" not in ids, ids
    top = result.findings[0]
    assert top.summary.startswith("3 of 3 HTTP/2 pushes failed with a request body that is "
                                  "not the pack git built"), top.summary
    assert "libcurl 7.88.1 sent 3211180 B" in top.summary
    wrong = next(e for e in top.evidence if "SHA-1 trailer wrong" in e.what)
    assert wrong.value == 3_211_030 and wrong.unit == "B"
    extra = next(e for e in top.evidence if "minus the pack built" in e.what)
    assert extra.value == 65_535, "one HTTP/2 window sent twice"
    assert "http.version HTTP/1.1" in top.fix
    assert result.verdict == "failed"
    assert "client-http-stack" in result.headline, result.headline


@pytest.mark.parametrize("spoiled_pushes", [1, 2])
def test_only_the_spoiled_pushes_are_claimed(spoiled_pushes: int) -> None:
    """One push of three spoiled, the others refused 502 with git's pack intact: the
    client's stack does not explain the other refusals."""
    obs = _ats_502(spoiled=True)
    h2 = obs.protocols["h2"]
    pushes = tuple(replace(p, body_spoiled=i < spoiled_pushes) for i, p in enumerate(h2.pushes))
    result = diagnose(replace(obs, protocols={**obs.protocols,
                                              "h2": replace(h2, pushes=pushes)}))
    assert result.verdict == "failed"
    assert result.headline.endswith("cause not identified."), result.headline
    top = result.findings[0]
    assert top.id == "client-http-stack", result.findings
    assert top.summary.startswith(f"{spoiled_pushes} of 3 HTTP/2 pushes failed with a "
                                  "request body that is not the pack git built"), top.summary


def test_the_probe_checks_a_failed_http2_pushs_pack_within_its_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed HTTP/2 push kept with its keys gets ``h2-1.packcheck.json`` (the recorded
    push: its pack whole and git's); an ok push, an SSH push and a capture above the bound
    are left as they are, the last with a warning."""
    from gitnetdiag.probe import h2stop
    from gitnetdiag.rundir.records import CaptureResult

    shutil.copy(RECORDED, tmp_path / "h2-1.pcapng")
    (tmp_path / "h2-1.keylog").write_text("# the secrets are in the capture\n")
    record = replace(_record(1, None), capture=CaptureResult(
        path="h2-1.pcapng", filter="", snaplen=0, packets_captured=None, packets_dropped=0),
        artifacts={"keylog": "h2-1.keylog"})
    warnings: list[str] = []
    checked = h2stop.with_pack_check(tmp_path, "h2", record, warnings.append)
    assert checked.artifacts["pack_check"] == "h2-1.packcheck.json" and warnings == []
    streams = json.loads((tmp_path / "h2-1.packcheck.json").read_text())["streams"]
    assert [(s["stream_id"], s["trailer_ok"], s["pack_bytes"]) for s in streams] == [
        (3, True, 100_367), (3, None, None)]
    assert h2_spoiled_bodies(tmp_path, [checked]).value == ()
    assert h2stop.with_pack_check(tmp_path, "ssh", record, warnings.append) is record
    assert h2stop.with_pack_check(tmp_path, "h2", replace(record, outcome="ok"),
                                  warnings.append).outcome == "ok"
    monkeypatch.setattr(h2stop, "PACK_CHECK_MAX_CAPTURE_BYTES", 100_000)
    assert h2stop.with_pack_check(tmp_path, "h2", record, warnings.append) is record
    assert len(warnings) == 1 and "above the 100000 B bound" in warnings[0], warnings
