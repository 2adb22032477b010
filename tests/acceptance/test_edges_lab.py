"""Issues 14 and 23 (edges): each lab edge is named as the server that answered; with its default
window nginx ranks the HTTP/2 window first and the fix leads with nginx's own settings;
every edge with the fix applied ranks no culprit (or only ``client-http-stack``, proved by
the decrypted frames of a push libcurl 7.88.1 left hung: the client's bug, not the edge's); a
push whose pack that libcurl spoiled (one window sent twice, :mod:`tests.h2packs`) is
measured again.

Short on purpose: a 3 MiB pack over HTTP/2 and SSH only, stalls given up after 10 s.
Caddy 2.6's fixed 1 MiB window (Go's HTTP/2 server) binds only at a long RTT: the issue's
own case, 250 ms, with a 32 MiB pack (bounded pushes) against HTTP/1.1; the fix must say
Caddy has no such setting before it lists other servers' knobs. h2o 2.2's 16 MiB does not
bind in the lab; its healthy lab checks the fingerprint, like Caddy's at 50 ms. HAProxy's small
window is the ``h2-small-window`` case of ``test_diagnose_lab.py``; ``edge-buffering``
(nginx) is in that matrix too. Apache Traffic Server 9 (issue 23) keeps the protocol's
default window, 65535 B: its ``proxy.config.http2.initial_window_size_in`` must lead the fix.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import h2packs
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab

CASES = [
    ("nginx", "h2-small-window", "h2-flow-control-window", "http2_body_preread_size"),
    ("trafficserver", "h2-small-window", "h2-flow-control-window",
     "proxy.config.http2.initial_window_size_in"),
    ("caddy", "far", "h2-flow-control-window", "Caddy 2.6: there is no such setting"),
    ("nginx", "healthy", None, None),
    ("caddy", "healthy", None, None),
    ("h2o", "healthy", None, None),
]
FAR = {"rtt_ms": 250.0}
"""The ``far`` case: the healthy lab at 250 ms RTT."""
PRODUCT = {"nginx": "nginx/1.22", "caddy": "Caddy", "h2o": "h2o/2.2",
           "trafficserver": "ATS/9."}
HUNG_ATTEMPTS = 3
"""Diagnoses at most, while each one's HTTP/2 push is proved hung or spoiled by the client
(:func:`_client_spoiled_it`)."""
KNOWN_AS = {"caddy": "go"}
"""The knowledge-base entry each lab edge is identified as, where its id differs."""


def _diagnose(instance: str, out: Path, *, far: bool = False) -> dict[str, object]:
    size, protocols = ("32MiB", "h1,h2") if far else ("3MiB", "h2,ssh")
    # Near, a 3 MiB push takes about a second: 20 s ends one that libcurl 7.88.1 leaves
    # hung (it does so now and then even through Caddy's 1 MiB window), and --full keeps
    # the frames that show whose stall it was.
    extra = [] if far else ["--full"]
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", instance,
         "--size", size, "--timeout", "60" if far else "20", "--stall-timeout", "10",
         "--protocols", protocols, "--format", "json", "--out", str(out), *extra],
        capture_output=True, text=True, timeout=600,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    report: dict[str, object] = json.loads(proc.stdout)
    return report


def _client_spoiled_it(ids: list[str], culprits: object, run: Path) -> bool:
    """Whether the HTTP/2 push failed by git's libcurl 7.88.1, not by the edge, as the
    tool names it: proved hung by the client, or its pack spoiled on the way out."""
    if not ids or ids[0] != "client-http-stack":
        return False
    evidence = [e["what"] for e in culprits[0]["evidence"]]  # type: ignore[index]
    if any("SHA-1 trailer wrong" in what for what in evidence):
        # Under load the same libcurl sent one window of the body twice, and the edge
        # answered 502 to the pack its backend's git could not read (docs/lab.md): the
        # tool's trailer check, and git's own index-pack (tests/h2packs.py) agrees.
        assert h2packs.invalid_packs(run), evidence
        return True
    # libcurl left the push hung (its upload bug, fixed in curl 8.2), and the decrypted
    # frames prove it was the client (stream credit left, no END_STREAM), not the edge.
    # It strikes at a wait for WINDOW_UPDATE, so most often under a small window: seen
    # in 2 of 3 full runs of nginx-h2-small-window here, and twice in a row in a
    # fresh-clone run of 2026-11-27.
    assert any(what.endswith("stream send credit left") for what in evidence), evidence
    return True


@pytest.mark.parametrize(("edge", "fault", "culprit", "setting"), CASES,
                         ids=[f"{e}-{f}" for e, f, _, _ in CASES])
def test_edge_is_named_and_ranked(edge: str, fault: str, culprit: str | None,
                                  setting: str | None, lab_factory: LabFactory,
                                  tmp_path: Path) -> None:
    """The environment names the edge (header and SETTINGS); its fault ranks first with the
    edge's own setting leading the fix; the fixed edge ranks nothing."""
    far = fault == "far"
    state = lab_factory("healthy", edge=edge, **FAR) if far else lab_factory(fault, edge=edge)
    run = tmp_path / "run"
    report = _diagnose(state.instance, run, far=far)
    server = report["environment"]["server"]  # type: ignore[index]
    assert server["server"] == KNOWN_AS.get(edge, edge), server
    assert PRODUCT[edge] in server["product"], server
    if not far:
        assert server["ssh_banner"].startswith("SSH-2.0-OpenSSH"), server
    culprits = report["culprits"]
    ids = [c["id"] for c in culprits]  # type: ignore[attr-defined]
    for attempt in range(2, HUNG_ATTEMPTS + 1):
        if not _client_spoiled_it(ids, culprits, run):
            break
        if culprit is None and ids[0] == "client-http-stack":
            assert ids == ["client-http-stack"], ids  # nothing of the (healthy) edge's
            return
        # A push the client hung or spoiled has no rate to rank the window by: once more.
        run = tmp_path / f"run-{attempt}"
        report = _diagnose(state.instance, run, far=far)
        culprits = report["culprits"]
        ids = [c["id"] for c in culprits]  # type: ignore[attr-defined]
    if culprit is None:
        assert report["verdict"] == "healthy" and ids == [], ids
        return
    assert ids and ids[0] == culprit, ids
    fix = culprits[0]["fix"]  # type: ignore[index]
    assert setting is not None and setting in fix
    assert fix.index(setting) < fix.index("tune.h2.initial-window-size"), fix
    md = (run / "report.md").read_text()
    assert f"HTTPS server that answered: {PRODUCT[edge]}" in md
