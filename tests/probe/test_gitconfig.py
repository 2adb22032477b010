"""The isolated git config: the user's transport settings pass, nothing that adds refs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitnetdiag.probe.gitconfig import filter_config, parse_config_list, write_isolated_config
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.vocabulary import TransportKind


def test_filter_keeps_transport_settings_only() -> None:
    entries = parse_config_list(
        b"push.followtags\ntrue\0credential.helper\nstore\0credential.helper\n\0"
        b"http.https://h/.extraheader\nX-Token: 1\0url.git@h:.insteadof\nhttps://h/\0"
        b"remote.pushdefault\norigin\0core.hookspath\n/x\0push.pushoption\nci.skip\0"
        b"remote.origin.mirror\ntrue\0http.sslverify\0safe.directory\n*\0"
    )
    assert filter_config(entries) == [
        ("credential.helper", "store"), ("credential.helper", ""),
        ("http.https://h/.extraheader", "X-Token: 1"), ("url.git@h:.insteadof", "https://h/"),
        ("http.sslverify", None), ("safe.directory", "*"),
    ]


def test_isolated_config_is_what_git_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Credential helper, CA, proxy and rewrites reach git; followTags and hooks do not."""
    store = tmp_path / "creds"
    store.write_text("https://user:s3cret@git.example\n")
    user = tmp_path / "user.gitconfig"
    user.write_text(
        f"[push]\n\tfollowTags = true\n[core]\n\thooksPath = /tmp/hooks\n"
        f"[credential]\n\thelper = store --file={store}\n"
        f'[http]\n\tsslCAInfo = /etc/corp-ca.pem\n\tproxy = http://proxy:3128\n'
        f'[http "https://git.example/"]\n\textraHeader = X-Trace: "quoted \\\\ value"\n'
        f'[url "https://git.example/"]\n\tinsteadOf = ex:\n')
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "push.default")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "mirror")
    isolated = write_isolated_config(tmp_path / "isolated")
    assert isolated.path.stat().st_mode & 0o777 == 0o600
    assert "extraheader" not in isolated.path.read_text().lower()  # a secret: env only
    env = Transport(protocol=TransportKind.H1, url="https://git.example/r.git",
                    global_config=str(isolated.path),
                    secret_config=isolated.secret_entries).env()
    listed = subprocess.run(["git", "config", "--list"], env=env, capture_output=True,
                            text=True, cwd=tmp_path, timeout=30).stdout
    assert "push." not in listed and "hookspath" not in listed.lower()
    assert "http.sslcainfo=/etc/corp-ca.pem" in listed
    assert "http.proxy=http://proxy:3128" in listed
    assert 'http.https://git.example/.extraheader=X-Trace: quoted \\ value' in listed
    filled = subprocess.run(["git", "credential", "fill"], env=env, capture_output=True,
                            text=True, cwd=tmp_path, timeout=30,
                            input="protocol=https\nhost=git.example\n\n").stdout
    assert "password=s3cret" in filled
