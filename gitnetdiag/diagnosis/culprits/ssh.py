"""SSH: the channel window and sshd's MaxStartups."""

from __future__ import annotations

from gitnetdiag.diagnosis.culprits._common import (
    MATCHES_CAP_RATIO,
    SELF_LIMITED_SHARE,
    SLOWER_RATIO,
    ZERO_CREDIT_SHARE,
    Hit,
    Tally,
    below_bdp,
    burst_cost_s,
    burst_evidence,
    config_evidence,
    config_lines,
    label,
    rate_vs_window,
    self_limited,
    share_of_upload,
    slower_than,
    window_below,
)
from gitnetdiag.diagnosis.culprits.headroom import window_headroom
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
from gitnetdiag.diagnosis.observations import Observations, SshLedger
from gitnetdiag.diagnosis.units import fmt_rate
from gitnetdiag.outcomes import REFUSALS, FailureKind

REACHES_CAP_SHARE = 1 / 3
"""The SSH rate reaches the channel window's rate (window / RTT) from this share up."""


def _window_signals(tally: Tally, ledger: SshLedger, rate: float | None, rtt: float,
                    bdp: float | None, up: float | None) -> bool:
    """The channel window the server granted: below the BDP, reached by the rate, at zero
    for a share of the upload. True when it is small."""
    window = ledger.initial_window_bytes
    assert window
    small = below_bdp(window, bdp)
    if small:
        tally.add("small-window", window_below("SSH channel window granted by the server",
                                               window, bdp, ledger.source,
                                               basis="BDP" if bdp else ""))
    # The rate the window allows, reached: the window binds, whatever the BDP estimate
    # says (the other protocols' rate may itself be held back). A third of it still
    # counts: at a long RTT a short push spends much of its time in slow start. A rate
    # far below it (a starved client, an SSH-only run on a short path: 0.2 in the lab's
    # matrix) leaves the window out of it.
    cap_rate = window / rtt
    if rate is not None and REACHES_CAP_SHARE * cap_rate <= rate <= MATCHES_CAP_RATIO * cap_rate:
        tally.add("rate-at-window", rate_vs_window(
            "measured SSH upload rate vs what the window allows", rate, window, rtt,
            ledger.source))
    if ledger.zero_window_s and up and ledger.zero_window_s >= ZERO_CREDIT_SHARE * up:
        tally.add("zero-window", share_of_upload("time at zero SSH channel window",
                                                 ledger.zero_window_s, up, ledger.source))
    return small


def ssh_channel_window(obs: Observations) -> Hit | None:
    p = obs.protocols.get("ssh")
    if p is None:
        return None
    rtt, size, up = rtt_s(obs, p), push_bytes(p), upload_s(p)
    rate, other = upload_rate_bytes_per_s(p), best_other_rate(obs, "ssh")
    ledger, cap = p.ssh_ledger, p.capture
    # The channel window's own evidence against it: the rate it allows (the granted
    # window, else the most in flight, which the channel credit bounds) far above what
    # any push reached or needed (:mod:`.headroom`).
    seen = ledger.initial_window_bytes if ledger else (cap.bytes_in_flight_p95 if cap else None)
    if window_headroom(obs, seen, rtt) is not None:
        return None
    tally = Tally("ssh-channel-window")
    slower = rate is not None and other is not None and rate < SLOWER_RATIO * other[1]
    if slower and rate is not None and other is not None:
        tally.add("slower", slower_than("SSH upload rate", rate, other, "pushes"))
    if cap is not None and (cap.self_limited_share or 0) >= SELF_LIMITED_SHARE:
        tally.add("self-limited",
                  self_limited("TCP sender self-limited (waiting on the SSH channel)", cap))
    next_limit = other[1] if other else (path_rate_bytes_per_s(obs) or tcp_window_rate(obs, p))
    small = False
    window = ledger.initial_window_bytes if ledger else None
    if ledger is not None and window and rtt:
        bdp = next_limit * rtt if next_limit else None
        small = _window_signals(tally, ledger, rate, rtt, bdp, up)
    if not (slower or small) or size is None or up is None or rate is None:
        return None
    cost = saved_time_s(size, up, next_limit) or 0.0
    window_text = (
        f"; the {window} B channel window allows {fmt_rate(window / rtt)}" if window and rtt else ""
    )
    other_text = f" vs {label(other[0])} {fmt_rate(other[1])}" if other else ""
    return tally.hit(
        cost_s=cost,
        summary=f"SSH pushes uploaded at {fmt_rate(rate)}{other_text}{window_text}.",
        fix=(
            "Stock OpenSSH has a fixed channel window with no `sshd_config` option: run HPN-SSH "
            "(dynamic windows) on the server and client, or push large repositories over "
            "HTTPS from far-away sites (fewer round trips per window)."
        ),
        compares=("ssh", other[0]) if slower and other is not None else None,
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
    tally = Tally("ssh-maxstartups")
    tally.add("burst-refused" if bursts else "log-only")
    if log:
        tally.add("log")
    if configured:
        tally.add("configured")
    tally.note(*(item for burst in bursts for item in burst_evidence(burst)))
    tally.note(*(Evidence(what="sshd log", text=line.strip(), source="host log") for line in log))
    tally.note(*config_evidence(configured))
    rtt = rtt_s(obs)
    cost = max((burst_cost_s(b, rtt, syn=False) for b in bursts), default=0.0)
    refused = sum(b.failed for b in bursts)
    conc = max((b.concurrency for b in bursts), default=0)
    setting = f" (`MaxStartups {configured[0].value}`)" if configured else ""
    return tally.hit(
        cost_s=cost,
        summary=(
            f"sshd dropped {refused} of {conc} concurrent SSH connections before "
            f"authentication{setting}: the MaxStartups limit on unauthenticated connections."
            if bursts
            else "sshd logged MaxStartups throttling of unauthenticated connections."
        ),
        fix=(
            "Raise sshd `MaxStartups` (default `10:30:100` starts refusing 30% of new "
            "unauthenticated connections beyond 10), e.g. `MaxStartups 100:30:300`, shorten "
            "`LoginGraceTime`, and make clients retry with backoff."
        ),
    )
