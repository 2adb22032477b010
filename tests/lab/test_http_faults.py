"""Issue 33's lab faults with real pushes from the client namespace: git's own words for
each failure, SSH beside them, and ``lab fix`` making the HTTPS push work.

Measured in this lab (50 ms RTT, git 2.39.5, libcurl 7.88.1, HAProxy 2.6, 3 MiB pushes):

- ``request-body-limit``: over HTTP/1.1 and HTTP/2 through the edge ``error: RPC failed;
  HTTP 413 curl 22 The requested URL returned error: 413`` in 0.7-0.9 s (Apache read
  1,049,880 B of the streamed body, then answered); straight to Apache over HTTP/2 the
  413 arrives as ``curl 92 Stream error in the HTTP/2 framing layer``. A 512 KiB push
  passes; with ``http.postBuffer`` above the pack Apache refuses the Content-Length at once.
- ``edge-idle-timeout``: HTTP/1.1 ``error: RPC failed; curl 18 transfer closed with
  outstanding read data remaining`` and ``send-pack: unexpected disconnect while reading
  sideband packet`` 5.9 s into the push (the edge's 5 s after the pack); HTTP/2 only the
  ``send-pack`` line, 5.8-7.2 s (HAProxy ends the stream with an empty DATA frame and
  END_STREAM, so curl sees no error); SSH 11.5-12.0 s (the hook's 10 s); the HTTPS
  branches land when the hook ends. Fixed, HTTPS pushes take 11.6-12.1 s.
- ``streamed-body-refused``: HTTP/1.1 ``error: RPC failed; HTTP 411 curl 22 The requested
  URL returned error: 411``; HTTP/2 ``error: RPC failed; curl 92 HTTP/2 stream 5 was not
  closed cleanly: CANCEL (err 8)`` (HAProxy sends HEADERS 411, DATA with END_STREAM and
  RST_STREAM CANCEL in one packet); both in 0.3-0.7 s. With ``http.postBuffer`` above the
  pack (one POST with a Content-Length) the push passes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitnetdiag.lab.httpfaults import (
    BODY_LIMIT_BYTES,
    EDGE_IDLE_HOOK_S,
    EDGE_IDLE_TIMEOUT_S,
    SERVER_KEEPALIVE_S,
)
from gitnetdiag.model.lab.state import LabState
from tests.conftest import LabFactory
from tests.labutil import in_client, make_commit

pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("idle")]  # named from failures and sleeps

PACK_BYTES = 3 * 1024 * 1024
"""Above the body limit and above git's http.postBuffer (1 MiB): a streamed pack."""
SIDEBAND_LOST = "send-pack: unexpected disconnect while reading sideband packet"


@dataclass(frozen=True)
class Push:
    """One git push from the client namespace: its exit status, its words, its wall time."""

    returncode: int
    stderr: str
    seconds: float


def _push(state: LabState, tmp_path: Path, version: str | None, branch: str, *,
          size: int = PACK_BYTES, config: tuple[str, ...] = ()) -> Push:
    """A fresh repository of ``size`` random bytes pushed to ``branch`` (SSH when
    ``version`` is None, else HTTPS through the edge over that HTTP version)."""
    repo = tmp_path / branch.replace("/", "-")
    make_commit(repo, size)
    args = ["git"]
    for item in (*config, *([f"http.version={version}"] if version else [])):
        args += ["-c", item]
    url = state.endpoints.ssh if version is None else state.endpoints.https_edge
    started = time.monotonic()
    proc = in_client(state, *args, "push", url, f"HEAD:refs/heads/{branch}", cwd=repo,
                     timeout_s=120)
    push = Push(proc.returncode, proc.stderr, time.monotonic() - started)
    print(f"{branch} ({version or 'ssh'}): exit {push.returncode} after {push.seconds:.2f} s\n"
          f"{push.stderr.strip()}")
    return push


def _server_git(state: LabState, *argv: str) -> str:
    # The repository belongs to the lab's service user: git wants it declared safe.
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", state.repo_path, *argv],
                          capture_output=True, text=True, timeout=30, check=True).stdout


def _server_branches(state: LabState) -> set[str]:
    return set(_server_git(state, "for-each-ref", "--format=%(refname:short)",
                           "refs/heads/t/").split())


def _lab_fix(state: LabState, words: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", "lab", "fix", "--name",
                           state.instance], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert words in proc.stdout, proc.stdout


def _works_after_fix(state: LabState, tmp_path: Path, *, at_least_s: float = 0.0) -> None:
    for version, branch in (("HTTP/1.1", "t/fixed-h1"), ("HTTP/2", "t/fixed-h2")):
        push = _push(state, tmp_path, version, branch)
        assert push.returncode == 0, push.stderr
        assert push.seconds >= at_least_s, push


def test_request_body_limit_refuses_the_pack_with_413(lab_factory: LabFactory,
                                                       tmp_path: Path) -> None:
    """Apache's LimitRequestBody refuses a streamed 3 MiB pack with 413 over both HTTP
    versions through the edge; a pack under the limit and SSH pass; ``lab fix`` lifts it."""
    state = lab_factory("request-body-limit")
    conf = (Path(state.state_dir) / "apache2.conf").read_text()
    assert f"LimitRequestBody {BODY_LIMIT_BYTES}" in conf
    for version, branch in (("HTTP/1.1", "t/h1"), ("HTTP/2", "t/h2")):
        push = _push(state, tmp_path, version, branch)
        assert push.returncode != 0 and "RPC failed; HTTP 413" in push.stderr, push
    small = _push(state, tmp_path, "HTTP/1.1", "t/small", size=BODY_LIMIT_BYTES // 2)
    assert small.returncode == 0, small.stderr
    ssh = _push(state, tmp_path, None, "t/ssh")
    assert ssh.returncode == 0, ssh.stderr
    assert _server_branches(state) == {"t/small", "t/ssh"}

    _lab_fix(state, "LimitRequestBody")
    _works_after_fix(state, tmp_path)


def test_edge_idle_timeout_cuts_https_pushes_while_the_hook_runs(lab_factory: LabFactory,
                                                                 tmp_path: Path) -> None:
    """The edge's 5 s timeout cuts the HTTPS pushes during the silent 10 s hook (curl 18 on
    HTTP/1.1); SSH waits for the hook and succeeds; the cut pushes still land when the hook
    ends; ``lab fix`` raises the timeout and the HTTPS push waits for the hook too."""
    state = lab_factory("edge-idle-timeout")
    root = Path(state.state_dir)
    assert f"timeout server {EDGE_IDLE_TIMEOUT_S}s" in (root / "haproxy.cfg").read_text()
    assert _server_git(state, "config", "receive.keepAlive").strip() == str(SERVER_KEEPALIVE_S)
    h1 = _push(state, tmp_path, "HTTP/1.1", "t/h1")
    assert h1.returncode != 0, h1
    assert "RPC failed; curl 18 transfer closed with outstanding read data remaining" in h1.stderr
    assert SIDEBAND_LOST in h1.stderr
    h2 = _push(state, tmp_path, "HTTP/2", "t/h2")
    assert h2.returncode != 0 and SIDEBAND_LOST in h2.stderr, h2
    for cut in (h1, h2):  # cut by the edge's timeout, long before the hook ends
        assert EDGE_IDLE_TIMEOUT_S <= cut.seconds < EDGE_IDLE_HOOK_S, cut
    ssh = _push(state, tmp_path, None, "t/ssh")
    assert ssh.returncode == 0 and ssh.seconds >= EDGE_IDLE_HOOK_S, ssh
    # receive-pack never learnt that the edge gave up: its hooks end and the refs land.
    deadline = time.monotonic() + EDGE_IDLE_HOOK_S + 10
    while _server_branches(state) != {"t/h1", "t/h2", "t/ssh"} and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _server_branches(state) == {"t/h1", "t/h2", "t/ssh"}

    _lab_fix(state, "timeout server")
    assert "timeout server 60s" in (root / "haproxy.cfg").read_text()
    _works_after_fix(state, tmp_path, at_least_s=EDGE_IDLE_HOOK_S)


def test_streamed_body_refused_answers_411_to_the_streamed_pack(lab_factory: LabFactory,
                                                                tmp_path: Path) -> None:
    """The edge answers 411 to the pack POST without a Content-Length (HTTP/1.1: HTTP 411;
    HTTP/2: curl 92); the same pack with ``http.postBuffer`` above it, and SSH, pass;
    ``lab fix`` removes the rule."""
    state = lab_factory("streamed-body-refused")
    assert "http-request return status 411" in (Path(state.state_dir) / "haproxy.cfg").read_text()
    h1 = _push(state, tmp_path, "HTTP/1.1", "t/h1")
    assert h1.returncode != 0 and "RPC failed; HTTP 411" in h1.stderr, h1
    h2 = _push(state, tmp_path, "HTTP/2", "t/h2")
    assert h2.returncode != 0 and "RPC failed; curl 92 " in h2.stderr, h2
    sized = _push(state, tmp_path, "HTTP/1.1", "t/sized",
                  config=(f"http.postBuffer={2 * PACK_BYTES}",))
    assert sized.returncode == 0, sized.stderr
    ssh = _push(state, tmp_path, None, "t/ssh")
    assert ssh.returncode == 0, ssh.stderr
    assert _server_branches(state) == {"t/sized", "t/ssh"}

    _lab_fix(state, "411")
    _works_after_fix(state, tmp_path)
