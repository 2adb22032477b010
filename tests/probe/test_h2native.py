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
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import DataReceived, RequestReceived, StreamEnded
from h2.settings import SettingCodes, Settings

from gitnetdiag.errors import NetworkError, UsageError
from gitnetdiag.probe.h2native import (
    ZERO_OID,
    check_safe_ref,
    h2_push_probe,
    h2_sweep,
    parse_advertisement,
    parse_report_status,
    pkt_line,
    ref_update_request,
    render_sweep,
    split_pkt_lines,
)
from gitnetdiag.probe.repo import generate_repo, pack_for_commit
from tests.conftest import LabFactory
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




@dataclass
class H2GitServer:
    """A loopback HTTP/2 smart-HTTP server in front of ``git receive-pack``."""

    url: str
    ca_file: str
    repo: Path
    thread: threading.Thread
    listener: socket.socket

    def refs(self) -> dict[str, str]:
        out = subprocess.run(
            ["git", "-C", str(self.repo), "for-each-ref", "--format=%(refname) %(objectname)"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
        refs: dict[str, str] = {}
        for line in out.splitlines():
            name, oid = line.split(" ", 1)
            refs[name] = oid
        return refs


def _has_window_update(out: bytes) -> bool:
    """True when the serialized frames in ``out`` include a WINDOW_UPDATE (type 8)."""
    offset = 0
    while offset + 9 <= len(out):
        if out[offset + 3] == 0x8:
            return True
        offset += 9 + int.from_bytes(out[offset : offset + 3], "big")
    return False


def _serve_connection(
    sock: ssl.SSLSocket, repo: Path, window_bytes: int, update_delay_s: float
) -> None:
    conn = H2Connection(config=H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.local_settings = Settings(
        client=False, initial_values={SettingCodes.INITIAL_WINDOW_SIZE: window_bytes}
    )
    conn.initiate_connection()
    if window_bytes > 65_535:
        conn.increment_flow_control_window(window_bytes - 65_535)
    sock.sendall(conn.data_to_send())
    requests: dict[int, dict[str, object]] = {}
    while True:
        data = sock.recv(65_536)
        if not data:
            return
        for event in conn.receive_data(data):
            if isinstance(event, RequestReceived):
                requests[event.stream_id] = {"headers": dict(event.headers), "body": bytearray()}
            elif isinstance(event, DataReceived):
                body = requests[event.stream_id]["body"]
                assert isinstance(body, bytearray)
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, StreamEnded):
                _answer(conn, event.stream_id, requests.pop(event.stream_id), repo)
        out = conn.data_to_send()
        if out:
            if update_delay_s and _has_window_update(out):
                time.sleep(update_delay_s)  # WINDOW_UPDATE first: credit arrives one "RTT" late
            sock.sendall(out)


def _answer(conn: H2Connection, stream_id: int, request: dict[str, object], repo: Path) -> None:
    headers = request["headers"]
    assert isinstance(headers, dict)
    path = str(headers[":path"])
    body = bytes(request["body"])  # type: ignore[call-overload]
    if path.endswith("/info/refs?service=git-receive-pack"):
        adv = subprocess.run(
            ["git", "receive-pack", "--stateless-rpc", "--advertise-refs", str(repo)],
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
        payload = pkt_line(b"# service=git-receive-pack\n") + b"0000" + adv
        ctype = "application/x-git-receive-pack-advertisement"
    elif path.endswith("/git-receive-pack"):
        payload = subprocess.run(
            ["git", "receive-pack", "--stateless-rpc", str(repo)],
            input=body,
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout
        ctype = "application/x-git-receive-pack-result"
    else:
        conn.send_headers(stream_id, [(":status", "404")], end_stream=True)
        return
    conn.send_headers(stream_id, [(":status", "200"), ("content-type", ctype)])
    # Answers are small; the client's window (>= 65535) always has room.
    for start in range(0, len(payload), 16_384):
        conn.send_data(stream_id, payload[start : start + 16_384])
    conn.end_stream(stream_id)


def start_h2_git_server(
    directory: Path, *, window_bytes: int, update_delay_s: float
) -> H2GitServer:
    cert, key = make_tls_files(directory)
    repo = directory / "served.git"
    subprocess.run(["git", "init", "--bare", "-q", str(repo)], check=True, timeout=30)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def accept_loop() -> None:
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(raw, server_side=True) as tls:
                    _serve_connection(tls, repo, window_bytes, update_delay_s)
            except (OSError, ssl.SSLError):
                continue

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    return H2GitServer(
        url=f"https://127.0.0.1:{port}/git/served.git",
        ca_file=str(cert),
        repo=repo,
        thread=thread,
        listener=listener,
    )


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
    server.listener.close()


@pytest.mark.parametrize("seeded_server", [(65_535, 0.02)], indirect=True)
def test_small_window_server_stalls_and_branch_is_deleted(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str]
) -> None:
    pack, oid = probe_pack
    before = seeded_server.refs()
    ledger = h2_push_probe(
        seeded_server.url,
        ca_file=seeded_server.ca_file,
        pack=pack,
        new_oid=oid,
        probe_id="t1",
        timeout_s=60,
    )
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
    assert ledger.ref_deleted
    assert seeded_server.refs() == before
    json.dumps(ledger.to_dict())


@pytest.mark.parametrize("seeded_server", [(16_777_216, 0.02)], indirect=True)
def test_large_window_server_never_stalls(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str]
) -> None:
    pack, oid = probe_pack
    before = seeded_server.refs()
    ledger = h2_push_probe(
        seeded_server.url,
        ca_file=seeded_server.ca_file,
        pack=pack,
        new_oid=oid,
        probe_id="t2",
        timeout_s=60,
    )
    assert ledger.server_initial_window_bytes == 16_777_216
    assert ledger.stream.stall_count == 0
    assert ledger.connection.stall_count == 0
    assert ledger.bound.which == "none"
    assert ledger.ref_deleted
    assert seeded_server.refs() == before


@pytest.mark.parametrize("seeded_server", [(65_535, 0.005)], indirect=True)
def test_sweep_rows_follow_server_window(
    seeded_server: H2GitServer, probe_pack: tuple[bytes, str]
) -> None:
    pack, oid = probe_pack
    before = seeded_server.refs()
    ids = iter(["s1", "s2"])
    rows = h2_sweep(
        seeded_server.url,
        ca_file=seeded_server.ca_file,
        pack=pack,
        new_oid=oid,
        probe_id_factory=lambda: next(ids),
        settings=[(65_535, 16_384), (16_777_216, 65_536)],
    )
    assert [row.client_window_bytes for row in rows] == [65_535, 16_777_216]
    assert all(row.server_initial_window_bytes == 65_535 and row.push_ok for row in rows)
    assert all(row.stall_count > 0 for row in rows)
    assert "server window" in render_sweep(rows)
    assert seeded_server.refs() == before


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
    assert seeded_server.refs() == before


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
    # Not resolved: the venv's python is a symlink to the base interpreter.
    python = str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "python")
    proc = subprocess.run(
        ["ip", "netns", "exec", state_ns, python, "-m", "gitnetdiag.probe.h2native", *args],
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
