"""Issue 42 item 6: a bare capture of a clone that got less than its pack is a failed or
stalled clone, named with its bytes and seconds, never ``healthy``.

Each capture is crafted with scapy (:class:`tests.capture.craft.Conversation`): a clone
whose connection ends mid-pack with no FIN, one the server resets after 100 kB, a 200 that
carries 100 kB of an 8 MiB Content-Length, and a server that sends only progress for
300 s (over git://, where the sideband bands are read, and over TLS, headers only).
"""

from __future__ import annotations

import contextlib
import shutil
import ssl
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gitnetdiag.cli import app
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.pipeline import diagnose_capture, observations_from_capture
from gitnetdiag.tools.tshark import http1_responses_from_capture
from tests.capture.craft import Conversation, pcap_bytes
from tests.capture.test_sniff import client_hello
from tests.tlsutil import make_tls_files

UPLOAD_PACK = b"0032git-upload-pack /lab.git\0host=example\0"
HTTP_UPLOAD_PACK = (b"POST /lab.git/git-upload-pack HTTP/1.1\r\nHost: example\r\n"
                    b"Content-Type: application/x-git-upload-pack-request\r\n\r\n0000")
MSS = 1448
CUT_BYTES = 70 * MSS
"""What the cut clones got: about 100 kB."""
PACK_BYTES = 8 * 2**20


def _pkt(data: bytes) -> bytes:
    return b"%04x" % (len(data) + 4) + data


def _clone(port: int, request: bytes) -> Conversation:
    """A handshake and the client's request, at 50 ms RTT."""
    conv = Conversation(server=("10.0.0.2", port))
    conv.handshake()
    conv.segment("c", "PA", dt_s=0.001, data=request)
    conv.segment("s", "A", dt_s=0.05)
    return conv


def _bulk(conv: Conversation, size: int, first: bytes = b"") -> None:
    """``size`` bytes from the server in full segments (the first one's start ``first``),
    10 a round trip, each round acknowledged by the client."""
    sent = 0
    while sent < size:
        for _ in range(10):
            n = min(MSS, size - sent)
            if n <= 0:
                break
            head = first if sent == 0 else b""
            conv.segment("s", "A", dt_s=0.0001, data=head + b"\x5a" * (n - len(head)))
            sent += n
        conv.segment("c", "A", dt_s=0.05)


def _write(tmp_path: Path, conv: Conversation) -> Path:
    path = tmp_path / "clone.pcap"
    path.write_bytes(pcap_bytes(conv.frames))
    return path


def _only_clone(path: Path) -> TransferObservation:
    observations, _ = observations_from_capture(path)
    assert observations.run.transfer == "download"
    (clone,) = observations.transfers
    return clone


def _not_healthy(path: Path, words: str) -> None:
    """The diagnosis and the command: failed (never healthy), a non-zero exit, the failure
    named."""
    diagnosis, _ = diagnose_capture(path)
    assert diagnosis.verdict == "failed", diagnosis.verdict  # its one clone failed or stalled
    assert any(words in f.message for f in diagnosis.measurement_failures), \
        diagnosis.measurement_failures
    result = CliRunner().invoke(app, ["analyze", str(path), "--diagnose"],
                                env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert result.exit_code != 0, result.output
    verdict = next(line for line in result.stdout.splitlines() if line.startswith("verdict:"))
    assert verdict != "verdict: HEALTHY", result.output
    assert words in " ".join(result.output.split()), result.output  # the lines wrap


def test_a_capture_that_ends_mid_pack_after_a_silence_is_a_stall(tmp_path: Path) -> None:
    """git://: the pack flowed (100 kB), then nothing from the server; the client's
    keepalive 30 s later, no FIN or RST either way."""
    conv = _clone(9418, UPLOAD_PACK)
    _bulk(conv, CUT_BYTES, first=_pkt(b"\x01PACK\0\0\0\x02\0\0\0\x10"))
    conv.segment("c", "A", dt_s=30.0)
    path = _write(tmp_path, conv)
    clone = _only_clone(path)
    assert (clone.outcome, clone.failure_kind) == ("stalled", "hung")
    assert clone.moved_bytes == CUT_BYTES
    assert f"nothing for 30.1 s after {CUT_BYTES} B" in clone.last_line
    assert "connection open (no FIN, no RST)" in clone.last_line
    _not_healthy(path, "nothing for 30.1 s")


def test_a_capture_stopped_while_the_pack_flowed_is_said_and_measured(tmp_path: Path) -> None:
    """Data up to the capture's end, no FIN: the capture stopped the clone, not the path;
    the rate is of the bytes captured, and the report says whether it finished is unknown."""
    conv = _clone(9418, UPLOAD_PACK)
    _bulk(conv, CUT_BYTES, first=_pkt(b"\x01PACK\0\0\0\x02\0\0\0\x10"))
    path = _write(tmp_path, conv)
    clone = _only_clone(path)
    assert clone.outcome == "bounded" and clone.rate_bytes_per_s
    _, warnings = observations_from_capture(path)
    assert any("the capture ends mid-clone" in w and "not in the capture" in w
               for w in warnings), warnings


def test_a_reset_from_the_server_after_100_kb_is_a_failed_clone(tmp_path: Path) -> None:
    """TLS, headers only: everything the server sent was acknowledged, then its RST."""
    conv = _clone(443, client_hello("git.example.com", ["h2", "http/1.1"]))
    _bulk(conv, CUT_BYTES)
    conv.segment("s", "R", dt_s=0.01)
    path = _write(tmp_path, conv)
    clone = _only_clone(path)
    assert (clone.outcome, clone.failure_kind) == ("failed", "reset")
    assert f"the server side reset the connection after {CUT_BYTES} B" in clone.last_line
    _not_healthy(path, f"reset the connection after {CUT_BYTES} B")


def test_a_reset_after_the_client_closed_is_a_teardown(tmp_path: Path) -> None:
    """The client's FIN first, then the server's RST: a finished clone's teardown."""
    conv = _clone(443, client_hello("git.example.com", ["h2", "http/1.1"]))
    _bulk(conv, CUT_BYTES)
    conv.segment("c", "FA", dt_s=0.01)
    conv.segment("s", "R", dt_s=0.025)
    clone = _only_clone(_write(tmp_path, conv))
    assert clone.outcome == "ok" and clone.failure_kind is None


@pytest.mark.parametrize("end", ["FA", "R"])
def test_a_200_that_carried_a_fraction_of_its_length_is_a_failed_clone(
        end: str, tmp_path: Path) -> None:
    """Plain HTTP: ``Content-Length: 8388608``, 100 kB of body, then the server's FIN (or
    RST): the share of the answer that came is named."""
    conv = _clone(8080, HTTP_UPLOAD_PACK)
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-result\r\n"
            b"Content-Length: %d\r\n\r\n" % PACK_BYTES)
    conv.segment("s", "PA", dt_s=0.001, data=head)
    _bulk(conv, CUT_BYTES)
    conv.segment("s", end, dt_s=0.01)
    if end == "FA":
        conv.segment("c", "FA", dt_s=0.025)
    path = _write(tmp_path, conv)
    clone = _only_clone(path)
    assert (clone.outcome, clone.failure_kind) == ("failed", "reset")
    words = f"the 200 answer carried {CUT_BYTES} B of its Content-Length {PACK_BYTES} B (1.2%)"
    assert words in clone.last_line, clone.last_line
    assert ("closed the connection (FIN)" if end == "FA" else "reset") in clone.last_line
    _not_healthy(path, words)


def test_a_200_whose_body_came_whole_is_ok(tmp_path: Path) -> None:
    conv = _clone(8080, HTTP_UPLOAD_PACK)
    conv.segment("s", "PA", dt_s=0.001,
                 data=b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % CUT_BYTES)
    _bulk(conv, CUT_BYTES)
    conv.segment("c", "FA", dt_s=0.01)
    conv.segment("s", "FA", dt_s=0.025)
    clone = _only_clone(_write(tmp_path, conv))
    assert clone.outcome == "ok" and clone.failure_kind is None


ADVERTISED = 366
"""The ref advertisement before the progress, on the same kept-alive connection (the
size the loopback smart-HTTP server's took)."""


def _progress_for(conv: Conversation, seconds: int, *, readable: bool) -> int:
    """The ref advertisement, then one progress line a second from the server (band 2),
    each acknowledged; then git gives up (the client's FIN). Returns the progress bytes."""
    conv.segment("s", "PA", dt_s=0.001, data=b"\x33" * ADVERTISED)
    conv.segment("c", "A", dt_s=0.025)
    sent = 0
    for n in range(seconds):
        line = _pkt(b"\x02Counting objects: %d\r" % n) if readable else b"\x17" * 60
        conv.segment("s", "PA", dt_s=1.0, data=line)
        conv.segment("c", "A", dt_s=0.025)
        sent += len(line)
    conv.segment("c", "FA", dt_s=1.0)
    return sent


@pytest.mark.parametrize("transport", ["git://", "TLS"])
def test_progress_and_never_a_pack_is_a_stalled_clone(transport: str, tmp_path: Path) -> None:
    """300 s of progress lines and no pack after the ref advertisement. Over git:// the
    bands are read: 300 progress packets, no pack header; over TLS the small segments alone
    tell, and it says the bands were not read."""
    readable = transport == "git://"
    conv = (_clone(9418, UPLOAD_PACK) if readable
            else _clone(443, client_hello("git.example.com", ["http/1.1"])))
    sent = _progress_for(conv, 300, readable=readable)
    path = _write(tmp_path, conv)
    clone = _only_clone(path)
    assert (clone.outcome, clone.failure_kind) == ("stalled", "hung")
    assert (f"progress and no pack: 307.5 s of segments of 300 B or less from the server "
            f"after its last larger one ({ADVERTISED} B up to it), {sent} B in all"
            in clone.last_line), clone.last_line
    if readable:
        assert "300 segments of progress (sideband band 2) and no pack header" \
            in clone.last_line
    else:
        assert "the payload was not captured: progress or keepalives, unread" \
            in clone.last_line
    _not_healthy(path, "progress and no pack")


def _tls_clone(tmp_path: Path, *, body_bytes: int) -> tuple[Path, Path]:
    """A real TLS session (Python's ssl over memory BIOs, its keys logged) carried by a
    crafted TCP conversation: the client's upload-pack POST, the server's 200 with an
    8 MiB Content-Length and ``body_bytes`` of body, then the server's FIN."""
    cert, key = make_tls_files(tmp_path)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_ctx.check_hostname, client_ctx.verify_mode = False, ssl.CERT_NONE
    keylog = tmp_path / "keys.log"
    client_ctx.keylog_filename = str(keylog)
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    client = client_ctx.wrap_bio(c_in, c_out, server_side=False)
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    conv = Conversation(server=("10.0.0.2", 443))
    conv.handshake()

    def carry(side: str) -> None:
        source, sink = (c_out, s_in) if side == "c" else (s_out, c_in)
        data = source.read()
        for i in range(0, len(data), MSS):
            conv.segment(side, "PA", dt_s=0.0005, data=data[i:i + MSS])
        sink.write(data)

    for _ in range(4):
        for end in (client, server):
            with contextlib.suppress(ssl.SSLWantReadError):
                end.do_handshake()
        carry("c")
        carry("s")
    client.write(HTTP_UPLOAD_PACK)
    carry("c")
    server.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-result\r\n"
                 b"Content-Length: %d\r\n\r\n" % PACK_BYTES)
    carry("s")
    for sent in range(0, body_bytes, 16384):
        server.write(b"\x5a" * min(16384, body_bytes - sent))
        carry("s")
        conv.segment("c", "A", dt_s=0.05)
    conv.segment("s", "FA", dt_s=0.01)
    conv.segment("c", "FA", dt_s=0.025)
    return _write(tmp_path, conv), keylog


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (Debian 'tshark')")
def test_a_short_200_over_tls_is_read_with_the_keylog(tmp_path: Path) -> None:
    """With the keys the answer's head is read (tshark) and the bytes after it counted: at
    most the body plus TLS framing, 1.4% of the 8 MiB it declared. Without them the capture
    says it cannot tell."""
    path, keylog = _tls_clone(tmp_path, body_bytes=7 * 16384)
    responses = http1_responses_from_capture(path, keylog)
    assert [(r.status, r.content_length) for r in responses] == [(200, PACK_BYTES)]
    observations, _ = observations_from_capture(path, h1_responses=responses)
    (clone,) = observations.transfers
    assert (clone.outcome, clone.failure_kind) == ("failed", "reset")
    assert "TLS records included) of its Content-Length 8388608 B (1.4%)" in clone.last_line
    assert "then the server closed the connection (FIN) (capture, decrypted)" in clone.last_line
    result = CliRunner().invoke(app, ["analyze", str(path), "--diagnose", "--keylog",
                                      str(keylog)])
    assert result.exit_code != 0 and "of its Content-Length 8388608 B" in " ".join(
        result.output.split()), result.output
    blind = _only_clone(path)
    assert blind.outcome == "ok"
    _, warnings = observations_from_capture(path)
    assert any("cannot tell whether that was the whole pack" in w for w in warnings), warnings


def test_a_slow_pack_preparation_then_the_pack_is_a_clone_that_worked(tmp_path: Path) -> None:
    """20 s of progress (a CPU-starved server counting), then the pack and both FINs: the
    small segments came before the pack, not after it."""
    conv = _clone(9418, UPLOAD_PACK)
    _progress_for_then(conv, 20)
    _bulk(conv, CUT_BYTES, first=_pkt(b"\x01PACK\0\0\0\x02\0\0\0\x10"))
    conv.segment("s", "PA", dt_s=0.001, data=b"0000")  # git's closing flush-pkt
    conv.segment("s", "FA", dt_s=0.01)
    conv.segment("c", "FA", dt_s=0.025)
    clone = _only_clone(_write(tmp_path, conv))
    assert clone.outcome == "ok" and clone.failure_kind is None, clone.last_line


def _progress_for_then(conv: Conversation, seconds: int) -> None:
    for n in range(seconds):
        conv.segment("s", "PA", dt_s=1.0, data=_pkt(b"\x02Counting objects: %d\r" % n))
        conv.segment("c", "A", dt_s=0.025)


@pytest.mark.parametrize(("last", "outcome"), [(b"\x5a" * 200, "failed"), (b"0000", "ok")])
def test_a_readable_answer_the_server_closed_without_the_flush_is_cut(
        last: bytes, outcome: str, tmp_path: Path) -> None:
    """git://, payload captured whole: the server's FIN came first, after a last segment
    that is not git's closing flush-pkt (a pack cut mid-way), or after the flush (done)."""
    conv = _clone(9418, UPLOAD_PACK)
    _bulk(conv, CUT_BYTES, first=_pkt(b"\x01PACK\0\0\0\x02\0\0\0\x10"))
    conv.segment("s", "PA", dt_s=0.001, data=last)
    conv.segment("s", "FA", dt_s=0.001)
    conv.segment("c", "FA", dt_s=0.025)
    path = _write(tmp_path, conv)
    clone = _only_clone(path)
    assert clone.outcome == outcome, clone.last_line
    if outcome == "failed":
        moved = CUT_BYTES + len(last)
        assert clone.failure_kind == "reset"
        assert f"the server closed (FIN) after {moved} B without git's closing flush-pkt" \
            in clone.last_line
        _not_healthy(path, "without git's closing flush-pkt")
