"""Pure helpers of the probe: URLs, failure kinds, ref guards, summary (sizes: test_vocabulary)."""

from __future__ import annotations

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.probe.gitpush import (
    FailureKind,
    Transport,
    classify_git_stderr,
    delete_argv,
    last_stderr_line,
    parse_ls_remote,
    push_argv,
)
from gitnetdiag.probe.runner import endpoint_of
from gitnetdiag.rundir import redact_url
from gitnetdiag.vocabulary import TransportKind


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://bob:s3cret@git.example/r.git", "https://***@git.example/r.git"),
        ("https://ghp_TOKEN@git.example:8443/r.git", "https://***@git.example:8443/r.git"),
        ("https://git.example/r.git?token=abc&x=1",
         "https://git.example/r.git?token=***&x=***"),
        ("ssh://git@host:2222/r.git", "ssh://git@host:2222/r.git"),
        ("ssh://git:pw@host/r.git", "ssh://git@host/r.git"),
        ("git@host:group/r.git", "git@host:group/r.git"),
        ("git://198.18.2.2:9418/lab.git", "git://198.18.2.2:9418/lab.git"),
        ("https://[::1]:443/r.git", "https://[::1]:443/r.git"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_endpoint_of() -> None:
    assert endpoint_of("https://h.example/r.git") == ("h.example", 443)
    assert endpoint_of("https://h:8443/r.git") == ("h", 8443)
    assert endpoint_of("ssh://u@h/r") == ("h", 22)
    assert endpoint_of("git@h:r.git") == ("h", 22)
    assert endpoint_of("git://h/r") == ("h", 9418)
    with pytest.raises(UsageError):
        endpoint_of("ftp://h/r")
    with pytest.raises(UsageError):
        endpoint_of("https://h:99999/r")


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        ("fatal: unable to access 'https://h/': Failed to connect to h port 443 after 0 ms: "
         "Couldn't connect to server\nConnection refused", FailureKind.REFUSED),
        ("fatal: unable to access 'https://198.18.2.2:8443/git/lab.git/': Failed to connect to "
         "198.18.2.2 port 8443 after 51 ms: Couldn't connect to server", FailureKind.REFUSED),
        ("fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection "
         "refused", FailureKind.REFUSED),
        ("fatal: unable to access 'https://h/': server certificate verification failed. "
         "CAfile: /x CRLfile: none", FailureKind.TLS),
        ("gnd-git@198.18.2.2: Permission denied (publickey).\nfatal: Could not read from "
         "remote repository.", FailureKind.AUTH),
        ("Host key verification failed.\nfatal: Could not read from remote", FailureKind.HOST_KEY),
        ("fatal: unable to access 'https://h/': Could not resolve host: h",
         FailureKind.UNREACHABLE),
        ("kex_exchange_identification: read: Connection reset by peer", FailureKind.RESET),
        ("fatal: the remote end hung up unexpectedly", FailureKind.RESET),
        (" ! [remote rejected] x -> x (pre-receive hook declined)", FailureKind.REJECTED),
        ("something odd", FailureKind.OTHER),
    ],
)
def test_classify_git_stderr(stderr: str, kind: FailureKind) -> None:
    assert classify_git_stderr(stderr) is kind


def test_last_stderr_line_resolves_progress() -> None:
    stderr = "Writing objects:  50% (1/2)\rWriting objects: 100% (2/2), done.\n\n"
    assert last_stderr_line(stderr) == "Writing objects: 100% (2/2), done."
    assert last_stderr_line("") == ""


def test_push_and_delete_only_touch_probe_branches() -> None:
    transport = Transport(protocol=TransportKind.H2, url="https://h/r.git", ca_file="/ca.pem")
    argv = push_argv(transport, "a" * 40, "gitnetdiag/probe-1234abcd")
    assert argv[-1] == f"{'a' * 40}:refs/heads/gitnetdiag/probe-1234abcd"
    assert "http.version=HTTP/2" in argv and "http.sslCAInfo=/ca.pem" in argv
    delete = delete_argv(transport, "gitnetdiag/probe-1234abcd", "a" * 40)
    assert delete[-1] == ":refs/heads/gitnetdiag/probe-1234abcd"
    for args in (argv, delete):
        assert not {"--force", "-f", "--mirror", "--all", "--prune", "--delete"} & set(args)
    for bad in ("main", "gitnetdiag/other", "gitnetdiag/probe-../../main"):
        with pytest.raises(UsageError):
            push_argv(transport, "a" * 40, bad)
        with pytest.raises(UsageError):
            delete_argv(transport, bad, "a" * 40)
    env = transport.env()
    assert env["GIT_SSL_CAINFO"] == "/ca.pem"
    assert env["GIT_TERMINAL_PROMPT"] == "0"


def test_parse_ls_remote() -> None:
    out = "1111\trefs/heads/main\n2222\trefs/tags/v1\n\ngarbage\n"
    assert parse_ls_remote(out) == {"refs/heads/main": "1111", "refs/tags/v1": "2222"}
