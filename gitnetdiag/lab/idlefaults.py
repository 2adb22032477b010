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

The sysctls exist in the router namespace only once conntrack is loaded there, so
:func:`router_commands` gives the rule first. There is no fix in the lab's terms (a
keepalive below the timeout is the user's fix, a longer timeout the middlebox's).
"""

from __future__ import annotations

from gitnetdiag.lab.httpfaults import FaultSettings

IDLE_STATE_TIMEOUT_S = 4
"""The router's ``nf_conntrack_tcp_timeout_established`` under ``idle-state-drop``: below
git's default ``receive.keepAlive`` (5 s), above every other silence of a healthy push."""
IDLE_HOOK_S = 8.0
"""Seconds the silent pre-receive hook sleeps under ``idle-state-drop``: twice the timeout."""

IDLE_FAULTS: dict[str, str] = {
    "idle-state-drop": f"the router forgets a TCP connection after {IDLE_STATE_TIMEOUT_S} s of "
    "silence and drops what follows (conntrack INVALID, no RST), and a silent pre-receive "
    f"hook sleeps {IDLE_HOOK_S:g} s: every push waits for an answer that never comes",
}

IDLE_FAULT_CULPRIT: dict[str, str] = {"idle-state-drop": "path-idle-timeout"}
"""The culprit the fault must rank first, kept apart from
:data:`~gitnetdiag.lab.expectations.FAULT_CULPRIT` (which needs a recorded run in ``captures/``)."""

IDLE_FAULT_FIX_NAMES: dict[str, str] = {"idle-state-drop": "receive.keepAlive"}
"""A setting the fix of the fault's culprit must name."""

IDLE_FAULT_PROBE_ARGS: dict[str, tuple[str, ...]] = {
    # Every push hangs until --timeout; the branch lands when the hook ends (only its
    # answer is lost), so a short clean-up finds it and deletes it (no hook on deletes).
    "idle-state-drop": ("--protocols", "h1,ssh", "--size", "1MiB", "--timeout", "9",
                        "--cleanup-wait", "10"),
}
"""How ``diagnose --lab`` exercises the fault."""


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
