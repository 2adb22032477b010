"""The native HTTP/2 push probe against a tiny h2 git server on loopback, and in the lab.

The loopback server is real enough to matter: it speaks h2 over TLS, runs
``git receive-pack --stateless-rpc`` on a real bare repository, and grants
flow-control credit only after a delay (a stand-in for the round trip), with
a configurable stream window.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.errors import NetworkError, UsageError
from gitnetdiag.pipeline import h2_push_ledger, sweep_rows
from gitnetdiag.probe.h2native import (
    ZERO_OID,
    H2ClientSide,
    check_safe_ref,
    h2_push_probe,
    h2_sweep,
    parse_advertisement,
    parse_report_status,
    pkt_line,
    ref_update_request,
    split_pkt_lines,
)
from gitnetdiag.probe.repo import generate_repo, pack_for_commit
from gitnetdiag.report.probe import render_sweep
from tests.conftest import LabFactory
from tests.probe.h2server import H2GitServer, start_h2_git_server
from tests.tlsutil import make_tls_files

# ---------------------------------------------------------------- pure parts


def test_pkt_lines_round_trip_and_partial_rest() -> None:
    data = pkt_line(b"hello\n") + b"0000" + pkt_line(b"x") + b"00"
    lines, rest = split_pkt_lines(data)
    assert lines == [b"hello\n", None, b"x"]
    assert rest == b"00"


def test_advertisement_smart_http_with_capabilities() -> None:
    oid = "a" * 40
    body = (
        pkt_line(b"# service=git-receive-pack\n")
        + b"0000"
        + pkt_line(f"{oid} refs/heads/main\0report-status delete-refs ofs-delta\n".encode())
        + pkt_line(f"{'b' * 40} refs/tags/v1\n".encode())
        + b"0000"
    )
    lines, _ = split_pkt_lines(body)
    adv = parse_advertisement(lines)
    assert adv.refs == {"refs/heads/main": oid, "refs/tags/v1": "b" * 40}
    assert {"report-status", "delete-refs"} <= adv.capabilities


def test_advertisement_of_empty_repository() -> None:
    lines, _ = split_pkt_lines(
        pkt_line(f"{ZERO_OID} capabilities^{{}}\0report-status\n".encode()) + b"0000"
    )
    adv = parse_advertisement(lines)
    assert adv.refs == {}
    assert adv.capabilities == frozenset({"report-status"})


def test_report_status() -> None:
    lines, _ = split_pkt_lines(
        pkt_line(b"unpack ok\n")
        + pkt_line(b"ok refs/heads/gitnetdiag/probe-1\n")
        + pkt_line(b"ng refs/heads/x hook declined\n")
        + b"0000"
    )
    report = parse_report_status(lines)
    assert report.ok_for("refs/heads/gitnetdiag/probe-1")
    assert report.refs["refs/heads/x"] == "ng hook declined"


def test_request_body_layout() -> None:
    body = ref_update_request(
        ZERO_OID, "c" * 40, "refs/heads/gitnetdiag/probe-z", ["report-status"], b"PACK"
    )
    assert body.endswith(b"0000PACK")
    lines, rest = split_pkt_lines(body[: -len(b"PACK")])
    assert (
        lines[0]
        == f"{ZERO_OID} {'c' * 40} refs/heads/gitnetdiag/probe-z\0 report-status\n".encode()
    )
    assert lines[1] is None
    assert rest == b""


@pytest.mark.parametrize("ref", ["refs/heads/main", "refs/heads/gitnetdiag/probe-", "refs/tags/x"])
def test_only_probe_refs_are_writable(ref: str) -> None:
    with pytest.raises(UsageError):
        check_safe_ref(ref)


# ---------------------------------------------------------------- loopback server


@pytest.fixture(autouse=True)
def no_user_git_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe reads git config and proxy variables as git does; the loopback
    tests must not depend on the machine's (a proxy there would swallow them)."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "GIT_SSL_NO_VERIFY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def probe_pack(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, str]:
    repo = generate_repo(tmp_path_factory.mktemp("probe") / "repo", 400_000, seed=7)
    return pack_for_commit(repo.path, repo.head_oid), repo.head_oid


@pytest.fixture()
def seeded_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[H2GitServer]:
    window, delay = request.param
    server = start_h2_git_server(tmp_path, window_bytes=window, update_delay_s=delay)
    # An existing branch the probe must leave alone.
    other = generate_repo(tmp_path / "other", 10_000, seed=3)
    subprocess.run(
        ["git", "-C", str(other.path), "push", "-q", str(server.repo), "HEAD:refs/heads/main"],
        check=True,
        timeout=60,
        capture_output=True,
    )
    yield server
    server.stop()


@pytest.mark.parametrize("seeded_server", [(65_535, 0.02)], indirect=True)
def test_small_window_server_stalls_and_branch_is_deleted(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str]
) -> None:
    pack, oid = probe_pack
    before = seeded_server.refs()
    ledger = h2_push_ledger(h2_push_probe(
        seeded_server.url,
        ca_file=seeded_server.ca_file,
        pack=pack,
        new_oid=oid,
        probe_id="t1",
        timeout_s=60,
    ).events)
    assert ledger.alpn == "h2"
    assert ledger.report.ok_for("refs/heads/gitnetdiag/probe-t1")
    assert ledger.server_initial_window_bytes == 65_535
    assert ledger.stream.peak_credit_bytes == 65_535
    assert ledger.stream.bytes_sent == ledger.request_bytes
    # ~400 kB through a 64 KiB window: at least 5 refills waited for, each >= 20 ms.
    stalls = max(ledger.stream.stall_count, ledger.connection.stall_count)
    assert stalls >= 5
    assert max(ledger.stream.stalled_s, ledger.connection.stalled_s) >= 5 * 0.018
    assert ledger.bound.which in {"stream", "connection", "both"}
    assert any(update.stream_id == 0 for update in ledger.window_updates)
    assert ledger.ref_deleted, seeded_server.errors
    assert seeded_server.refs() == before, seeded_server.errors
    json.dumps(ledger.to_dict())


@pytest.mark.parametrize("seeded_server", [(16_777_216, 0.02)], indirect=True)
def test_large_window_server_never_stalls(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str]
) -> None:
    pack, oid = probe_pack
    before = seeded_server.refs()
    probe = h2_push_probe(
        seeded_server.url,
        ca_file=seeded_server.ca_file,
        pack=pack,
        new_oid=oid,
        probe_id="t2",
        timeout_s=60,
    )
    # Who answered reaches the run directory: server and via, not other headers.
    assert probe.events.identity_headers == ("server: gnd-test/1.0", "via: 1.1 testhop")
    ledger = h2_push_ledger(probe.events)
    assert ledger.server_initial_window_bytes == 16_777_216
    assert ledger.stream.stall_count == 0
    assert ledger.connection.stall_count == 0
    assert ledger.bound.which == "none"
    assert ledger.ref_deleted, seeded_server.errors
    assert seeded_server.refs() == before, seeded_server.errors


@pytest.mark.parametrize("seeded_server", [(65_535, 0.005)], indirect=True)
def test_sweep_rows_follow_server_window(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str]
) -> None:
    pack, oid = probe_pack
    before = seeded_server.refs()
    ids = iter(["s1", "s2"])
    rows = sweep_rows(h2_sweep(
        seeded_server.url,
        ca_file=seeded_server.ca_file,
        pack=pack,
        new_oid=oid,
        probe_id_factory=lambda: next(ids),
        settings=[(65_535, 16_384), (16_777_216, 65_536)],
    ))
    assert [row.client_window_bytes for row in rows] == [65_535, 16_777_216]
    assert all(row.server_initial_window_bytes == 65_535 and row.push_ok for row in rows)
    assert all(row.stall_count > 0 for row in rows)
    assert "server window" in render_sweep(rows)
    assert seeded_server.refs() == before, seeded_server.errors


@pytest.mark.parametrize("seeded_server", [(16_777_216, 0.0)], indirect=True)
@pytest.mark.parametrize(("lost", "asks", "deleted"), [
    (NetworkError("TLS handshake failed: wrong version number", reference="tls-failed"),
     2, True),
    (NetworkError("cannot connect: refused", reference="connect-failed"), 2, True),
    (NetworkError("POST git-receive-pack answered HTTP 401", reference="auth-failed"),
     1, False),
])
def test_a_delete_whose_connection_was_lost_asks_again_on_a_new_one(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str], lost: NetworkError, asks: int,
    deleted: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """A delete's connection lost before any answer says nothing about the branch (a
    fresh-CI unit run's delete got a TLS 'wrong version number' once and reported the
    branch left): asked again once; an answer (a 401) is not asked twice."""
    import gitnetdiag.probe.h2native as h2native

    real = h2native.delete_probe_branch_h2
    calls: list[int] = []

    def first_lost(*args: object, **kwargs: object) -> bool:
        calls.append(1)
        if len(calls) == 1:
            raise lost
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(h2native, "delete_probe_branch_h2", first_lost)
    before = seeded_server.refs()
    pack, oid = probe_pack
    ledger = h2_push_ledger(h2_push_probe(seeded_server.url, ca_file=seeded_server.ca_file,
                                          pack=pack, new_oid=oid, probe_id="again").events)
    assert len(calls) == asks
    assert ledger.ref_deleted is deleted
    assert (seeded_server.refs() == before) is deleted, seeded_server.errors
    err = capsys.readouterr().err
    assert ("asking again on a new connection" in err) is (asks == 2), err


@pytest.mark.parametrize("seeded_server", [(65_535, 0.0)], indirect=True)
def test_existing_probe_branch_is_refused_and_kept(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str]
) -> None:
    main_oid = seeded_server.refs()["refs/heads/main"]
    subprocess.run(
        [
            "git",
            "-C",
            str(seeded_server.repo),
            "update-ref",
            "refs/heads/gitnetdiag/probe-dup",
            main_oid,
        ],
        check=True,
        timeout=30,
    )
    before = seeded_server.refs()
    pack, oid = probe_pack
    with pytest.raises(UsageError):
        h2_push_probe(
            seeded_server.url,
            ca_file=seeded_server.ca_file,
            pack=pack,
            new_oid=oid,
            probe_id="dup",
        )
    assert seeded_server.refs() == before, seeded_server.errors


def test_a_stop_from_another_thread_ends_a_hung_push_within_seconds(
    tmp_path: Path, probe_pack: tuple[bytes, str]
) -> None:
    """The native HTTP/2 push runs in a worker thread beside the SSH one, and a worker gets
    no signal: Ctrl-C or the watch deadline sets ``stop``. On a server that never grants
    the pack any credit, the push (60 s timeout) stops within its one-second wait slice,
    takes the Ctrl-C path and leaves nothing on the server."""
    pack, oid = probe_pack
    server = start_h2_git_server(tmp_path, window_bytes=65_535, update_delay_s=0.0,
                                 stall_uploads=True)
    stop = threading.Event()
    try:
        before = server.refs()
        threading.Timer(1.0, stop.set).start()
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            h2_push_probe(server.url, ca_file=server.ca_file, pack=pack, new_oid=oid,
                          probe_id="stop1", timeout_s=60, client_side=H2ClientSide(stop=stop))
        elapsed = time.monotonic() - started
        assert server.stalled_streams, "the server never held a POST: nothing was tested"
        assert 1.0 <= elapsed < 3.5, elapsed
        assert server.refs() == before
    finally:
        server.stop()


def test_connection_refused_is_a_network_error(tmp_path: Path) -> None:
    cert, _ = make_tls_files(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(NetworkError) as info:
        h2_push_probe(
            f"https://127.0.0.1:{port}/x.git",
            ca_file=str(cert),
            pack=b"",
            new_oid="a" * 40,
            probe_id="r",
        )
    assert info.value.reference == "connect-failed"


# ---------------------------------------------------------------- lab


def _lab_run(state_ns: str, args: list[str]) -> dict[str, object]:
    # This interpreter (a fresh clone or a worktree has no .venv of its own).
    proc = subprocess.run(
        ["ip", "netns", "exec", state_ns, sys.executable, "-m", "gitnetdiag.commands.native",
         "h2", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.stdout, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


def _ls_remote(state_ns: str, url: str, ca_file: str) -> str:
    return subprocess.run(
        ["ip", "netns", "exec", state_ns, "git", "ls-remote", url],
        env={**os.environ, "GIT_SSL_CAINFO": ca_file},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


@pytest.mark.lab
# The windows the servers announce and stalls a 1.5 MB push must make through 64 KiB (none
# through 16 MiB): counts fixed by the windows, not rates; its lab is sshauth's.
@pytest.mark.lab_lane("idle")
def test_lab_edge_small_window_and_direct_large_window(shared_lab: LabFactory) -> None:
    state = shared_lab("h2-small-window")
    url_edge, url_direct = state.endpoints.https_edge, state.endpoints.https_direct
    before = _ls_remote(state.client_ns, url_direct, state.ca_file)

    edge = _lab_run(
        state.client_ns,
        ["--url", url_edge, "--ca-file", state.ca_file, "--size-bytes", "1500000", "--no-series"],
    )
    assert "error" not in edge, edge
    assert edge["server_initial_window_bytes"] == state.edge_h2_window == 65_535
    stream = edge["stream"]
    assert isinstance(stream, dict)
    assert stream["stall_count"] >= 5
    assert edge["ref_deleted"] is True
    assert _ls_remote(state.client_ns, url_direct, state.ca_file) == before

    direct = _lab_run(
        state.client_ns,
        ["--url", url_direct, "--ca-file", state.ca_file, "--size-bytes", "1500000", "--no-series"],
    )
    assert "error" not in direct, direct
    assert direct["server_initial_window_bytes"] == state.apache_h2_window > 1_000_000
    direct_stream = direct["stream"]
    assert isinstance(direct_stream, dict)
    assert direct_stream["stall_count"] == 0
    assert direct["ref_deleted"] is True
    assert _ls_remote(state.client_ns, url_direct, state.ca_file) == before


@pytest.mark.parametrize("seeded_server", [(65_535, 0.0)], indirect=True)
def test_probe_works_with_descriptors_above_fd_setsize(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str]
) -> None:
    """A caller holding over 1024 open files (a long test session, a busy watcher) must not
    break the probe's waits: select() cannot watch such descriptors, poll() can."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("the descriptor limit is below 1200")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    hog = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        pack, oid = probe_pack
        ledger = h2_push_probe(seeded_server.url, ca_file=seeded_server.ca_file, pack=pack,
                               new_oid=oid, probe_id="fd", timeout_s=30)
    finally:
        for fd in hog:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert ledger.report.ok_for("refs/heads/gitnetdiag/probe-fd") and ledger.ref_deleted
