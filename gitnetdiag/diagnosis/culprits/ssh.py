"""SSH: the channel window and sshd's MaxStartups."""

from __future__ import annotations

from gitnetdiag.diagnosis.culprits._common import (
    CLAMP_FALLBACK_WINDOW_BYTES,
    MATCHES_CAP_RATIO,
    SELF_LIMITED_SHARE,
    SLOWER_RATIO,
    Hit,
    burst_cost_s,
    burst_evidence,
    config_evidence,
    config_lines,
    label,
    term,
)
from gitnetdiag.diagnosis.measures import (
    best_other_rate,
    path_rate_bytes_per_s,
    push_bytes,
    rtt_s,
    saved_time_s,
    tcp_window_rate,
    upload_rate_bytes_per_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.units import fmt_rate
from gitnetdiag.outcomes import REFUSALS, FailureKind

REACHES_CAP_SHARE = 1 / 3
"""The SSH rate reaches the channel window's rate (window / RTT) from this share up."""


def ssh_channel_window(obs: Observations) -> Hit | None:
    p = obs.protocols.get("ssh")
    if p is None:
        return None
    rtt, size, up = rtt_s(obs, p), push_bytes(p), upload_s(p)
    rate, other = upload_rate_bytes_per_s(p), best_other_rate(obs, "ssh")
    ledger, cap = p.ssh_ledger, p.capture
    score = 0.0
    evidence: list[Evidence] = []
    slower = rate is not None and other is not None and rate < SLOWER_RATIO * other[1]
    if slower and rate is not None and other is not None:
        score += 0.35
        evidence.append(
            Evidence(
                what="SSH upload rate",
                value=rate,
                unit="B/s",
                threshold=SLOWER_RATIO * other[1],
                comparison="<",
                basis=f"{{}} of {label(other[0])} {{}}",
                basis_terms=(term(SLOWER_RATIO, "ratio"), term(other[1], "B/s")),
                source="pushes",
            )
        )
    if cap is not None and (cap.self_limited_share or 0) >= SELF_LIMITED_SHARE:
        score += 0.15
        evidence.append(
            Evidence(
                what="TCP sender self-limited (waiting on the SSH channel)",
                value=cap.self_limited_share,
                unit="ratio",
                threshold=SELF_LIMITED_SHARE,
                comparison=">=",
                source=cap.source,
            )
        )
    next_limit = other[1] if other else (path_rate_bytes_per_s(obs) or tcp_window_rate(obs, p))
    small = False
    window = ledger.initial_window_bytes if ledger else None
    if ledger is not None and window and rtt:
        bdp = next_limit * rtt if next_limit else None
        small = window < bdp if bdp is not None else window < CLAMP_FALLBACK_WINDOW_BYTES
        if small:
            score += 0.25
            evidence.append(
                Evidence(
                    what="SSH channel window granted by the server",
                    value=window,
                    unit="B",
                    threshold=bdp if bdp else CLAMP_FALLBACK_WINDOW_BYTES,
                    comparison="<",
                    basis="BDP" if bdp else "",
                    source=ledger.source,
                )
            )
        # The rate the window allows, reached: the window binds, whatever the BDP estimate
        # says (the other protocols' rate may itself be held back). A third of it still
        # counts: at a long RTT a short push spends much of its time in slow start. A rate
        # far below it (a starved client, an SSH-only run on a short path: 0.2 in the lab's
        # matrix) leaves the window out of it.
        cap_rate = window / rtt
        reached = rate is not None and (
            REACHES_CAP_SHARE * cap_rate <= rate <= MATCHES_CAP_RATIO * cap_rate)
        if reached:
            score += 0.2
            evidence.append(
                Evidence(
                    what="measured SSH upload rate vs what the window allows",
                    value=rate,
                    unit="B/s",
                    threshold=cap_rate,
                    basis="window / RTT = {} / {}",
                    basis_terms=(term(window, "B"), term(rtt, "s")),
                    source=ledger.source,
                )
            )
        if ledger.zero_window_s and up and ledger.zero_window_s >= 0.2 * up:
            score += 0.15
            evidence.append(
                Evidence(
                    what="time at zero SSH channel window",
                    value=ledger.zero_window_s,
                    unit="s",
                    threshold=0.2 * up,
                    comparison=">=",
                    basis="{} of the upload {}",
                    basis_terms=(term(0.2, "ratio"), term(up, "s")),
                    source=ledger.source,
                )
            )
    if not (slower or small) or size is None or up is None or rate is None:
        return None
    cost = saved_time_s(size, up, next_limit) or 0.0
    window_text = (
        f"; the {window} B channel window allows {fmt_rate(window / rtt)}" if window and rtt else ""
    )
    other_text = f" vs {label(other[0])} {fmt_rate(other[1])}" if other else ""
    return Hit(
        score=score,
        cost_s=cost,
        summary=f"SSH pushes uploaded at {fmt_rate(rate)}{other_text}{window_text}.",
        evidence=tuple(evidence),
        fix=(
            "Stock OpenSSH has a fixed channel window with no `sshd_config` option: run HPN-SSH "
            "(dynamic windows) on the server and client, or push large repositories over "
            "HTTPS from far-away sites (fewer round trips per window)."
        ),
    )


def ssh_maxstartups(obs: Observations) -> Hit | None:
    bursts = [
        b
        for b in obs.bursts
        if b.protocol == "ssh"
        and sum(b.failed_by_kind.get(k, 0) for k in (*REFUSALS, FailureKind.RESET)) > 0
    ]
    host = obs.host
    log = [line for line in (host.kernel_log if host else ()) if "MaxStartups" in line]
    configured = config_lines(obs, r"^MaxStartups$")
    if not bursts and not log:
        return None
    score = 0.45 if bursts else 0.3
    if log:
        score += 0.35
    if configured:
        score += 0.1
    evidence: list[Evidence] = []
    for burst in bursts:
        evidence.extend(burst_evidence(burst))
    evidence.extend(Evidence(what="sshd log", text=line.strip(), source="host log") for line in log)
    evidence.extend(config_evidence(configured))
    rtt = rtt_s(obs)
    cost = max((burst_cost_s(b, rtt, syn=False) for b in bursts), default=0.0)
    refused = sum(b.failed for b in bursts)
    conc = max((b.concurrency for b in bursts), default=0)
    setting = f" (`MaxStartups {configured[0].value}`)" if configured else ""
    return Hit(
        score=score,
        cost_s=cost,
        summary=(
            f"sshd dropped {refused} of {conc} concurrent SSH connections before "
            f"authentication{setting}: the MaxStartups limit on unauthenticated connections."
            if bursts
            else "sshd logged MaxStartups throttling of unauthenticated connections."
        ),
        evidence=tuple(evidence),
        fix=(
            "Raise sshd `MaxStartups` (default `10:30:100` starts refusing 30% of new "
            "unauthenticated connections beyond 10), e.g. `MaxStartups 100:30:300`, shorten "
            "`LoginGraceTime`, and make clients retry with backoff."
        ),
    )
