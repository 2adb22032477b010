"""The lab as a remote: one rule for probe, diagnose, load and watch (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitnetdiag.model.lab.state import LabEndpoints, LabState
from gitnetdiag.probe.labremote import LabHttp, lab_remote, ssh_command
from gitnetdiag.vocabulary import TransportKind
from gitnetdiag.watch.config import parse_config
from gitnetdiag.watch.cycle import probe_options


def _state(instance: str = "t1") -> LabState:
    return LabState(
        instance=instance, client_ns=f"gnd-{instance}-client", router_ns=f"gnd-{instance}-router",
        server_ns=f"gnd-{instance}-server", client_ip="198.18.1.2", server_ip="198.18.2.2",
        rtt_ms=40.0, loss=0.0, rate=None, faults=["h2-small-window"],
        endpoints=LabEndpoints(https_edge="https://198.18.2.2:8443/git/lab.git",
                               https_direct="https://198.18.2.2:443/git/lab.git",
                               ssh="ssh://git@198.18.2.2/srv/lab.git",
                               git="git://198.18.2.2:9418/lab.git"),
        ca_file="/lab/ca.pem", ssh_key="/lab/key", ssh_known_hosts="/lab/known_hosts",
        ssh_user="git", repo_path="/srv/lab.git", edge_h2_window=65535,
        apache_h2_window=65535, hook_delay_s=0.0, auth_delay_s=0.0, reset_port=None,
    )


def test_the_lab_fills_in_what_the_user_did_not_give() -> None:
    lab = lab_remote(_state())
    assert lab.https == "https://198.18.2.2:8443/git/lab.git"
    assert (lab.ssh, lab.git) == ("ssh://git@198.18.2.2/srv/lab.git",
                                  "git://198.18.2.2:9418/lab.git")
    assert (lab.ca_file, lab.ssh_key, lab.ssh_known_hosts) == (
        "/lab/ca.pem", "/lab/key", "/lab/known_hosts")
    assert lab.recorded() == {"lab_instance": "t1", "lab_http": "edge",
                              "lab_faults": ["h2-small-window"], "lab_rtt_ms": 40.0}
    assert "lab_http" not in lab.recorded(with_way_in=False)


def test_what_the_user_gave_wins_and_insecure_takes_no_ca() -> None:
    mine = lab_remote(_state(), lab_http=LabHttp.DIRECT, ca_file="/my/ca.pem",
                      ssh_key="/my/key", ssh_known_hosts="/my/known")
    assert mine.https == "https://198.18.2.2:443/git/lab.git"
    assert (mine.ca_file, mine.ssh_key, mine.ssh_known_hosts) == (
        "/my/ca.pem", "/my/key", "/my/known")
    assert lab_remote(_state(), insecure=True).ca_file is None
    assert lab_remote(_state(), insecure=True, ca_file="/my/ca.pem").ca_file == "/my/ca.pem"


def test_ssh_command_pins_the_key_and_the_known_hosts() -> None:
    assert ssh_command(None, None) == "ssh -o BatchMode=yes -o ConnectTimeout=10"
    assert ssh_command("/k ey", "/kh") == (
        "ssh -o BatchMode=yes -o ConnectTimeout=10 -i '/k ey' -o IdentitiesOnly=yes "
        "-o UserKnownHostsFile=/kh -o StrictHostKeyChecking=yes")


@pytest.mark.parametrize(("insecure", "ca_file"), [(False, "/lab/ca.pem"), (True, None)])
def test_a_watch_lab_target_honours_insecure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             insecure: bool, ca_file: str | None) -> None:
    """watch used to fill in the lab's CA even with ``insecure: true``; now the same rule as
    ``probe --lab --insecure``: no CA, certificates not verified."""
    monkeypatch.setattr("gitnetdiag.model.lab.state.STATE_ROOT", tmp_path / "labs")
    (tmp_path / "labs" / "t1").mkdir(parents=True)
    (tmp_path / "labs" / "t1" / "state.json").write_text(json.dumps(_state().to_dict()))
    config = parse_config(f"""
runs_dir: {tmp_path / "runs"}
targets:
  - name: lab
    lab: t1
    lab_http: direct
    insecure: {str(insecure).lower()}
""")
    options = probe_options(config.targets[0], tmp_path / "run", seed=1)
    assert options.insecure is insecure and options.ca_file == ca_file
    assert options.urls[TransportKind.H2] == "https://198.18.2.2:443/git/lab.git"
    assert options.ssh_key == "/lab/key"
    assert options.extra_options == {"watch_target": "lab", "lab_instance": "t1",
                                     "lab_http": "direct", "lab_faults": ["h2-small-window"],
                                     "lab_rtt_ms": 40.0}


def test_load_and_watch_use_the_labs_ssh_config_and_client_env(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under ssh-jump-host the lab's SSH goes through its ssh config's ProxyJump: ``load
    --lab`` and a watch lab target's ssh command read it (``-F``) as ``diagnose --lab`` does;
    a watch cycle's environment gets the lab client's variables (the forward proxy's
    ``https_proxy``) as ``--lab`` gives the probe."""
    from dataclasses import replace

    from gitnetdiag.commands.load import LoadArgs, load_options
    from gitnetdiag.lab import netns

    key, known, ca = tmp_path / "key", tmp_path / "known_hosts", tmp_path / "ca.pem"
    for path in (key, known, ca):
        path.write_text("x")
    state = replace(_state(), ssh_config="/lab/ssh_config", ssh_key=str(key), ca_file=str(ca),
                    ssh_known_hosts=str(known),
                    client_env={"https_proxy": "http://198.18.2.3:8888"})
    monkeypatch.setattr("gitnetdiag.model.lab.state.STATE_ROOT", tmp_path / "labs")
    (tmp_path / "labs" / "t1").mkdir(parents=True)
    (tmp_path / "labs" / "t1" / "state.json").write_text(json.dumps(state.to_dict()))
    config = parse_config(f"runs_dir: {tmp_path / 'runs'}\ntargets:\n  - name: lab\n"
                          "    lab: t1\n    protocols: [ssh]\n")
    options = probe_options(config.targets[0], tmp_path / "run", seed=1)
    assert options.ssh_command is not None
    assert options.ssh_command.startswith("ssh -F /lab/ssh_config ")
    monkeypatch.setattr(netns, "enter_lab_client", lambda instance, command: state)
    args = LoadArgs(
        urls=None, ops="clone", mix=None, concurrency="1", duration="1s", protocol="ssh",
        timeout=10.0, push_size="1KiB", cleanup_wait=0.0, min_ops_per_hour=None,
        max_error_ratio=0.5, out=None, json_out=None, ca_file=None, insecure=False,
        ssh_key=None, ssh_known_hosts=None, host_netns=None, host_local=False, lab=True,
        lab_instance="t1", lab_http=LabHttp.EDGE, locust_master=None, locust_results=None,
        wait=0.0, no_live=True, then_diagnose=False)
    monkeypatch.setattr("gitnetdiag.commands.load._counters", lambda netns, local: None)
    loaded, _ = load_options(args)
    assert loaded.transport.ssh_command is not None
    assert loaded.transport.ssh_command.startswith("ssh -F /lab/ssh_config ")
    monkeypatch.delenv("https_proxy", raising=False)
    netns.apply_client_env(state)
    import os
    assert os.environ["https_proxy"] == "http://198.18.2.3:8888"
