"""The native HTTP/2 probes get credentials the way git does, both directions (issue 34 item
4): the push's receive-pack probe and the download's upload-pack fetch, against loopback
HTTP/2 servers that demand Basic auth of every request. The download sent none and
reported the server's 401 as ``upload-pack-refused``; now the first request goes without,
the 401 brings the credential (the helper, else the URL), and a missing or refused one is
the push's ``auth-failed`` line, never the secret."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gitnetdiag.errors import NetworkError
from gitnetdiag.probe import fetchh2
from gitnetdiag.probe.credentials import http_access
from gitnetdiag.probe.h2native import h2_push_probe
from gitnetdiag.probe.repo import generate_repo, pack_for_commit
from tests.probe.h2server import start_h2_git_server
from tests.probe.h2uploadserver import start_h2_upload_server
from tests.probe.test_credentials import BASIC, TOKEN, git_env, store_helper

DIRECTIONS = ("push", "fetch")


@dataclass
class Server:
    url: str
    ca_file: str
    seen_authorization: list[str | None]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, str]:
    repo = generate_repo(tmp_path_factory.mktemp("repo") / "repo", 300_000, seed=13)
    return repo.path, pack_for_commit(repo.path, repo.head_oid), repo.head_oid


@pytest.fixture(params=DIRECTIONS)
def server(request: pytest.FixtureRequest, tmp_path: Path,
           generated: tuple[Path, bytes, str]) -> Iterator[tuple[str, Server]]:
    """An HTTP/2 server for the direction that demands ``BASIC``: receive-pack's for a
    push, upload-pack's (serving the generated repository) for a download."""
    direction = str(request.param)
    directory = tmp_path / "srv"
    directory.mkdir()
    if direction == "push":
        push_server = start_h2_git_server(directory, window_bytes=65_535, update_delay_s=0.0,
                                          authorization=BASIC)
        try:
            yield direction, Server(push_server.url, push_server.ca_file,
                                    push_server.seen_authorization)
        finally:
            push_server.stop()
        return
    bare = tmp_path / "served.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(generated[0]), str(bare)], check=True,
                   timeout=60)
    fetch_server = start_h2_upload_server(directory, bare, credit_delay_s=0.0,
                                          authorization=BASIC)
    try:
        yield direction, Server(fetch_server.url, fetch_server.ca_file,
                                fetch_server.seen_authorization)
    finally:
        fetch_server.stop()


def _probe(direction: str, server: Server, env: dict[str, str],
           generated: tuple[Path, bytes, str]) -> str:
    """Run the direction's native probe; ``ok`` or the error line it ended with."""
    access = http_access(server.url, ca_file=server.ca_file, env=env)
    if direction == "push":
        _, pack, oid = generated
        try:
            ledger = h2_push_probe(server.url, pack=pack, new_oid=oid, probe_id="c1",
                                   access=access, timeout_s=30)
        except NetworkError as exc:
            return f"{exc.reference}: {exc.one_line()}"
        assert ledger.auth == "credential-helper"
        return "ok"
    record = fetchh2.h2_download(server.url, access=access, label="large",
                                 window_bytes=fetchh2.LARGE_WINDOW_BYTES, branch=None,
                                 budget_s=None, stall_timeout_s=10.0, timeout_s=30.0)
    if record.outcome == "ok":
        assert record.received_bytes > 300_000
        return "ok"
    return record.error


def test_the_credential_helper_answers_after_a_401(
        server: tuple[str, Server], tmp_path: Path, generated: tuple[Path, bytes, str]) -> None:
    direction, srv = server
    port = srv.url.split(":")[2].split("/")[0]
    env = git_env(tmp_path, store_helper(tmp_path, f"https://probe:{TOKEN}@127.0.0.1%3a{port}"))
    assert _probe(direction, srv, env, generated) == "ok"
    # As git: the first request goes without a credential, every later one with it.
    assert srv.seen_authorization[0] is None
    assert set(srv.seen_authorization[1:]) == {BASIC}


@pytest.mark.parametrize("secret", ["", "wrong-secret-5c1"])
def test_a_missing_or_refused_credential_is_the_auth_line(
        server: tuple[str, Server], tmp_path: Path, generated: tuple[Path, bytes, str],
        secret: str) -> None:
    direction, srv = server
    port = srv.url.split(":")[2].split("/")[0]
    config = store_helper(tmp_path, f"https://probe:{secret}@127.0.0.1%3a{port}") if secret else ""
    line = _probe(direction, srv, git_env(tmp_path, config), generated)
    assert line.startswith("auth-failed: "), line
    assert "upload-pack-refused" not in line
    expected = "refused the credential from credential-helper" if secret else "has no credential"
    assert expected in line
    assert "check the credential helper / token for https://127.0.0.1:" in line or \
        direction == "fetch"  # the download's record keeps the message, not the hint
    if secret:
        assert secret not in line
