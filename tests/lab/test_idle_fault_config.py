"""The ``idle-state-drop`` fault's settings (pure): the router's rule and sysctls, the hook."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from gitnetdiag.lab import idlefaults
from gitnetdiag.lab.idlefaults import IDLE_FAULT_CULPRIT, IDLE_HOOK_S, IDLE_STATE_TIMEOUT_S
from gitnetdiag.lab.spec import FAULT_FIX_NAMES, FAULT_PROBE_ARGS, FAULTS, build_spec


def test_the_fault_is_in_the_lab_tables_with_its_culprit_and_fix_name() -> None:
    assert IDLE_FAULT_CULPRIT == {"idle-state-drop": "path-idle-timeout"}
    assert "idle-state-drop" in FAULTS and "idle-state-drop" in FAULT_PROBE_ARGS
    assert FAULT_FIX_NAMES["idle-state-drop"] == "receive.keepAlive"


def test_the_router_forgets_idle_connections_and_the_hook_is_longer() -> None:
    spec = build_spec(instance="a", faults=["idle-state-drop"])
    assert spec.hook_delay_s == IDLE_HOOK_S > IDLE_STATE_TIMEOUT_S
    commands = idlefaults.router_commands(spec)
    # The rule first: it loads conntrack, whose sysctls exist only then.
    assert commands[0][:2] == ("iptables-legacy", "-w") and "INVALID" in commands[0]
    assert commands[1][-1] == "net.netfilter.nf_conntrack_tcp_loose=0"
    assert commands[2][-1] == ("net.netfilter.nf_conntrack_tcp_timeout_established="
                               f"{IDLE_STATE_TIMEOUT_S}")
    assert idlefaults.router_commands(build_spec(instance="a", faults=["slow-hook"])) == []


def test_the_hook_sleeps_on_a_push_and_not_on_a_delete(tmp_path: Path) -> None:
    hook = tmp_path / "pre-receive"
    hook.write_text(idlefaults.pre_receive_hook(0.3))
    hook.chmod(0o755)
    zero, oid = "0" * 40, "1" * 40

    def took(line: str) -> float:

        start = time.monotonic()
        subprocess.run([str(hook)], input=line, text=True, check=True, timeout=10)
        return time.monotonic() - start

    assert took(f"{zero} {oid} refs/heads/gitnetdiag/probe-x\n") >= 0.3
    assert took(f"{oid} {zero} refs/heads/gitnetdiag/probe-x\n") < 0.3


def test_clones_get_a_silent_pack_preparation_longer_than_the_timeout(tmp_path: Path) -> None:
    """HTTPS (the CGI's environment) and SSH (sshd's SetEnv) alike: git runs the lab's
    script in place of pack-objects, and upload-pack sends no keepalive packets (0)."""
    spec = build_spec(instance="a", faults=["idle-state-drop"])
    cgi = idlefaults.cgi_lines(spec, tmp_path)
    script = tmp_path / idlefaults.IDLE_PACK_SCRIPT
    assert f"export GIT_CONFIG_VALUE_0='{script}'" in cgi
    assert "export GIT_CONFIG_KEY_1='uploadpack.keepAlive'" in cgi
    assert "export GIT_CONFIG_VALUE_1='0'" in cgi and "GIT_CONFIG_COUNT='2'" in cgi
    sshd = idlefaults.sshd_lines(spec, tmp_path)
    assert sshd.startswith("SetEnv GIT_CONFIG_COUNT=2 ") and f"={script} " in sshd
    assert f"sleep {IDLE_HOOK_S:g}\n" in idlefaults.idle_pack_script()
    assert IDLE_HOOK_S > IDLE_STATE_TIMEOUT_S
    healthy = build_spec(instance="a", faults=["healthy"])
    assert idlefaults.cgi_lines(healthy, tmp_path) == idlefaults.sshd_lines(healthy, tmp_path) == ""
    # The script passes pack-objects' arguments on after its wait.
    script.write_text(idlefaults.idle_pack_script().replace(f"sleep {IDLE_HOOK_S:g}", "sleep 0"))
    script.chmod(0o755)
    out = subprocess.run([str(script), "echo", "pack-objects", "--stdout"], capture_output=True,
                         text=True, check=True, timeout=10).stdout
    assert out == "pack-objects --stdout\n"
