"""Issue 43's acceptance for forward proxies and jump hosts (:mod:`gitnetdiag.lab.proxyfaults`).

- ``forward-proxy-buffer``: HTTPS goes through tinyproxy whose sockets have a fixed 64 KiB
  buffer, SSH direct. One ``diagnose --lab --direction both``: the pushes rank
  ``tcp-receive-window-clamp`` first, the clones ``server-send-buffer``, each naming the
  proxy (its address and ``tinyproxy``, which it says in its ``Server`` header) as the hop
  holding the knob with the proxy's setting first in the fix; the path says HTTP/2 through
  the proxy and SSH direct, in the JSON and on the target line. No culprit is ranked on
  the HTTP/2-vs-SSH difference alone (``h2-frame-settings`` is set aside, its summary saying
  the first hops differ and the proxy's leg explains it; a comparing culprit still ranked
  says the first hops differ); the clone's summary names the proxy's socket, not the
  server's; the path check timed the leg to the proxy (manifest and target line).
- ``forward-proxy``: the same proxy without the shim: healthy both ways, no TCP window or
  send-buffer culprit, the same path.
- ``ssh-jump-host``: SSH by ``ProxyJump`` (the lab's ssh config): the push works and the
  path shows client -> jump host -> server; the native SSH push and download go through the
  jump host too (their records say ``via`` it, the push's TCP_INFO is of the leg to it, no
  "connected directly" warning).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.proxyfaults import (
    JUMP_IP,
    PROXY_FAULT_CULPRIT,
    PROXY_FAULT_PROBE_ARGS,
    PROXY_FETCH_CULPRIT,
    PROXY_IP,
    PROXY_PORT,
)
from gitnetdiag.model.lab.state import state_dir
from tests.conftest import LabFactory

pytestmark = [pytest.mark.lab, pytest.mark.lab_lane("busy")]

PROXY = f"{PROXY_IP}:{PROXY_PORT}"
WINDOW_CULPRITS = {"tcp-receive-window-clamp", "tcp-window-scaling-off", "server-send-buffer",
                   "client-tcp-receive-window-clamp"}


def _diagnose(instance: str, fault: str, out: Path, *extra: str) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "diagnose", "--lab", "--lab-instance", instance,
         "--size", "3MiB", "--format", "json", "--out", str(out),
         *PROXY_FAULT_PROBE_ARGS[fault], *extra],
        capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report, time.monotonic() - started


def _paths(part: dict[str, Any]) -> dict[str, dict[str, Any]]:
    paths = part["paths"] if "paths" in part else part["environment"]["paths"]
    return {p["protocol"]: p for p in paths}


def _check_path(part: dict[str, Any]) -> None:
    paths = _paths(part)
    assert paths["h2"]["kind"] == "http-proxy" and paths["h2"]["proxy"] == PROXY, paths
    assert paths["h2"]["product"] == "tinyproxy", paths
    assert paths["h2"]["said"].startswith("tinyproxy/"), paths
    assert paths["ssh"]["kind"] == "direct", paths


COMPARING = {"h2-flow-control-window", "h2-frame-settings", "ssh-channel-window",
             "client-http-stack", "client-http2-window", "edge-response-buffering"}
"""The culprits whose evidence compares two protocols' rates (``Finding.compares``)."""


def _check_comparisons(part: dict[str, Any]) -> None:
    """HTTP/2 went through the proxy, SSH direct: no comparing culprit ranks without saying
    the first hops differ, and h2-frame-settings is not ranked on that difference."""
    for culprit in part["culprits"]:
        assert culprit["id"] != "h2-frame-settings", culprit["summary"]
        if culprit["id"] in COMPARING:
            assert "first hop" in culprit["summary"], culprit["summary"]


def _check_leg_timed(run_dir: Path) -> None:
    """Both halves' records hold a TCP-connect check of the leg to the proxy, for HTTP/2."""
    for record in (run_dir / "manifest.json", run_dir.with_name("run-fetch") / "fetch.json"):
        paths = json.loads(record.read_text())["paths"]
        seen = [(p["endpoint"], p["connect_rtt_min_s"], p.get("first_hop_of")) for p in paths]
        print(f"  {record.parent.name}/{record.name}: paths {seen}")
        leg = [p for p in paths if p.get("first_hop_of")]
        assert [(p["endpoint"], p["first_hop_of"]) for p in leg] == [(PROXY, ["h2"])], seen
        assert leg[0]["reach"] == "open" and leg[0]["connect_rtt_min_s"] > 0.04, leg


def _rates(part: dict[str, Any]) -> str:
    if "fetches" in part:
        return ", ".join(f"{f['protocol']} {f['rate_bytes_per_s'] / 1e6:.2f} MB/s"
                         for f in part["fetches"] if f.get("rate_bytes_per_s"))
    return ", ".join(f"{name} {p['rate_bytes_per_s'] / 1e6:.2f} MB/s"
                     for name, p in part["protocols"].items() if p.get("rate_bytes_per_s"))


def _server_log(instance: str, lines: int = 15) -> str:
    """The last lines of the lab's Apache error log (git-http-backend's stderr goes there)."""
    log = LabPaths(root=state_dir(instance)).run / "apache-error.log"
    if not log.is_file():
        return f"no {log}"
    return f"{log}: " + " | ".join(log.read_text(errors="replace").splitlines()[-lines:])


def _target_line(out: Path) -> str:
    text = (out / "report.md").read_text()
    return next(line for line in text.splitlines() if "path:" in line)


def test_buffered_proxy_is_the_hop_of_the_push_and_clone_culprits(
        lab_factory: LabFactory, tmp_path: Path) -> None:
    fault = "forward-proxy-buffer"
    state = lab_factory(fault)
    report, wall_s = _diagnose(state.instance, fault, tmp_path / "run", "--direction", "both")
    print(f"{fault} --direction both: {wall_s:.1f} s")
    expected = {"push": PROXY_FAULT_CULPRIT[fault], "fetch": PROXY_FETCH_CULPRIT[fault]}
    for direction, part in report["parts"].items():
        ranked = [(c["id"], c["score"], round(c["cost_s"], 2)) for c in part["culprits"]]
        aside = [(c["id"], c["score"]) for c in part.get("dropped", [])
                 if "Not ranked: " in c["summary"]]
        print(f"  {direction}: verdict {part['verdict']}; rates {_rates(part)}; ranked {ranked}; "
              f"set aside {aside}")
        _check_comparisons(part)
        # Once in a fresh-clone run (2026-12-04) the HTTP/2 clone's server-side git died
        # mid-"Compressing objects" (Apache ended the stream 52 ms after its 200: early EOF,
        # "cause not identified", rightly): the server's log says why, next time.
        assert part["culprits"], f"{part['headline']}; {_server_log(state.instance)}"
        top = part["culprits"][0]
        assert top["id"] == expected[direction], ranked
        assert f"Measured on the leg client -> proxy {PROXY} (tinyproxy/" in top["summary"], top
        assert "SSH went direct, HTTP/2 through the proxy" in top["summary"], top["summary"]
        assert top["fix"].startswith(f"On the forward proxy {PROXY} (Tinyproxy, tinyproxy/"), top
        assert "tinyproxy.conf has no buffer setting" in top["fix"], top["fix"]
        _check_path(part)
    fetch_top = report["parts"]["fetch"]["culprits"][0]
    assert fetch_top["summary"].startswith(f"the forward proxy {PROXY}'s socket (tinyproxy/"), \
        fetch_top["summary"]
    assert "the server's own socket" not in fetch_top["summary"], fetch_top["summary"]
    line = _target_line(tmp_path / "run")
    print(f"  {line}")
    assert f"HTTP/2 client -> proxy {PROXY} (tinyproxy/" in line and "SSH direct" in line, line
    assert f"checked: HTTP/2's leg to {PROXY}, TCP connect RTT " in line, line
    _check_leg_timed(tmp_path / "run")


def test_unbuffered_proxy_is_healthy_and_still_on_the_path(lab_factory: LabFactory,
                                                          tmp_path: Path) -> None:
    fault = "forward-proxy"
    state = lab_factory(fault)
    report, wall_s = _diagnose(state.instance, fault, tmp_path / "run", "--direction", "both")
    print(f"{fault} --direction both: {wall_s:.1f} s")
    for direction, part in report["parts"].items():
        ranked = [(c["id"], c["score"]) for c in part["culprits"]]
        print(f"  {direction}: verdict {part['verdict']}; rates {_rates(part)}; ranked {ranked}")
        assert not WINDOW_CULPRITS & {c["id"] for c in part["culprits"]}, ranked
        assert part["verdict"] == "healthy", ranked
        _check_comparisons(part)
        _check_path(part)


@pytest.mark.lab_lane("fail")  # the path, the capture and TCP_INFO peers: no rate asserted;
# its own lab (lab_factory), about 42 s (4 diagnose runs, native probes on in two) off the busy lane
def test_ssh_through_a_jump_host_shows_the_jump_on_its_path(lab_factory: LabFactory,
                                                            tmp_path: Path) -> None:
    fault = "ssh-jump-host"
    state = lab_factory(fault)
    report, wall_s = _diagnose(state.instance, fault, tmp_path / "run")
    ssh = _paths(report)["ssh"]
    run = report["protocols"]["ssh"]
    print(f"{fault}: {wall_s:.1f} s, verdict {report['verdict']}, path {ssh}, "
          f"SSH push {run['rate_bytes_per_s'] / 1e6:.2f} MB/s, ranked "
          f"{[(c['id'], c['score'], c['summary']) for c in report['culprits']]}")
    assert ssh["kind"] == "ssh-proxy" and ssh["source"] == "ssh -G proxyjump", ssh
    assert JUMP_IP in ssh["proxy"], ssh
    assert run["pushes_ok"] == 1, run
    line = _target_line(tmp_path / "run")
    print(f"  {line}")
    assert f"SSH client -> SSH proxy {ssh['proxy']} -> server" in line, line
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    capture = manifest["protocols"][0]["pushes"][0]["artifacts"].get("capture")
    assert capture, "the SSH leg to the jump host was not captured"
    _native_through_the_jump(tmp_path / "run", f"{state.ssh_user}@{JUMP_IP}:22", run)
    _download_through_the_jump(state.instance, tmp_path, f"{state.ssh_user}@{JUMP_IP}:22")
    _through_proxy_commands(state.instance, Path(state.ssh_config), tmp_path)


def _download_through_the_jump(instance: str, tmp_path: Path, via: str) -> None:
    """The native SSH download follows the ProxyJump too (``fetch.json``'s ledger)."""
    out = tmp_path / "run-fetch"
    report, wall_s = _diagnose(instance, "ssh-jump-host", out, "--direction", "fetch",
                               "--fetch-seed", "3MiB")
    record = json.loads((out / "fetch.json").read_text())
    ledger = record["ssh_downloads"][0]
    clones = [f["rate_bytes_per_s"] for f in report["fetches"] if f.get("rate_bytes_per_s")]
    print(f"  fetch: {wall_s:.1f} s, verdict {report['verdict']}, git's SSH clones "
          f"{[round(r / 1e6, 2) for r in clones]} MB/s, native SSH download via "
          f"{ledger.get('via')!r}: {ledger['outcome']}, {ledger['received_bytes']} B at "
          f"{(ledger['rate_bytes_per_s'] or 0) / 1e6:.2f} MB/s, warnings {record['warnings']}")
    assert (ledger["via"], ledger["outcome"]) in ((via, "ok"), (via, "bounded")), ledger
    assert report["verdict"] != "failed" and ledger["received_bytes"] > 2**19, ledger
    assert not [w for w in record["warnings"] if "connected directly" in w], record["warnings"]


def _native_through_the_jump(out: Path, via: str, run: dict[str, Any]) -> None:
    """The native SSH push followed git's ProxyJump: its ledger says so, no "connected
    directly" warning, its TCP_INFO is of the leg to the jump host."""
    warnings = json.loads((out / "manifest.json").read_text())["warnings"]
    native = json.loads((out / "native-ssh.json").read_text())
    rate = native["request_bytes"] / ((native["ended_t_ns"] - native["first_data_t_ns"]) / 1e9)
    rows = [json.loads(row) for row in
            (out / "native-ssh.tcpinfo.jsonl").read_text().splitlines()]
    peers = {row["peer"].rsplit(":", 1)[0].strip("[]") for row in rows}
    print(f"  native SSH push via {native.get('via')!r}: {native['request_bytes']} B at "
          f"{rate / 1e6:.2f} MB/s (git's SSH push {run['rate_bytes_per_s'] / 1e6:.2f} MB/s), "
          f"connect {native['connect_s'] * 1000:.0f} ms, kex {native['kex_s'] * 1000:.0f} ms, "
          f"TCP_INFO peers {sorted(peers)} ({len(rows)} samples), warnings {warnings}")
    assert native["via"] == via, native["via"]
    assert native["report"], native
    assert not [w for w in warnings if "connected directly" in w], warnings
    assert rows and peers == {JUMP_IP}, peers


def _through_proxy_commands(instance: str, config: Path, tmp_path: Path) -> None:
    """The same jump host reached by ``ProxyCommand ssh -W %h:%p`` (recognised: its leg is
    the jump host's, captured there), then by the same command behind ``sh -c``
    (unrecognised: said so, not captured, TCP_INFO of git's own sockets: the jump's)."""
    original = config.read_text()
    jump = next(line.split()[1] for line in original.splitlines()
                if line.strip().startswith("ProxyJump"))
    user, address = jump.split("@", 1)
    forward = f"ssh -F {config} -W %h:%p {user}@{address.rsplit(':', 1)[0]}"
    try:
        for name, command in (("w", forward), ("sh", f"/bin/sh -c 'exec {forward}'")):
            config.write_text(original.replace(f"ProxyJump {jump}", f"ProxyCommand {command}"))
            out = tmp_path / f"run-{name}"
            report, wall_s = _diagnose(instance, "ssh-jump-host", out, "--no-native")
            ssh = _paths(report)["ssh"]
            run = report["protocols"]["ssh"]
            manifest = json.loads((out / "manifest.json").read_text())
            push = manifest["protocols"][0]["pushes"][0]
            line = _target_line(out)
            print(f"ProxyCommand {name}: {wall_s:.1f} s, {line}, SSH push "
                  f"{(run['rate_bytes_per_s'] or 0) / 1e6:.2f} MB/s, "
                  f"artifacts {sorted(push['artifacts'])}")
            assert run["pushes_ok"] == 1, run
            assert ssh["kind"] == "ssh-proxy" and ssh["source"] == "ssh -G proxycommand", ssh
            peers = {json.loads(row)["peer"].rsplit(":", 1)[0].strip("[]") for row in
                     (out / push["artifacts"]["tcpinfo"]).read_text().splitlines()}
            print(f"  TCP_INFO peers {sorted(peers)}")
            assert peers == {JUMP_IP}, peers  # the leg git's ssh really used
            if name == "w":
                assert (ssh["leg"], ssh["proxy_type"]) == (f"{JUMP_IP}:22", "ssh"), ssh
                assert push["artifacts"].get("capture"), "the leg to the jump was not captured"
                assert f"SSH client -> SSH jump host {JUMP_IP}:22 (SSH ProxyCommand: OpenSSH" \
                    in line, line
            else:
                assert ssh["leg"] == "" and "first hop unknown, not captured" in ssh["unplaced"]
                assert "capture" not in push["artifacts"], push["artifacts"]
                assert "SSH ProxyCommand `/bin/sh -c" in line and "not captured" in line, line
    finally:
        config.write_text(original)
