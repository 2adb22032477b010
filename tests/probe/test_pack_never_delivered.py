"""A push whose pack never reached the server whole cannot land (issue 34 item 5).

git prints ``Total`` once its transport holds the whole pack: a small pack fits in
remote-curl's buffer and the socket's, so a server that never reads the body leaves git
at ``Total`` with most of the pack on the client. Such a push is ``never-created``,
never "may land, a hook could still create it" (what the nginx reproduction said).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from gitnetdiag.probe.cleanup import Aftermath, push_aftermath
from gitnetdiag.probe.delivery import PackDelivery, body_unfinished, cut_short, shortfall
from gitnetdiag.probe.gitpush import GitRun, parse_pack_progress
from gitnetdiag.probe.trace2 import parse_curl_trace
from gitnetdiag.rundir import load_run
from tests.httpremote import _handler

# git's stderr of the nginx reproduction: the whole 700 KiB pack handed over, no answer.
PACK_DONE = ("Enumerating objects: 4, done.\n"
             "Writing objects: 100% (4/4), 700.41 KiB | 140.08 MiB/s, done.\n"
             "Total 4 (delta 0), reused 4 (delta 0), pack-reused 0\n")
PACK_BYTES = 717_219  # 700.41 KiB
ACKED_NGINX = 329_898  # what the server's TCP acknowledged before the push stalled


def _run(stderr: str = PACK_DONE) -> GitRun:
    return GitRun(argv=("git", "push"), exit_code=None, wall_s=15.4, timed_out=True,
                  stderr=stderr, stdout="")


def _trace(*, length: str | None = "717411", done: bool = False, status: bool = False) -> str:
    """git's curl trace of the pack POST on HTTP/2 (GIT_TRACE_CURL_NO_DATA), as 7.88.1
    writes it; ``length`` None: a streamed body."""
    lines = ["11:55:54.538400 http.c:725 == Info: Using Stream ID: 3 (easy handle 0x1)",
             "11:55:54.538490 http.c:684 => Send header: POST /repo.git/git-receive-pack "
             "HTTP/2",
             "11:55:54.538492 http.c:684 => Send header: Host: 127.0.0.1:18444"]
    if length is not None:
        lines.append(f"11:55:54.538499 http.c:684 => Send header: content-length: {length}")
    lines.append("11:55:54.538501 http.c:684 => Send header: ")
    if done:
        lines.append("11:55:54.603087 http.c:725 == Info: We are completely uploaded and fine")
    if status:
        lines.append("11:55:54.639128 http.c:684 <= Recv header: HTTP/2 200")
    return "\n".join(lines) + "\n"


def test_git_alone_calls_the_nginx_push_one_that_may_land() -> None:
    """The premise: git's words alone (``Total``, no status) leave the push "may land"."""
    assert push_aftermath(_run()) is Aftermath.MAY_LAND


def test_a_short_kernel_count_alone_never_skips_the_look_for_the_branch() -> None:
    """The nginx push: 0.31 MiB acknowledged of a 0.68 MiB pack. A count read off the
    wrong socket or before the last acknowledgements (seen on loopback for a pack the
    server had read whole) must not skip the look for a branch a hook may still create:
    alone it leaves the push as one that may land; with curl's own word that the body
    was never sent it is cut, with both figures."""
    delivery = PackDelivery(acked_bytes=ACKED_NGINX)
    assert cut_short(Aftermath.MAY_LAND, _run(), delivery) == (Aftermath.MAY_LAND, "")
    both = PackDelivery(acked_bytes=ACKED_NGINX, curl=parse_curl_trace(_trace()))
    aftermath, why = cut_short(Aftermath.MAY_LAND, _run(), both)
    assert aftermath is Aftermath.CUT
    assert "acknowledged 0.31 MiB of the 0.68 MiB pack" in why
    assert "never had the whole pack" in why


@pytest.mark.parametrize("acked", [PACK_BYTES, PACK_BYTES + 40_000, int(PACK_BYTES * 0.995)])
def test_a_pack_acknowledged_whole_may_still_land(acked: int) -> None:
    """At or about the pack (git rounds its figure; TLS and HTTP/2 only add to the count),
    the server may have it all: the clean-up keeps waiting for a slow hook."""
    assert shortfall(parse_pack_progress(PACK_DONE), PackDelivery(acked_bytes=acked)) is None
    assert cut_short(Aftermath.MAY_LAND, _run(), PackDelivery(acked_bytes=acked)) == (
        Aftermath.MAY_LAND, "")


def test_the_kernels_count_rules_over_the_curl_trace() -> None:
    """A whole pack acknowledged stays "may land" even when curl's end-of-body line is
    missing (a curl that does not log it must not turn a landed push into never-created)."""
    unfinished = parse_curl_trace(_trace())
    assert shortfall(parse_pack_progress(PACK_DONE),
                     PackDelivery(acked_bytes=PACK_BYTES, curl=unfinished)) is None


def test_without_a_count_curls_unfinished_body_is_the_witness() -> None:
    """No TCP_INFO: the POST declared 717411 B, curl never said it sent them all, and no
    answer came: cut. Once curl says it finished, or an answer came, or the body was
    streamed (curl logs no end for those), it may land."""
    cut = cut_short(Aftermath.MAY_LAND, _run(), PackDelivery(curl=parse_curl_trace(_trace())))
    assert cut[0] is Aftermath.CUT and "717411 B request body" in cut[1]
    for trace in (_trace(done=True), _trace(status=True), _trace(length=None)):
        curl = parse_curl_trace(trace)
        assert body_unfinished(curl) is None, trace
        after, _why = cut_short(Aftermath.MAY_LAND, _run(), PackDelivery(curl=curl))
        assert after is Aftermath.MAY_LAND


def test_curl_trace_records_the_end_of_an_upload() -> None:
    """Both of curl's phrasings (its transfer loop; a body sent with the headers), each on
    its own request: the 4-byte probe POST that finished says nothing of the pack's."""
    assert parse_curl_trace(_trace(done=True)).requests[-1].upload_done
    sent_off = _trace() + ("11:55:54.538700 http.c:725 == Info: upload completely sent off: "
                           "717411 out of 717411 bytes\n")
    assert parse_curl_trace(sent_off).requests[-1].upload_done
    probe = ("11:55:54.500000 http.c:684 => Send header: POST /repo.git/git-receive-pack "
             "HTTP/2\n11:55:54.500001 http.c:684 => Send header: content-length: 4\n"
             "11:55:54.500002 http.c:725 == Info: We are completely uploaded and fine\n"
             "11:55:54.510000 http.c:684 <= Recv header: HTTP/2 200\n")
    curl = parse_curl_trace(probe + _trace())
    assert [r.upload_done for r in curl.requests] == [True, False]
    assert body_unfinished(curl) == 717411


@pytest.mark.parametrize("aftermath", [Aftermath.CUT, Aftermath.CREATED, Aftermath.SETTLED,
                                       Aftermath.NOT_STARTED, Aftermath.REDIRECTED])
def test_only_a_push_that_may_land_is_reconsidered(aftermath: Aftermath) -> None:
    assert cut_short(aftermath, _run(), PackDelivery(acked_bytes=0)) == (aftermath, "")


# End to end: a loopback smart-HTTP server that never reads the pack's body.


@pytest.fixture()
def unread_remote(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``git http-backend`` behind Python's HTTP server, except the receive-pack POST that
    carries the pack: its body is never read and no answer comes until the end."""
    root = tmp_path / "srv"
    bare = root / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, timeout=30)
    receiving, released = threading.Event(), threading.Event()
    base = _handler(root, receiving)

    class Unread(base):  # type: ignore[misc, valid-type]
        def do_POST(self) -> None:
            small = int(self.headers.get("Content-Length") or 1 << 20) < 1024
            if "git-receive-pack" in self.path and not small:
                receiving.set()
                released.wait()
                self.close_connection = True
                return
            base.do_POST(self)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Unread)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://user:SECRETTOKEN@127.0.0.1:{server.server_address[1]}/repo.git", bare
    finally:
        released.set()
        server.shutdown()
        server.server_close()


def test_a_pack_the_server_never_read_is_looked_for_not_assumed_gone(
    unread_remote: tuple[str, Path], tmp_path: Path
) -> None:
    """512 KiB: one POST with a Content-Length, the whole pack in git's hands at once
    (``Total``) and in the sockets' buffers (curl says it sent it all), the server reading
    none of it. The push stalls; the kernel's short count alone does not call the branch
    never created: the clean-up looks for it within its wait and says what it saw."""
    url, bare = unread_remote
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "probe", "--protocols", "h1", "--size", "512KiB",
         "--no-native", "--no-capture", "--stall-timeout", "2", "--cleanup-wait", "3",
         "--http", url, "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)})
    assert "Traceback" not in proc.stderr, proc.stderr
    push = load_run(tmp_path / "run").protocols[0].pushes[0]
    assert push.outcome == "stalled", push
    assert "Total" in (tmp_path / "run" / push.artifacts["stderr"]).read_text()
    assert push.cleanup in ("unconfirmed", "never-created"), (push.cleanup,
                                                              push.cleanup_detail)
    refs = subprocess.run(["git", "-C", str(bare), "for-each-ref"], capture_output=True,
                          text=True, timeout=30, check=True).stdout
    assert refs == "", refs
