"""``gitnetdiag diagnose [REMOTE]`` from the user's checkout (issue 45 item 1).

The remote's URL comes from git itself (``git remote get-url``: ``pushurl`` for pushes,
``insteadOf`` rewrites applied), the other transport is derived where the URL has a common
form and kept only when its port answers, and the report names the remote as the user knows
it. The pure derivation with crafted URLs, the resolution against real checkouts, and the
real command against a loopback ``git daemon``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.probe.gitremote import looks_like_url, push_refused, resolve_remote, unreachable
from gitnetdiag.remotederive import Derived, classify, derive
from tests.httpremote import TOKEN, HttpRemote
from tests.probe.conftest import serve_daemon


@pytest.mark.parametrize(("url", "option", "host", "path"), [
    ("https://git.example.test/team/repo.git", "--http", "git.example.test", "/team/repo.git"),
    ("ssh://git@git.example.test:2222/team/repo.git", "--ssh", "git.example.test",
     "/team/repo.git"),
    ("git@git.example.test:team/repo.git", "--ssh", "git.example.test", "/team/repo.git"),
    ("git://198.18.2.2/lab.git", "--git", "198.18.2.2", "/lab.git"),
    ("https://[2001:db8::1]/r.git", "--http", "2001:db8::1", "/r.git"),
])
def test_a_url_is_read_as_its_transport(url: str, option: str, host: str, path: str) -> None:
    remote = classify(url)
    assert remote is not None
    assert (remote.option, remote.host, remote.path) == (option, host, path)


@pytest.mark.parametrize("url", ["/srv/git/repo.git", "file:///srv/repo.git", "../repo",
                                 "ftp://host/r.git"])
def test_a_local_or_foreign_url_is_no_network_transport(url: str) -> None:
    assert classify(url) is None


def test_https_and_ssh_derive_each_other_in_the_common_forms() -> None:
    https = classify("https://git.example.test/team/repo.git")
    assert https is not None
    [ssh] = derive(https)
    assert (ssh.option, ssh.url, ssh.port) == ("--ssh", "ssh://git@git.example.test/team/repo.git",
                                               22)
    assert ssh.note == "SSH URL derived from the HTTPS remote"
    scp = classify("git@git.example.test:team/repo.git")
    assert scp is not None
    [http] = derive(scp)
    assert (http.option, http.url, http.port) == ("--http", "https://git.example.test/team/repo.git",
                                                  443)


@pytest.mark.parametrize("url", ["ssh://git@host.test/~alice/repo.git", "git://host.test/r.git",
                                 "https://host.test/"])
def test_a_form_with_no_counterpart_derives_nothing(url: str) -> None:
    remote = classify(url)
    assert remote is not None and derive(remote) == ()


def test_a_remote_name_is_no_url() -> None:
    assert not looks_like_url("origin") and not looks_like_url("upstream")
    assert looks_like_url("git@host.test:team/r.git") and looks_like_url("https://h.test/r")


def _checkout(tmp_path: Path, *config: tuple[str, str]) -> Path:
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    for key, value in config:
        subprocess.run(["git", "-C", str(checkout), "config", key, value], check=True)
    return checkout


def test_the_url_is_gits_own_pushurl_and_insteadof_applied(tmp_path: Path) -> None:
    checkout = _checkout(
        tmp_path, ("remote.origin.url", "corp:team/repo.git"),
        ("remote.origin.pushurl", "https://push.example.test/team/repo.git"),
        ("url.https://fetch.example.test/.insteadOf", "corp:"))
    asked: list[tuple[str, int]] = []

    def left_out(other: Derived) -> str | None:
        asked.append((other.host, other.port))
        return None if other.host == "fetch.example.test" else "port 22 did not answer"

    push = resolve_remote("origin", push=True, cwd=checkout, left_out=left_out)
    assert push.name == "origin"
    assert push.urls == {"--http": "https://push.example.test/team/repo.git"}
    assert any(n.endswith("left out: port 22 did not answer") for n in push.notes), push.notes
    fetch = resolve_remote("origin", push=False, cwd=checkout, left_out=left_out)
    assert fetch.urls == {"--http": "https://fetch.example.test/team/repo.git",
                          "--ssh": "ssh://git@fetch.example.test/team/repo.git"}
    assert "SSH URL derived from the HTTPS remote: ssh://git@fetch.example.test/team/repo.git" \
        in fetch.notes
    assert asked == [("push.example.test", 22), ("fetch.example.test", 22)]


def test_no_token_of_the_remote_reaches_a_note(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path, ("remote.origin.url",
                                    "https://alice:s3cr3tToken@git.example.test/team/repo.git"))
    resolved = resolve_remote("origin", push=True, cwd=checkout, left_out=lambda other: "no")
    assert not any("s3cr3tToken" in note for note in resolved.notes), resolved.notes


def test_a_missing_remote_names_the_ones_there(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path, ("remote.upstream.url", "https://h.test/r.git"))
    with pytest.raises(UsageError) as raised:
        resolve_remote("origin", push=True, cwd=checkout)
    assert "no remote 'origin'" in str(raised.value)
    assert "upstream" in (raised.value.hint or "")
    with pytest.raises(UsageError) as local:
        subprocess.run(["git", "-C", str(checkout), "remote", "add", "disk", "/srv/r.git"],
                       check=True)
        resolve_remote("disk", push=True, cwd=checkout)
    assert "not a URL gitnetdiag probes over the network" in str(local.value)


def test_diagnose_in_a_checkout_probes_its_origin_and_names_it(git_daemon: str,
                                                               tmp_path: Path) -> None:
    """No URL option, in a checkout whose origin is a loopback git daemon: the pushes go to
    origin's URL, the terminal and every report name the remote, and it says that no other
    transport could be derived from a git:// URL."""
    checkout = _checkout(tmp_path, ("remote.origin.url", git_daemon))
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--size", "1MiB", "--out",
         str(tmp_path / "run"), "--no-capture", "--format", "json"],
        capture_output=True, text=True, timeout=300, cwd=checkout)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"remote: remote 'origin' {git_daemon}" in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    assert report["environment"]["remote_name"] == "origin"
    assert any("only this transport was probed" in n
               for n in report["environment"]["remote_notes"])
    assert [p["protocol"] for p in json.loads(
        (tmp_path / "run" / "manifest.json").read_text())["protocols"]] == ["git"]
    markdown = (tmp_path / "run" / "report.md").read_text()
    assert f"- target: `remote origin: {git_daemon} (path: direct)`" in markdown, markdown


def test_a_remote_the_checkout_lacks_is_one_line_and_exit_2(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "gitnetdiag", "diagnose", "upstream"],
                          capture_output=True, text=True, timeout=60, cwd=checkout)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "this checkout has no remote 'upstream'" in proc.stderr


@pytest.fixture
def read_only_daemon(tmp_path: Path) -> Iterator[str]:
    """git:// URL of a repository served by a git daemon that does not run receive-pack
    (as a read-only mirror): pushes are refused with 'access denied'."""
    base = tmp_path / "ro"
    bare = base / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    yield from serve_daemon(base, receive_pack=False)


def test_push_check_tells_a_read_only_server_from_one_that_takes_pushes(
        read_only_daemon: str, git_daemon: str, tmp_path: Path) -> None:
    said = push_refused(read_only_daemon)
    assert said is not None and "access denied" in said, said
    assert push_refused(git_daemon) is None


def test_a_remote_that_refuses_pushes_is_diagnosed_as_clones(read_only_daemon: str,
                                                             tmp_path: Path) -> None:
    """No --direction, origin a read-only git daemon: the run is a fetch run (nothing
    written), and the terminal and the report say why."""
    checkout = _checkout(tmp_path, ("remote.origin.url", read_only_daemon))
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--out", str(tmp_path / "run"),
         "--no-capture", "--format", "json"],
        capture_output=True, text=True, timeout=300, cwd=checkout)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "remote: pushes refused (" in proc.stderr and "diagnosing clones instead" in \
        proc.stderr, proc.stderr
    assert (tmp_path / "run" / "fetch.json").is_file()
    assert not (tmp_path / "run" / "manifest.json").exists()
    report = json.loads(proc.stdout)
    assert report["direction"] == "fetch"
    assert report["remote"]["name"] == "origin"
    assert any(n.startswith("pushes refused") for n in report["remote"]["notes"])


def test_a_derived_transport_that_does_not_serve_the_user_is_left_out(
        git_daemon: str, tmp_path: Path) -> None:
    """The port answers but the repository is not there for this user (ls-remote fails):
    left out with git's words, never probed to fail the run."""
    port = int(git_daemon.rsplit(":", 1)[1].split("/")[0])
    there = Derived(option="--http", url=git_daemon, host="127.0.0.1", port=port, note="n")
    assert unreachable(there) is None
    missing = Derived(option="--http", url=git_daemon.replace("repo.git", "nothing.git"),
                      host="127.0.0.1", port=port, note="n")
    why = unreachable(missing)
    assert why is not None and why.startswith("git ls-remote: "), why
    closed = Derived(option="--ssh", url="ssh://git@127.0.0.1:1/r.git", host="127.0.0.1",
                     port=1, note="n")
    assert unreachable(closed) == "127.0.0.1 port 1 did not answer within 3 s"


def test_load_takes_a_remote_name_of_the_checkout(git_daemon: str, tmp_path: Path) -> None:
    checkout = _checkout(tmp_path, ("remote.origin.url", git_daemon))
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "load", "origin", "--ops", "ls-remote",
         "--concurrency", "1", "--duration", "2s", "--no-live", "--json", "-"],
        capture_output=True, text=True, timeout=120, cwd=checkout)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["steps"][0]["ok"] > 0, report["steps"]


def test_the_push_check_puts_no_token_on_a_command_line(http_remote: HttpRemote) -> None:
    """The remote's URL carries a token (user:token@, as CI remotes do): the dry-run push
    reaches the server authenticated (it accepts pushes: no refusal), and no process's argv
    held the token while it ran."""
    from tests.probe.test_ways_out import _ArgvSampler

    url = http_remote.url.split("?", 1)[0]
    port = url.rsplit(":", 1)[1].split("/", 1)[0]
    sampler = _ArgvSampler(TOKEN, port)
    sampler.start()
    try:
        assert push_refused(url) is None
    finally:
        sampler.stop.set()
        sampler.join()
    assert sampler.samples >= 2 and sampler.hits == set(), sampler.hits
