"""The body probe against real servers on loopback: Apache with ``LimitRequestBody 1 MiB``,
directly and behind an HAProxy edge that answers 411 to a POST without a length, and the
whole ``probe`` run that starts it after git's push was refused (needs root and apache2;
the edge haproxy); a loopback server that demands Basic auth, and one that closes right
after the headers of a POST above its limit and stays silent below it."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from gitnetdiag.pipeline import observations_from_run
from gitnetdiag.probe.bodyprobe import MAX_LIMIT_REQUESTS, body_probe, progress_line
from gitnetdiag.probe.options import ProbeOptions
from gitnetdiag.probe.runner import run_probe
from gitnetdiag.rundir.files import NATIVE_BODY_FILE
from gitnetdiag.serial import to_jsonable
from gitnetdiag.vocabulary import TransportKind
from tests.httpremote import BASIC, QUERY_TOKEN, TOKEN, HttpRemote
from tests.probe.limitserver import limit_server

LIMIT = 1_048_576
PACK = 25 * 2**20


def _assert_bracketed(low: int | None, high: int | None) -> None:
    """The configured limit inside the bracket, both ends within 10% of it."""
    assert low is not None and high is not None
    assert low <= LIMIT < high
    assert abs(low - LIMIT) <= LIMIT / 10 and abs(high - LIMIT) <= LIMIT / 10


def test_apache_body_limit_is_bracketed_and_nothing_is_written() -> None:
    with limit_server(LIMIT) as server:
        before = server.state()
        record = body_probe(server.url, protocols=("h1", "h2"), upper_bytes=PACK,
                            trigger="test", ca_file=server.ca_file)
        assert server.state() == before
    assert record.notes == ()
    _assert_bracketed(record.largest_accepted_bytes, record.smallest_refused_bytes)
    refusal = record.refusal()
    assert refusal is not None and refusal.status == 413
    assert (refusal.server or "").startswith("Apache/2.4")
    limits = [e for e in record.exchanges if e.purpose == "limit"]
    assert len(limits) <= MAX_LIMIT_REQUESTS
    assert sum(e.body_sent_bytes for e in record.exchanges) <= 4 * len(record.exchanges)
    for version in ("HTTP/1.1", "HTTP/2"):
        sized, streamed = record.last("sized", version), record.last("streamed", version)
        assert sized is not None and streamed is not None
        assert (sized.status, streamed.status) == (200, 200)
    assert record.duration_s < 5.0


def test_an_edge_that_demands_a_length_answers_411_to_the_streamed_post() -> None:
    with limit_server(LIMIT, edge=True) as server:
        assert server.edge_url is not None
        before = server.state()
        record = body_probe(server.edge_url, protocols=("h1", "h2"), upper_bytes=PACK,
                            trigger="test", ca_file=server.ca_file)
        assert server.state() == before
    for version in ("HTTP/1.1", "HTTP/2"):
        sized, streamed = record.last("sized", version), record.last("streamed", version)
        assert sized is not None and streamed is not None
        assert (sized.status, streamed.status) == (200, 411), record
    _assert_bracketed(record.largest_accepted_bytes, record.smallest_refused_bytes)


def test_a_push_refused_for_its_size_starts_the_probe_and_fills_body_limit(
        tmp_path: Path) -> None:
    """git's 2 MiB push gets 413; the run then brackets the limit (native-body.json) and
    the pipeline fills the h1 observation. No ref of the server changed."""
    with limit_server(LIMIT) as server:
        before = server.state()[0]
        out = tmp_path / "run"
        outcome = run_probe(ProbeOptions(
            urls={TransportKind.H1: server.url}, protocols=(TransportKind.H1,),
            size_bytes=2 * 2**20, seed=3, repo=None, repeat=1, ca_file=server.ca_file,
            insecure=False, ssh_command=None, out_dir=out, full=False, burst=0,
            timeout_s=60.0, capture=False, native=True))
        assert server.state()[0] == before
    (push,) = outcome.manifest.protocols[0].pushes
    assert (push.outcome, push.failure_kind) == ("failed", "http-status")
    record = json.loads((out / NATIVE_BODY_FILE).read_text())
    assert record["trigger"] == "h1 push #1: POST git-receive-pack answered 413"
    observations, _ = observations_from_run(out)
    probe = observations.protocols["h1"].body_limit
    assert probe is not None and probe.refused_status == 413
    _assert_bracketed(probe.largest_accepted_bytes, probe.smallest_refused_bytes)
    assert (probe.sized_status, probe.streamed_status) == (200, 200)


def test_a_401_fetches_the_credential_and_no_secret_is_recorded(
        http_remote: HttpRemote) -> None:
    """Plain http:// with Basic auth (the token in the URL, as git takes it): the sized POST
    is asked again with the credential after its 401; the record names only its source."""
    record = body_probe(http_remote.url, protocols=("h1",), upper_bytes=2 * 2**20,
                        trigger="test")
    sized = [(e.http_version, e.status) for e in record.exchanges if e.purpose == "sized"]
    assert sized == [("HTTP/1.1", 401), ("HTTP/1.1", 200)]
    assert (record.auth, record.tls_ca, record.notes) == ("url", "plain-http", ())
    streamed = record.last("streamed", "HTTP/1.1")
    assert streamed is not None and streamed.status == 200
    assert record.largest_accepted_bytes == 2 * 2**20  # Python's server says 100 Continue
    text = json.dumps(to_jsonable(record))
    assert not [secret for secret in (TOKEN, QUERY_TOKEN, BASIC.split()[1]) if secret in text]


@contextlib.contextmanager
def _mute_server(limit: int) -> Iterator[str]:
    """A plain HTTP/1.1 server that closes the connection right after the headers of a POST
    announcing more than ``limit`` bytes, says nothing to one announcing less (no ``100
    Continue``), and answers 200 to a POST that sends its body."""
    listener = socket.create_server(("127.0.0.1", 0))

    def handle(conn: socket.socket) -> None:
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            length = re.search(rb"content-length: (\d+)", head.lower())
            if b"expect: 100-continue" not in head.lower():
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nServer: mute\r\n\r\n")
            elif length is None or int(length.group(1)) <= limit:
                conn.settimeout(10)
                with contextlib.suppress(OSError):
                    conn.recv(1)  # until the probe gives up and closes

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/r.git"
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()


def test_a_close_after_the_headers_refuses_and_silence_accepts() -> None:
    with _mute_server(300_000) as url:
        record = body_probe(url, protocols=("h1",), upper_bytes=4 * 2**20, trigger="test",
                            answer_wait_s=0.2)
    low, high = record.largest_accepted_bytes, record.smallest_refused_bytes
    assert low is not None and high is not None and low <= 300_000 < high <= low * 1.05
    answers = {e.answer for e in record.exchanges if e.purpose == "limit"}
    assert answers == {"silent", "closed"}
    refusal = record.refusal()
    assert refusal is not None and (refusal.answer, refusal.status) == ("closed", None)
    assert progress_line(record).startswith(f"{len(record.exchanges)} POSTs in ")
    assert "(a close)" in progress_line(record)
