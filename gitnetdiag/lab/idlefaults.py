"""Issue 42's lab fault of a path that forgets idle connections: the data
:mod:`gitnetdiag.lab.spec` merges into its tables, and the router commands it needs (pure).

- ``idle-state-drop``: the router is a stateful firewall with a short idle timeout, as NAT
  gateways and load balancers are: conntrack forgets an established TCP connection after
  :data:`IDLE_STATE_TIMEOUT_S` of silence (``nf_conntrack_tcp_timeout_established``), does
  not pick a connection up again mid-stream (``nf_conntrack_tcp_loose=0``), and the
  ``FORWARD`` chain drops what it then calls ``INVALID``: no RST, no FIN reaches either end.
  A silent pre-receive hook sleeps :data:`IDLE_HOOK_S`, longer than that timeout, so every
  push (HTTPS and SSH alike) sends its pack and then waits for an answer that never comes;
  receive-pack's keepalives (git's ``receive.keepAlive``, 5 s by default, above the
  timeout) are dropped the same way. New connections still work: a SYN makes a new entry.
  Clones (``--direction fetch``) meet the same path: the server prepares each clone's pack
  in silence for :data:`IDLE_HOOK_S` (a script in place of pack-objects,
  ``uploadpack.packObjectsHook``, as :mod:`gitnetdiag.lab.clonefaults` has it), with
  ``uploadpack.keepAlive`` 0 (git: "Setting this option to 0 disables keepalive packets
  entirely"; its 5 s default would be dropped too, one second after the timeout). The
  clone's request goes out, the server's ``packfile`` line comes back (git-http-backend's
  headers before it: no 504 can come of this silence), then nothing: the pack that
  follows the silence is dropped and the clone hangs after the pack was requested, over
  HTTPS and SSH alike.

The sysctls exist in the router namespace only once conntrack is loaded there, so
:func:`router_commands` gives the rule first. There is no fix in the lab's terms (a
keepalive below the timeout is the user's fix, a longer timeout the middlebox's).
"""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.lab.httpfaults import FaultSettings

IDLE_STATE_TIMEOUT_S = 4
"""The router's ``nf_conntrack_tcp_timeout_established`` under ``idle-state-drop``: below
git's default ``receive.keepAlive`` (5 s), above every other silence of a healthy push."""
IDLE_HOOK_S = 8.0
"""Seconds the silent pre-receive hook sleeps under ``idle-state-drop``: twice the timeout."""

UPLOAD_KEEPALIVE_S = 0
"""``uploadpack.keepAlive`` on the lab's servers under ``idle-state-drop``: 0, none sent, so
the clone's connection is silent for the whole :data:`IDLE_HOOK_S`."""
IDLE_PACK_SCRIPT = "idle-pack-objects"
"""The script in ``bin/`` git runs in place of pack-objects under ``idle-state-drop``."""

IDLE_FAULTS: dict[str, str] = {
    "idle-state-drop": f"the router forgets a TCP connection after {IDLE_STATE_TIMEOUT_S} s of "
    "silence and drops what follows (conntrack INVALID, no RST), a silent pre-receive "
    f"hook sleeps {IDLE_HOOK_S:g} s and so does each clone's pack preparation (no "
    "uploadpack.keepAlive): every push waits for an answer that never comes, every clone "
    "for its pack",
}

IDLE_FAULT_CULPRIT: dict[str, str] = {"idle-state-drop": "path-idle-timeout"}
"""The culprit the fault must rank first, kept apart from
:data:`~gitnetdiag.lab.expectations.FAULT_CULPRIT` (which needs a recorded run in ``captures/``)."""

IDLE_FAULT_FIX_NAMES: dict[str, str] = {"idle-state-drop": "receive.keepAlive"}
"""A setting the fix of the fault's culprit must name."""
IDLE_FAULT_FETCH_FIX_NAMES: dict[str, str] = {"idle-state-drop": "uploadpack.keepAlive"}
"""A setting the fix of the fault's culprit must name under ``--direction fetch``."""

IDLE_FAULT_PROBE_ARGS: dict[str, tuple[str, ...]] = {
    # Every push hangs until --timeout; the branch lands when the hook ends (only its
    # answer is lost), so a short clean-up finds it and deletes it (no hook on deletes).
    "idle-state-drop": ("--protocols", "h1,ssh", "--size", "1MiB", "--timeout", "9",
                        "--cleanup-wait", "10"),
}
"""How ``diagnose --lab`` exercises the fault."""

IDLE_FAULT_FETCH_ARGS: dict[str, tuple[str, ...]] = {
    # The clone stops moving after the server's 'packfile' line: the stall timeout ends it.
    "idle-state-drop": ("--direction", "fetch", "--protocols", "h1,ssh", "--stall-timeout",
                        "8", "--timeout", "30"),
}
"""How ``diagnose --lab`` exercises the fault's clones (read-only)."""


def drops_idle_state(spec: FaultSettings) -> bool:
    """The router forgets idle connections and drops what follows."""
    return "idle-state-drop" in spec.faults


def router_commands(spec: FaultSettings) -> list[tuple[str, ...]]:
    """Commands to run in the router namespace, in order (before its delay queue rule)."""
    if not drops_idle_state(spec):
        return []
    return [
        ("iptables-legacy", "-w", "5", "-A", "FORWARD", "-m", "conntrack", "--ctstate",
         "INVALID", "-j", "DROP"),
        ("sysctl", "-qw", "net.netfilter.nf_conntrack_tcp_loose=0"),
        ("sysctl", "-qw",
         f"net.netfilter.nf_conntrack_tcp_timeout_established={IDLE_STATE_TIMEOUT_S}"),
    ]


def pre_receive_hook(delay_s: float) -> str:
    """The fault's pre-receive hook: silent for ``delay_s`` on a push that creates or moves a
    ref, at once on deletes (the clean-up's delete then gets its answer before the path
    forgets it; a hook that also sleeps on deletes loses that answer the same way)."""
    return f"""#!/bin/sh
# gitnetdiag lab: idle-state-drop fault
zero=0000000000000000000000000000000000000000
while read -r old new ref; do
    [ "$new" = "$zero" ] || {{ sleep {delay_s:g}; exit 0; }}
done
"""


def idle_pack_script() -> str:
    """What git runs in place of pack-objects: a silent wait, then pack-objects itself."""
    return f"""#!/bin/sh
# gitnetdiag lab: idle-state-drop fault, a silent pack preparation longer than the path's
# idle timeout (uploadpack.packObjectsHook)
sleep {IDLE_HOOK_S:g}
exec "$@"
"""


def _upload_env(script: Path) -> dict[str, str]:
    """git's command-line config through the environment (``uploadpack.packObjectsHook`` is
    read from protected config only): the hook, and no keepalive packets."""
    return {"GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "uploadpack.packObjectsHook", "GIT_CONFIG_VALUE_0": str(script),
            "GIT_CONFIG_KEY_1": "uploadpack.keepAlive",
            "GIT_CONFIG_VALUE_1": str(UPLOAD_KEEPALIVE_S)}


def cgi_lines(spec: FaultSettings, bin_dir: Path) -> str:
    """Shell lines the CGI wrapper runs before git-http-backend under ``idle-state-drop``."""
    if not drops_idle_state(spec):
        return ""
    return "".join(f"export {key}='{value}'\n"
                   for key, value in _upload_env(bin_dir / IDLE_PACK_SCRIPT).items())


def sshd_lines(spec: FaultSettings, bin_dir: Path) -> str:
    """sshd_config lines giving SSH sessions the same (OpenSSH ``SetEnv``)."""
    if not drops_idle_state(spec):
        return ""
    pairs = " ".join(f"{k}={v}" for k, v in _upload_env(bin_dir / IDLE_PACK_SCRIPT).items())
    return f"SetEnv {pairs}\n"
