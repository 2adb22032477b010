"""Connection setup: the accept queue, SYN drops, and filters that reset."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gitnetdiag.diagnosis.culprits._common import (
    SMALL_BACKLOG,
    SYN_RTO_S,
    Hit,
    Tally,
    above_zero,
    burst_cost_s,
    burst_evidence,
    burst_symptoms,
    captured,
    config_evidence,
    failure_cost_s,
    label,
    observed,
)
from gitnetdiag.diagnosis.culprits.refused import (
    check_evidence,
    refused_fix,
    refused_ports,
    refused_protocols,
    refused_summary,
)
from gitnetdiag.diagnosis.culprits.ssh import ssh_maxstartups
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.measures import (
    failed_pushes,
    rtt_s,
)
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import (
    ConfigFinding,
    Observations,
    ProtocolObservation,
)
from gitnetdiag.diagnosis.units import fmt_s
from gitnetdiag.outcomes import REFUSALS, FailureKind

_QUEUE_COUNTERS = ("ListenOverflows", "ListenDrops")
_SYN_QUEUE_COUNTERS = ("TCPReqQFullDoCookies", "TCPReqQFullDrop", "SyncookiesSent")


def _accept_queue_evidence(obs: Observations) -> list[Evidence]:
    """Server-side evidence that a listen queue overflowed or is tiny."""
    host = obs.host
    if host is None:
        return []
    items = [above_zero(f"kernel counter {key} (delta over the run)", host.counter_deltas[key],
                        f"host counter {key}")
             for key in _QUEUE_COUNTERS + _SYN_QUEUE_COUNTERS
             if host.counter_deltas.get(key, 0) > 0]
    burst_ports = {b.port for b in obs.bursts if b.port is not None}
    items += [Evidence(what=f"listen backlog of port {x.port} ({x.process or '?'})",
                       value=x.backlog, unit="count", threshold=SMALL_BACKLOG, comparison="<=",
                       source="host ss -ltn (Send-Q)")
              for x in host.listeners
              if x.backlog <= SMALL_BACKLOG and (not burst_ports or x.port in burst_ports)]
    items += [Evidence(what="kernel log", text=line.strip(), source="host kernel log")
              for line in host.kernel_log
              if "SYN flooding" in line or "drop open request" in line]
    return items


def listen_backlog_overflow(obs: Observations) -> Hit | None:
    host_items = _accept_queue_evidence(obs)
    if not host_items:
        return None
    rtt = rtt_s(obs)
    host = obs.host
    assert host is not None
    # With SYN cookies on, a client's ACK that finds the accept queue still full fails the
    # cookie check and is answered with a RST: the burst's resets are then the backlog's
    # (seen in the lab: 122 resets, SyncookiesFailed +122, ListenOverflows +657).
    cookie_resets = (host.counter_deltas.get("SyncookiesFailed", 0) > 0
                     and host.counter_deltas.get("ListenOverflows", 0) > 0)
    bursts = [b for b in obs.bursts if burst_symptoms(b) or (
        cookie_resets and b.failed_by_kind.get(FailureKind.RESET))]
    tally = Tally("listen-backlog-overflow")
    tally.add("host-evidence", *host_items)
    if any(host.counter_deltas.get(k, 0) > 0 for k in _QUEUE_COUNTERS):
        tally.add("accept-queue-counters")
    if any(host.counter_deltas.get(k, 0) > 0 for k in _SYN_QUEUE_COUNTERS):
        tally.add("syn-queue-counters")
    small = [listener for listener in host.listeners if listener.backlog <= SMALL_BACKLOG]
    if small:
        tally.add("small-backlog")
    if bursts:
        tally.add("burst-symptoms")
    tally.note(*(item for burst in bursts for item in burst_evidence(burst)))
    cost = max((burst_cost_s(b, rtt) for b in bursts), default=0.0)
    git_daemon = any(x.port == 9418 or "git" in x.process for x in small) or any(
        b.protocol == "git" for b in bursts
    )
    somaxconn = host.sysctls.get("net.core.somaxconn")
    listener_text = (
        f"port {small[0].port} listens with a backlog of {small[0].backlog}"
        if small
        else "the accept queue overflowed"
    )
    overflow = host.counter_deltas.get("ListenOverflows", 0)
    worst = max(bursts, key=lambda b: b.failed + b.syn_retransmissions, default=None)
    burst_text = ""
    if worst is not None:
        burst_text = (
            f"; under {worst.concurrency} concurrent {label(worst.protocol)} connections "
            f"{worst.failed} failed, {worst.syn_retransmissions} SYNs and "
            f"{worst.synack_retransmissions} SYN-ACKs were retransmitted"
        )
    fix = (
        "Raise the service's listen backlog and `net.core.somaxconn` (it caps every backlog"
        + (f", now {somaxconn}" if somaxconn else "")
        + ") and `net.ipv4.tcp_max_syn_backlog`: nginx `listen ... backlog=`, HAProxy "
        "`backlog`, Apache `ListenBacklog`."
    )
    if git_daemon:
        fix = (
            "`git daemon` calls listen() with a fixed backlog of 5: run it from systemd socket "
            "activation (`ListenStream=9418`, `Backlog=1024`, `Accept=yes` with `git daemon "
            "--inetd`) or behind a proxy with a large backlog. " + fix
        )
    return tally.hit(
        cost_s=cost,
        summary=(
            f"{listener_text[0].upper()}{listener_text[1:]}"
            + (f" and the kernel counted {overflow} accept-queue overflows" if overflow else "")
            + burst_text
            + "."
        ),
        fix=fix,
    )


QUEUE_COUNTERS = ("ListenOverflows", "ListenDrops", "TCPReqQFullDrop", "TCPReqQFullDoCookies")
"""Server counters that count SYNs or connections a full SYN or accept queue dropped."""


def syn_drop(obs: Observations) -> Hit | None:
    if _accept_queue_evidence(obs):
        return None
    rtt = rtt_s(obs)
    bursts = [b for b in obs.bursts if b.syn_retransmissions or b.synack_retransmissions]
    evidence = [item for burst in bursts for item in burst_evidence(burst)]
    push_syn = 0
    for name, _, c in captured(obs):
        if (c.syn_retransmissions or 0) + (c.synack_retransmissions or 0):
            push_syn += (c.syn_retransmissions or 0) + (c.synack_retransmissions or 0)
            evidence += [
                above_zero(f"{label(name)}: {kind} retransmissions", count, c.source)
                for kind, count in (
                    ("SYN", c.syn_retransmissions),
                    ("SYN-ACK", c.synack_retransmissions),
                )
                if count
            ]
    if not evidence:
        return None
    cost = max((burst_cost_s(b, rtt) for b in bursts), default=0.0) + push_syn * SYN_RTO_S
    total_syn = sum(b.syn_retransmissions for b in bursts)
    total_synack = sum(b.synack_retransmissions for b in bursts)
    counters = obs.host.counter_deltas if obs.host is not None else {}
    # The server's own counters were read and saw no queue overflow: the SYNs were lost
    # before they reached it, on the path (a filter, a SYN rate limit, a policer).
    clean_server = all(key in counters for key in QUEUE_COUNTERS)
    if clean_server:
        evidence += [
            Evidence(what=f"server counter {key} over the run", value=counters[key],
                     unit="count", threshold=0, comparison="<=", source="host netstat")
            for key in QUEUE_COUNTERS
        ]
    where = (
        "the server's kernel counted no SYN-queue or accept-queue overflow, so they were "
        "lost on the path before the server (a filter or SYN rate limit)"
        if clean_server
        else "no server-side evidence was available to tell a full SYN queue from a filter"
    )
    check_path = (
        "SYN rate limits in firewalls on the path (`iptables -S | grep -i syn`, "
        "`nft list ruleset`, cloud security groups, DDoS protection, policers)"
    )
    check_server = (
        "`net.ipv4.tcp_max_syn_backlog`, the service's listen backlog and "
        "`net.core.somaxconn`, `net.ipv4.tcp_syncookies`"
    )
    return Hit(
        score=weight("syn-drop", ("burst-clean-server" if clean_server else "burst")
                     if bursts else "pushes-only"),
        cost_s=cost,
        summary=(
            f"SYNs or SYN-ACKs were dropped: {total_syn} SYN and {total_synack} SYN-ACK "
            f"retransmissions in bursts and {push_syn} on the pushes, each costing at least "
            f"{fmt_s(SYN_RTO_S)}; {where}."
        ),
        evidence=tuple(evidence),
        fix=(
            f"Check {check_path}; then {check_server}."
            if clean_server
            else f"Check {check_server}, and {check_path}; rerun with host evidence "
            "(`gitnetdiag host`) to see ListenOverflows / TCPReqQFullDrop."
        ),
    )


_REFUSED_PORT = re.compile(r"\bport (\d+)\b")


def _filtered_refusals(obs: Observations, p: ProtocolObservation) -> list[Evidence]:
    """Why a refused push points at a filter, when it does. A closed port (nothing
    listening) refuses too, so a refusal alone is no evidence: it counts when the server
    has a listener on the refused port (``ss -ltn``), or when the refusal came back sooner
    than one round trip to the server (a hop before it answered): git's whole run, or the
    SYN to its reset in a capture (``refused_after_s``)."""
    refused = [push for push in failed_pushes(p) if push.error_kind in REFUSALS]
    listening = {x.port: x.process for x in (obs.host.listeners if obs.host else ())}
    rtt = rtt_s(obs)
    for push in refused:
        source = "pushes: " + (push.error_message or "refused")
        port = _REFUSED_PORT.search(push.error_message)
        if port is not None and int(port.group(1)) in listening:
            number = int(port.group(1))
            return [Evidence(what=f"listener on the refused port {number} "
                             f"({listening[number] or '?'})", text="listening",
                             source="host ss -ltn")]
        if rtt is not None and push.duration_s < rtt:
            return [Evidence(what="refused push: git's whole run, refusal included",
                             value=push.duration_s, unit="s", threshold=rtt, comparison="<",
                             basis="one round trip to the server", source=source)]
    c = p.capture
    if refused and c is not None and c.refused_after_s is not None and rtt is not None \
            and c.refused_after_s < rtt:
        return [Evidence(what="refused connection: its SYN to the reset that answered it",
                         value=c.refused_after_s, unit="s", threshold=rtt, comparison="<",
                         basis="one round trip to the server", source=c.source)]
    return []


def _filter_rules(obs: Observations) -> list[ConfigFinding]:
    return [
        c
        for c in (obs.host.config_findings if obs.host else ())
        if re.search(r"REJECT|DROP|tcp-reset|deny", c.value, re.IGNORECASE)
    ]


@dataclass
class _Resets:
    """Resets found so far: evidence, summary parts, and the costliest protocol (``None``
    when the costliest is a burst)."""

    evidence: list[Evidence] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    worst_cost: float = 0.0
    worst_protocol: str | None = None
    refused: list[str] = field(default_factory=list)
    """Protocols counted for refusals on a port the path check found refused."""
    told: dict[str, str] = field(default_factory=dict)
    """Protocol -> what showed that a filter, not a closed port, refused it."""

    def charge(self, cost: float, protocol: str | None) -> None:
        if cost > self.worst_cost:
            self.worst_cost, self.worst_protocol = cost, protocol


HTTP_LAYER_ENDINGS = ("transfer closed with", "http/2 stream", "stream error in the http/2")
"""curl's words for an answer cut short or an HTTP/2 stream ended by the peer's HTTP layer;
a TCP reset reads "connection reset by peer", "send failure" or "recv failure"."""


def _answered_then_closed(p: ProtocolObservation) -> bool:
    """git's curl trace shows the failing request answered with a status, or closed by the
    HTTP layer with curl's words for it: the close came from an HTTP server or edge that
    spoke HTTP on that connection (a timeout, a refused body), not from a filter's RST."""
    failing = {push_no for push_no, push in enumerate(p.pushes, 1) if not push.ok}
    for r in p.http_requests:
        if r.method != "POST" or (r.push and r.push not in failing):
            continue
        words = r.ending.lower()
        if r.ending and (r.status is not None or any(w in words for w in HTTP_LAYER_ENDINGS)):
            return True
    return False


def _told(early: Evidence) -> str:
    """What a filter's evidence says, in words for the summary."""
    if early.value is None:
        return f"{early.what} in the server's `ss -ltn`"
    return (f"{early.what} took {fmt_s(early.value)}, under one round trip "
            f"({fmt_s(early.threshold or 0.0)}): a hop before the server answered")


def _reset_pushes(obs: Observations, rules: list[ConfigFinding], found: _Resets) -> None:
    """Pushes reset (or, with a filter rule, an early refusal or a port the path check found
    refused, refused)."""
    # Failed HTTP requests (a status) are answers, never resets: only these kinds count.
    refused_port = refused_protocols(obs)
    for name, p in observed(obs):
        early = _filtered_refusals(obs, p)
        kinds = ({FailureKind.RESET, *REFUSALS} if rules or early or name in refused_port
                 else {FailureKind.RESET})
        c = p.capture
        if c is not None and c.resets_from_server == 0:
            # The capture saw every segment of these pushes and no RST came from the
            # server's side: the failure was a close or an HTTP/2 error that git
            # reported like a reset ("Empty reply from server"), not a reset.
            continue
        if _answered_then_closed(p):
            continue
        cost, failed, total = failure_cost_s(obs, name, kinds)
        if not failed:
            continue
        found.charge(cost, name)
        found.evidence += early[:1]
        if early:
            found.told[name] = _told(early[0])
        first = next(f for f in failed_pushes(p) if (f.error_kind or "other") in kinds)
        found.evidence.append(above_zero(
            f"{label(name)} pushes reset or refused", failed,
            "pushes: " + (first.error_message or first.error_kind or ""), of=total))
        if name in refused_port and first.error_kind in REFUSALS:
            found.refused.append(name)
        else:
            found.summary.append(
                f"{failed} of {total} {label(name)} pushes were {first.error_kind}")
        if c is not None and c.resets_from_server:
            found.evidence.append(above_zero(
                f"{label(name)}: RST segments arriving from the server side",
                c.resets_from_server, c.source))


def _reset_bursts(obs: Observations, found: _Resets) -> None:
    """Burst connections reset or refused, unless a full backlog or MaxStartups explains them."""
    backlog = bool(_accept_queue_evidence(obs))
    maxstartups = ssh_maxstartups(obs) is not None
    rtt = rtt_s(obs)
    burst_hits = [
        b
        for b in obs.bursts
        # Failed connections, not RSTs alone: a client that aborts a finished
        # connection sends one too.
        if any(b.failed_by_kind.get(k) for k in (FailureKind.RESET, *REFUSALS))
        and not backlog
        and not (b.protocol == "ssh" and maxstartups)
    ]
    for burst in burst_hits:
        found.evidence.extend(burst_evidence(burst))
        if burst.resets:
            found.evidence.append(above_zero(
                "RSTs on burst connections", burst.resets,
                f"burst {label(burst.protocol)} x{burst.concurrency}"))
        found.charge(burst_cost_s(burst, rtt, syn=False), None)
        found.summary.append(
            f"{burst.failed} of {burst.concurrency} concurrent {label(burst.protocol)} "
            "connections were reset or refused"
        )


def firewall_reset(obs: Observations) -> Hit | None:
    rules = _filter_rules(obs)
    found = _Resets()
    _reset_pushes(obs, rules, found)
    _reset_bursts(obs, found)
    if not found.summary and not found.refused:
        return None
    ports = refused_ports(obs, found.refused)
    found.evidence += [check_evidence(port) for port in ports]
    tally = Tally("firewall-reset", evidence=found.evidence)
    pushes = any(e.what.endswith("pushes reset or refused") for e in found.evidence)
    tally.add("pushes-reset" if pushes else "bursts-reset")
    if any("RST" in e.what for e in found.evidence):
        tally.add("rst-seen")
    if rules:
        tally.add("filter-rule", *config_evidence(rules))
    rule_text = (
        f" `{rules[0].setting} {rules[0].value}` ({rules[0].file}"
        + (f" line {rules[0].line}" if rules[0].line is not None else "")
        + ")"
        if rules
        else ""
    )
    summary = [refused_summary(ports, found.told)] if ports else []
    fix = [refused_fix(ports, found.told, rule_text)] if ports else []
    if found.summary:
        summary.append("; ".join(found.summary)
                       + ": connections are cut by a reset from the path or server")
        fix.append(
            f"Find and relax the filter that resets the connections{rule_text or ''}: "
            "`iptables -S` / `nft list ruleset` for REJECT `tcp-reset` rules, load-balancer idle "
            "or body-size limits, IDS/IPS and cloud security groups on the path; capture on "
            "both sides to see which hop sends the RST.")
    return tally.hit(cost_s=found.worst_cost, cost_protocol=found.worst_protocol,
                     summary="; ".join(summary) + ".", fix=" ".join(fix))
