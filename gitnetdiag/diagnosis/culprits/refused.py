"""``firewall-reset`` on a port that refuses every connection: the probe's bounded path check
(:mod:`gitnetdiag.probe.pathinfo`, two connects at once before any transfer) and git's own
connects were each answered with a TCP reset to the SYN (``ECONNREFUSED``), so nothing
crossed the port.

Nothing listening on the port and a filter's ``REJECT --reject-with tcp-reset`` give the
client the same answer. What tells them apart, when the run has it: a listener on that port
in the server's ``ss -ltn`` (the service is up, so a hop or the host's own filter rejects
the SYNs), a filter rule in the host's configuration, or the refusal back sooner than one
round trip to the server (a hop before it answered). Without any of those the report says
both, and how to tell them apart. The lab's ``refused-port`` fault (the router rejects the
server's HTTPS and SSH ports, both listening) measured 2 connects refused per port in 0.0 s,
git's pushes and clones refused after 0 ms, the listeners ``haproxy`` (8443) and ``sshd``
(22) in ``ss -ltn``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from gitnetdiag.diagnosis.culprits._common import label
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import DeadPath, Observations

SOURCE = "path check (one bounded connect before the transfers)"


@dataclass(frozen=True)
class RefusedPort:
    """One refused endpoint and the protocols that use it."""

    endpoint: str
    protocols: tuple[str, ...]
    check: DeadPath

    @property
    def host(self) -> str:
        return self.endpoint.rpartition(":")[0]

    @property
    def port(self) -> str:
        return self.endpoint.rpartition(":")[2]

    @property
    def who(self) -> str:
        """``HTTP/1.1 and HTTP/2 (198.18.2.2:8443)``."""
        return f"{' and '.join(label(p) for p in self.protocols)} ({self.endpoint})"


def refused_protocols(obs: Observations) -> set[str]:
    """The protocols whose port the path check found refused."""
    return {d.protocol for d in obs.dead_paths if d.reach == "refused"}


def refused_ports(obs: Observations, protocols: Collection[str]) -> list[RefusedPort]:
    """The refused endpoints of ``protocols`` (those whose refusals were counted), each once."""
    names: dict[str, list[str]] = {}
    first: dict[str, DeadPath] = {}
    for d in obs.dead_paths:
        if d.reach == "refused" and d.protocol in protocols:
            names.setdefault(d.endpoint, []).append(d.protocol)
            first.setdefault(d.endpoint, d)
    return [RefusedPort(e, tuple(names[e]), first[e]) for e in first]


def check_evidence(port: RefusedPort) -> Evidence:
    """The path check's refused connects on the port."""
    connects = port.check.connects or 1
    return Evidence(what=f"{port.who}: path check connects answered with a TCP reset to the "
                    "SYN (connection refused)", value=connects, unit="count", of=connects,
                    text=port.check.error, source=SOURCE)


def refused_summary(ports: Sequence[RefusedPort], told: Mapping[str, str]) -> str:
    """What was seen on each refused port and what it says of the cause (``told``: protocol
    -> what showed that a filter rejects it, when something did)."""
    parts = []
    for port in ports:
        why = next((told[p] for p in port.protocols if p in told), "")
        cause = (f"a filter rejects them ({why})" if why else
                 "nothing listens on that port, or a firewall rejects it with a TCP reset: "
                 "nothing measured here tells which")
        parts.append(f"{port.who}: every connection refused, the path check's and git's "
                     f"pushes alike (a TCP reset to each SYN); {cause}")
    return "; ".join(parts)


def refused_fix(ports: Sequence[RefusedPort], told: Mapping[str, str], rule_text: str) -> str:
    """Per refused port: the filter to find when one was shown, else both causes and how a
    capture at the server tells them apart."""
    lines = []
    for port in ports:
        why = next((told[p] for p in port.protocols if p in told), "")
        reject = (f"the rule that rejects TCP port {port.port} to {port.host} with a reset "
                  f"(`REJECT --reject-with tcp-reset`{rule_text}: `iptables -S` / "
                  "`nft list ruleset` on the server and on the routers and firewalls between)")
        if why or rule_text:
            lines.append(f"Remove or narrow {reject}: {why or 'the rule is in the host config'}, "
                         "so the service is up and a filter refuses the connections.")
            continue
        lines.append(
            f"Either nothing listens on TCP port {port.port} at {port.host} (the service is "
            f"down, or the URL names the wrong port: `ss -ltn` on the server shows whether "
            f"anything listens on {port.port}) or a firewall rejects it: find {reject}. A "
            "capture at the server tells them apart: a SYN that arrives there and is answered "
            "by its kernel is a closed port; one that never arrives was rejected on the way "
            "(a reset whose TTL differs from the server's own packets comes from a hop "
            "between).")
    return " ".join(lines)
