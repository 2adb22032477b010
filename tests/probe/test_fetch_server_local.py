"""``--host-local``: the server runs here, so each clone also samples the server's own socket
(a loopback git daemon serving this project's history), and the report shows it."""

from __future__ import annotations

import json
from pathlib import Path

from gitnetdiag.pipeline import diagnose_clones
from gitnetdiag.probe.fetchrun import run_fetch_probe
from gitnetdiag.probe.options import ProbeOptions
from gitnetdiag.report import render_markdown, report_dict
from gitnetdiag.report.transfers import SENDER_TITLE
from gitnetdiag.vocabulary import TransportKind
from tests.probe.test_fetch_daemon import history_daemon

__all__ = ["history_daemon"]


def test_a_local_servers_socket_is_sampled_beside_gits(
        history_daemon: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = history_daemon
    out = tmp_path / "run"
    outcome = run_fetch_probe(ProbeOptions(
        urls={TransportKind.GIT: url}, protocols=(TransportKind.GIT,), size_bytes=0, seed=0,
        repo=None, repeat=1, ca_file=None, insecure=False, ssh_command=None, out_dir=out,
        full=False, burst=0, timeout_s=120.0, capture=False, server_local=True))
    assert outcome.error is None
    (record,) = outcome.manifest.protocols[0].fetches
    assert outcome.manifest.options["server_tcpinfo"] == "this host"
    assert record.server_tcpinfo_samples >= 1
    rows = [json.loads(line) for line in
            (out / record.artifacts["server_tcpinfo"]).read_text().splitlines()]
    port = url.split(":")[2].split("/")[0]
    client = {json.loads(line)["local"] for line in
              (out / record.artifacts["tcpinfo"]).read_text().splitlines()}
    assert rows and all(row["local"].endswith(f":{port}") for row in rows)
    assert {row["peer"] for row in rows} <= client  # the clone's own connection only
    assert max(row["counters"]["bytes_sent"] for row in rows) > 100_000
    diagnosis = diagnose_clones(out)
    assert diagnosis is not None
    (obs,) = diagnosis.observations.transfers
    assert obs.sender is not None and obs.sender.sent_bytes > 100_000
    assert SENDER_TITLE in render_markdown(diagnosis)
    (fetch,) = report_dict(diagnosis)["fetches"]
    assert 0 <= fetch["server_sndbuf_limited_share"] <= 1
    assert fetch["sender"]["source"] == "ss -tin, server (this host)"


def test_without_a_local_server_nothing_is_sampled_on_the_server(
        history_daemon: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = history_daemon
    outcome = run_fetch_probe(ProbeOptions(
        urls={TransportKind.GIT: url}, protocols=(TransportKind.GIT,), size_bytes=0, seed=0,
        repo=None, repeat=1, ca_file=None, insecure=False, ssh_command=None,
        out_dir=tmp_path / "run", full=False, burst=0, timeout_s=120.0, capture=False))
    (record,) = outcome.manifest.protocols[0].fetches
    assert record.server_tcpinfo_samples == 0 and "server_tcpinfo" not in record.artifacts
    assert "server_tcpinfo" not in outcome.manifest.options
