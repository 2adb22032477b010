"""Secrets reach git through its environment: the URL's password, extraHeader values."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gitnetdiag.probe.gitconfig import split_secret_entries
from gitnetdiag.probe.gitpush import Transport, ls_remote_argv, push_argv, url_credential_split
from gitnetdiag.vocabulary import TransportKind


def test_the_url_on_the_command_line_has_no_password() -> None:
    assert url_credential_split("https://bob:p%40ss@git.example/r.git") == (
        "https://bob@git.example/r.git", "bob", "p@ss")
    assert url_credential_split("https://TOKEN123@git.example:8443/r.git") == (
        "https://git.example:8443/r.git", "TOKEN123", None)
    assert url_credential_split("https://git.example/r.git") == (
        "https://git.example/r.git", None, None)
    assert url_credential_split("ssh://git@host/r.git") == ("ssh://git@host/r.git", None, None)
    transport = Transport(protocol=TransportKind.H1, url="https://bob:s3cr3t@git.example/r.git")
    argv = push_argv(transport, "a" * 40, "gitnetdiag/probe-1")
    assert not any("s3cr3t" in arg for arg in argv)
    assert "https://bob@git.example/r.git" in ls_remote_argv(transport)


def test_git_gets_the_password_from_the_helper_in_its_environment(tmp_path: Path) -> None:
    """git credential fill, as git runs it for the push, answers with the URL's
    password: from the environment, through a helper whose command line names none."""
    transport = Transport(protocol=TransportKind.H2, url="https://bob:s3cr3t@git.example/r.git")
    env = transport.env()
    assert "s3cr3t" not in " ".join(v for k, v in env.items() if k.startswith("GIT_CONFIG_"))
    filled = subprocess.run(["git", "credential", "fill"], env=env, capture_output=True,
                            text=True, cwd=tmp_path, timeout=30,
                            input="protocol=https\nhost=git.example\nusername=bob\n\n").stdout
    assert "password=s3cr3t" in filled.splitlines()
    assert "GITNETDIAG_PASSWORD" not in Transport(protocol=TransportKind.SSH, url="ssh://h/r").env()


def test_secret_entries_leave_the_file_with_every_entry_of_their_key() -> None:
    """extraHeader (and anything holding a URL password) goes to the environment, in
    order, its empty reset value included; the rest stays in the file."""
    entries: list[tuple[str, str | None]] = [
        ("http.extraheader", "X-A: 1"), ("http.sslverify", "true"),
        ("http.extraheader", ""), ("http.https://h/.extraheader", "Authorization: Bearer T"),
        ("http.proxy", "http://u:pw@proxy:3128"), ("credential.helper", "store"),
    ]
    public, secret = split_secret_entries(entries)
    assert public == [("http.sslverify", "true"), ("credential.helper", "store")]
    assert secret == [entries[0], entries[2], entries[3], entries[4]]
