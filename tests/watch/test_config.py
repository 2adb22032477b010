"""watch.yaml parsing: defaults, lab targets, and one clear error per mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.errors import InputError, UsageError
from gitnetdiag.watch.config import load_config, parse_config, parse_duration_s, parse_listen

FULL = """
listen: 0.0.0.0:9800
runs_dir: /srv/watch
keep_runs: 5
max_parallel: 2
targets:
  - name: edge
    urls:
      h1: https://ci:s3cret@git.example.com/team/repo.git
      h2: https://ci:s3cret@git.example.com/team/repo.git
      ssh: ssh://git@git.example.com/team/repo.git
    interval: 15m
    size: 8MiB
    timeout: 90s
    ca_file: /etc/ssl/ca.pem
    ssh_key: /etc/gitnetdiag/id_ed25519
    ssh_known_hosts: /etc/gitnetdiag/known_hosts
    keep_runs: 50
  - name: lab
    lab: demo
    lab_http: direct
    interval: 0
"""


def test_full_config_is_read_with_units() -> None:
    """Durations, sizes, per-target retention overriding the global one, lab defaults."""
    config = parse_config(FULL)
    assert (config.listen_host, config.listen_port) == ("0.0.0.0", 9800)
    assert config.runs_dir == Path("/srv/watch") and config.max_parallel == 2
    edge, lab = config.targets
    assert edge.protocols == ("h1", "h2", "ssh")
    assert (edge.interval_s, edge.timeout_s, edge.size_bytes) == (900.0, 90.0, 8 << 20)
    assert edge.keep_runs == 50 and lab.keep_runs == 5
    assert lab.lab == "demo" and lab.lab_http == "direct" and lab.urls == {}
    assert lab.protocols == ("h1", "h2", "ssh") and lab.interval_s == 0.0
    assert config.target("lab") is lab and config.target("nope") is None
    assert edge.cycle_deadline_s == 90.0 * 8 + 60.0


def test_protocols_select_among_the_urls() -> None:
    config = parse_config("targets:\n - name: a\n   urls: {h1: 'https://h/r', ssh: 'ssh://h/r'}\n"
                          "   protocols: [ssh]\n")
    assert config.targets[0].protocols == ("ssh",)


@pytest.mark.parametrize(("text", "message"), [
    ("targets: []", "config: no targets"),
    ("- a", "must be a mapping"),
    ("targets: [", "not valid YAML"),
    ("targets:\n - name: 'a b'\n   lab: x", "is not a target name"),
    ("targets:\n - name: a\n   lab: x\n - name: a\n   lab: y", "two targets are named 'a'"),
    ("targets:\n - name: a", "targets[0]: no remote to probe"),
    ("targets:\n - name: a\n   lab: x\n   urls: {h1: 'https://h/r'}", "either urls or lab"),
    ("targets:\n - name: a\n   urls: {ftp: 'ftp://h/r'}", "unknown protocol 'ftp'"),
    ("targets:\n - name: a\n   urls: {h1: 'https://h/r'}\n   protocols: [ssh]",
     "targets[0].protocols: ssh has no URL"),
    ("targets:\n - name: a\n   lab: x\n   interval: soon", "targets[0].interval"),
    ("targets:\n - name: a\n   lab: x\n   size: big", "targets[0].size"),
    ("targets:\n - name: a\n   lab: x\n   timeout: 0", "targets[0].timeout: must be positive"),
    ("targets:\n - name: a\n   lab: x\n   capture: maybe", "targets[0].capture"),
    ("targets:\n - name: a\n   lab: x\n   keep_runs: 0", "targets[0].keep_runs"),
    ("targets:\n - name: a\n   lab: x\n   intervall: 5s", "unknown key 'intervall'"),
    ("listen: nowhere\ntargets:\n - name: a\n   lab: x", "listen: cannot read"),
    ("targets:\n - name: a\n   lab: x\n   direction: clone",
     "targets[0].direction: expected push, fetch or both, got 'clone'"),
    ("targets:\n - name: a\n   lab: x\n   direction: [push, fetch]", "targets[0].direction"),
])
def test_mistakes_name_the_key(text: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_config(text)
    assert message in info.value.message


def test_direction_push_by_default_fetch_read_only_or_both() -> None:
    """A fetch target clones only (its run directory is the cycle's); both pushes first and
    clones into RUN-fetch; each direction's git runs count in the computed deadline."""
    config = parse_config(
        "targets:\n"
        " - {name: p, urls: {h1: 'https://h/r', ssh: 'ssh://h/r'}, timeout: 10s}\n"
        " - {name: f, urls: {h1: 'https://h/r', ssh: 'ssh://h/r'}, timeout: 10s,"
        " direction: fetch}\n"
        " - {name: b, lab: x, timeout: 10s, direction: both}\n")
    push, fetch, both = config.targets
    assert (push.direction, push.directions) == ("push", ("push",))
    assert fetch.directions == ("fetch",) and both.directions == ("push", "fetch")
    assert push.cycle_deadline_s == 10.0 * (2 * 2 + 2) + 60.0
    assert fetch.cycle_deadline_s == 10.0 * (2 + 3) + 60.0
    assert both.cycle_deadline_s == 10.0 * ((2 * 3 + 2) + (3 + 3)) + 60.0
    run = Path("/runs/b/20261122T000000.000Z")
    assert fetch.run_dirs(run) == {"fetch": run}
    assert both.run_dirs(run) == {"push": run,
                                  "fetch": Path("/runs/b/20261122T000000.000Z-fetch")}
    with pytest.raises(UsageError) as info:
        parse_config("targets:\n - {name: a, lab: x, direction: pull}")
    assert "fetch clones only" in info.value.hint


def test_durations_and_listen_addresses() -> None:
    assert [parse_duration_s(v, "x") for v in (90, "90s", "1.5m", "1h", "500ms")] == [
        90.0, 90.0, 90.0, 3600.0, 0.5]
    assert parse_listen("[::1]:9718") == ("::1", 9718)
    assert parse_listen(":9718") == ("0.0.0.0", 9718)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_config(tmp_path / "watch.yaml")
    assert "cannot read the watch configuration" in info.value.message


@pytest.mark.parametrize(("protocol", "url", "said", "hint"), [
    ("ssh", "ssh://git:hunter2@git.example.com/r.git", "urls.ssh carries a password", "ssh_key"),
    ("ssh", "git:hunter2@git.example.com:r.git", "urls.ssh carries a password", "ssh_key"),
    ("git", "git://ci:hunter2@git.example.com/r.git", "urls.git carries a user or password",
     "an h1, h2 or ssh URL"),
    ("git", "git://ci@git.example.com/r.git", "urls.git carries a user or password",
     "an h1, h2 or ssh URL"),
    ("h1", "ftp://git.example.com/r.git", "has scheme 'ftp'", "https://"),
    ("h2", "https:///r.git", "names no host", "https://"),
    ("ssh", "https://git.example.com/r.git", "has scheme 'https'", "ssh://"),
])
def test_watch_urls_get_the_command_lines_checks(protocol: str, url: str, said: str,
                                                 hint: str) -> None:
    """A password in an SSH or git:// URL, a foreign scheme or no host: the one line names
    the key, never shows the secret, and its hint speaks watch.yaml's words."""
    with pytest.raises(UsageError) as caught:
        parse_config(f"targets:\n  - name: t\n    urls: {{{protocol}: '{url}'}}\n")
    message = caught.value.message + " " + (caught.value.hint or "")
    assert caught.value.message.startswith(f"targets[0].urls.{protocol}")
    assert said in caught.value.message and hint in (caught.value.hint or "")
    assert "hunter2" not in message


def test_watch_urls_lose_their_fragment_and_keep_http_credentials() -> None:
    """git never sends a #fragment (a token there would only reach its argv); an HTTPS
    password is how a target authenticates, so it stays."""
    config = parse_config("targets:\n  - name: t\n    urls:\n"
                          "      h1: 'https://ci:s3cret@git.example.com/r.git#tok'\n")
    assert config.targets[0].urls == {"h1": "https://ci:s3cret@git.example.com/r.git"}
