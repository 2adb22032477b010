"""Issue 42's dead-path lab faults: a router that lets nothing reach the server's HTTPS and
SSH ports. The data :mod:`gitnetdiag.lab.spec` merges into its tables, and the router rules
they give the lab (pure: :mod:`gitnetdiag.lab.manager` runs them).

- ``filtered-port``: the router's FORWARD chain drops every SYN to the server's HTTPS ports
  (the edge's and Apache's direct TLS port) and its SSH port, and answers nothing (no RST,
  no ICMP): a client's connect waits out its SYN retries (about 2 min per connection with
  Linux's defaults) where nothing tells it so sooner. git:// (9418) stays open.
- ``refused-port``: the same ports answered with a TCP reset (``REJECT --reject-with
  tcp-reset``): git's connects fail at once with "Connection refused", named by
  ``firewall-reset`` from git's words as the SSH-only ``firewall-reset`` fault is.

Neither has a ``lab fix``: the fix is the filter's rule gone (``lab down`` and ``up``).
"""

from __future__ import annotations

from gitnetdiag.lab.httpfaults import FaultSettings
from gitnetdiag.model.lab.state import PORT_HTTPS_DIRECT, PORT_HTTPS_EDGE, PORT_SSH, SERVER_IP

DEAD_PORTS = (PORT_HTTPS_EDGE, PORT_HTTPS_DIRECT, PORT_SSH)
"""The server's ports the router lets no connection reach under these faults."""
_PORTS = ",".join(str(port) for port in DEAD_PORTS)

PATH_FAULTS: dict[str, str] = {
    "filtered-port": f"the router drops every SYN to the server's HTTPS and SSH ports ({_PORTS}) "
    "and answers nothing",
    "refused-port": f"the router answers SYNs to the server's HTTPS and SSH ports ({_PORTS}) "
    "with TCP resets",
}

PATH_FAULT_CULPRIT: dict[str, str] = {
    "filtered-port": "path-unreachable",
    "refused-port": "firewall-reset",
}
"""The culprit each fault must rank first, kept apart from
:data:`~gitnetdiag.lab.expectations.FAULT_CULPRIT` (every fault there needs a recorded run in
``captures/`` and a fix); ``tests/acceptance/test_dead_paths_lab.py`` runs them."""

PATH_FAULT_FIX_NAMES: dict[str, str] = {
    "filtered-port": "Open TCP port",
    "refused-port": "tcp-reset",
}
"""A setting or step the fix of each fault's culprit must name."""

PATH_FAULT_PROBE_ARGS: dict[str, tuple[str, ...]] = {
    fault: ("--protocols", "h1,h2,ssh", "--size", "1MiB", "--cleanup-wait", "5")
    for fault in PATH_FAULTS
}
"""How ``diagnose --lab`` exercises each fault: the protocols of the dead ports; no pack
crosses them, so a small one (the repository is made beside the path check); a refused
push created nothing, so its clean-up need not wait 30 s for a branch."""


def router_rules(spec: FaultSettings) -> list[tuple[str, ...]]:
    """The router's FORWARD rules these faults add (iptables arguments after the chain)."""
    match = ("-p", "tcp", "-d", SERVER_IP, "-m", "multiport", "--dports", _PORTS, "--syn")
    if "filtered-port" in spec.faults:
        return [(*match, "-j", "DROP")]
    if "refused-port" in spec.faults:
        return [(*match, "-j", "REJECT", "--reject-with", "tcp-reset")]
    return []
