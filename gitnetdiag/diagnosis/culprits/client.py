"""The client: pack-objects CPU, and HTTP stack versions with known bugs in the direction
measured (``data/libcurl_bugs.toml``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gitnetdiag.diagnosis.culprits._common import (
    SLOW_PHASE_S,
    SLOWER_RATIO,
    Hit,
    Tally,
    above_zero,
    failure_cost_s,
    label,
    lost_pushes_cost_s,
    phase_evidence,
    phase_values,
    term,
    typical_costliest,
)
from gitnetdiag.diagnosis.culprits.knownbugs import KnownBug, bugs_for
from gitnetdiag.diagnosis.culprits.weights import weight
from gitnetdiag.diagnosis.measures import (
    best_other_rate,
    failed_pushes,
    push_bytes,
    push_duration_s,
    saved_time_s,
    upload_rate_bytes_per_s,
    upload_s,
)
from gitnetdiag.diagnosis.model import Evidence, Quantity
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.transfers import CpuQuota, TransferObservation
from gitnetdiag.diagnosis.units import fmt_s
from gitnetdiag.outcomes import REFUSALS


def client_pack_cpu(obs: Observations) -> Hit | None:
    values = phase_values(obs, "pack_objects_s")
    if not values:
        return None
    pack = sorted(v for _, v in values)[len(values) // 2]
    durations = [d for d in (push_duration_s(obs.protocols[n]) for n, _ in values) if d]
    total = min(durations) if durations else None
    if pack < SLOW_PHASE_S or (total is not None and pack < 0.3 * total):
        return None
    share = f" of a {fmt_s(total)} push" if total else ""
    return Hit(
        score=weight("client-pack-cpu", "slow-pack-objects"),
        cost_s=pack,
        summary=(
            f"The client spent {fmt_s(pack)}{share} in pack-objects (counting objects and the "
            "delta search) before sending."
        ),
        evidence=tuple(
            phase_evidence(
                values,
                "pack-objects",
                threshold=max(SLOW_PHASE_S, 0.3 * total) if total else SLOW_PHASE_S,
                basis="the larger of {} and {} of the {} push" if total else "",
                basis_terms=(term(SLOW_PHASE_S, "s"), term(0.3, "ratio"), term(total, "s"))
                if total
                else (),
            )
        ),
        fix=(
            "Give the client's git CPU: the delta search (\"Compressing objects\") runs on "
            "`pack.threads` cores (default: all), so a CPU quota (container, CI runner) or a "
            "busy machine stalls the push here; check `pack.threads` is not pinned to 1. A "
            "smaller `pack.window` (default 10) or `pack.depth` cuts the search, "
            "`pack.compression` 1 (or 0 for already-compressed data) the deflate; "
            "`core.bigFileThreshold` or Git LFS keeps large binaries out of it."
        ),
    )


def _version(obs: Observations, component: str) -> str | None:
    raw = {
        "libcurl": obs.run.libcurl_version,
        "git": obs.run.git_version,
        "nghttp2": obs.run.nghttp2_version,
        "openssh": obs.run.openssh_version,
    }.get(component)
    if not raw:
        return None
    match = re.search(r"\d+(?:\.\d+)+(?:p\d+)?", raw)
    return match.group(0) if match else raw


def _stopped_with_credit(obs: Observations) -> Hit | None:
    """A hung HTTP/2 push whose decrypted frames show the client stopping short of the
    request body's end (no END_STREAM) with stream and connection credit left."""
    p = obs.protocols.get("h2")
    stall = p.h2_client_stall if p is not None else None
    if p is None or stall is None:
        return None
    cost, failed, total = failure_cost_s(obs, "h2", {"hung", "timeout", "other"})
    if not failed:
        return None
    version = obs.run.libcurl_version
    evidence = [
        above_zero("HTTP/2 pushes hung", failed, "pushes", of=total),
        Evidence(what=f"HTTP/2 push {stall.push}: request body sent, no END_STREAM",
                 value=stall.sent_bytes, unit="B", source=stall.source),
        *(Evidence(what=f"HTTP/2 push {stall.push}: {kind} send credit left", value=left,
                   unit="B", threshold=0, comparison=">",
                   basis=f"the server's {kind} window had room", source=stall.source)
          for kind, left in (("stream", stall.stream_credit_left_bytes),
                             ("connection", stall.connection_credit_left_bytes))),
    ]
    if stall.idle_s is not None:
        evidence.append(Evidence(what=f"HTTP/2 push {stall.push}: client idle with credit",
                                 value=stall.idle_s, unit="s", source=stall.source))
    if version:
        evidence.append(Evidence(what="libcurl version", text=version, source="run metadata"))
    client = f"libcurl {version}" if version else "the client's HTTP/2 stack"
    window = p.h2_ledger.server_initial_window_bytes if p.h2_ledger is not None else None
    if window is not None:
        evidence.append(Evidence(what="HTTP/2: server stream window (native probe)",
                                 value=window, unit="B", source=p.h2_ledger.source
                                 if p.h2_ledger is not None else "native probe"))
    trigger = (f" Here the server grants {window} B per stream: the client waits on nearly "
               "every frame." if window is not None and window <= 65535 else "")
    return Hit(
        score=weight("client-http-stack", "stall-with-credit"),
        cost_s=cost,
        cost_protocol="h2",
        summary=(
            f"{failed} of {total} HTTP/2 pushes hung, and the decrypted frames of push "
            f"{stall.push} show {client} stopping before the end of the request body (no "
            f"END_STREAM after {stall.sent_bytes} B) with "
            f"{stall.stream_credit_left_bytes} B of stream credit left: the server was "
            "waiting for data it had room for, the client never sent it."
        ),
        evidence=tuple(evidence),
        fix=(
            f"Upgrade {client} (git uses the system libcurl; curl 8.2 fixed HTTP/2 uploads "
            "stalling on the last part of a request body, curl PR 11342); meanwhile "
            "`git config http.version HTTP/1.1` avoids the HTTP/2 path. The stall comes at "
            "a wait for the server's WINDOW_UPDATE: a larger server HTTP/2 window (fewer "
            "waits) makes it rarer." + trigger
        ),
    )


def _fix(bug: KnownBug) -> str:
    target = (f"Upgrade {bug.component} to {bug.fixed_in} or newer" if bug.fixed_in else
              f"Upgrade {bug.component} past {bug.versions[-1]} (the fixed release is not "
              f"documented in {bug.reference})")
    return (f"{target} (git uses the system libcurl); meanwhile "
            "`git config http.version HTTP/1.1` avoids the HTTP/2 path.")


def _bug_hit(obs: Observations, bug: KnownBug, version: str) -> Hit | None:
    """The finding of one known bug of the client's release, None when its protocol was
    not measured."""
    p = obs.protocols.get(bug.protocol)
    if p is None:
        return None
    cost, failed, total = failure_cost_s(obs, bug.protocol, {"hung", "timeout", "reset", "other"})
    rate, other = upload_rate_bytes_per_s(p), best_other_rate(obs, bug.protocol)
    slow = rate is not None and other is not None and rate < SLOWER_RATIO * other[1]
    fixed = bug.fixed_in or "not documented"
    evidence = [Evidence(what=f"{bug.component} version", text=version,
                         basis=f"affected: {', '.join(bug.versions)}; fixed in: {fixed}",
                         source=f"run metadata; {bug.reference} ({bug.source})")]
    if failed:
        first = next(f for f in failed_pushes(p) if f.error_kind not in REFUSALS)
        evidence.append(above_zero(
            f"{label(bug.protocol)} pushes failed or stalled", failed,
            "pushes: " + (first.error_message or first.error_kind or ""), of=total))
    if not failed and not slow:
        score, cost = weight("client-http-stack", "bug-only"), 0.0
    else:
        score = weight("client-http-stack", "bug-failed" if failed else "bug-slow")
    if slow and rate is not None and other is not None:
        size, up = push_bytes(p), upload_s(p)
        if size is not None and up is not None:
            cost += saved_time_s(size, up, other[1]) or 0.0
    told = f"; {failed} of {total} {label(bug.protocol)} pushes failed or stalled." if failed \
        else "."
    return Hit(
        score=score, cost_s=cost,
        summary=(f"The client's {bug.component} {version} has a known bug: {bug.what} "
                 f"({bug.reference}){told}"),
        evidence=tuple(evidence), fix=_fix(bug),
        compares=(bug.protocol, other[0]) if slow and other is not None else None)


def _spoiled_body(obs: Observations) -> Hit | None:
    """Failed HTTP/2 pushes whose decrypted request body ended with a pack that fails its
    own SHA-1 trailer: git's HTTP stack changed what git wrote (the server and any edge
    only refused what they were sent)."""
    p = obs.protocols.get("h2")
    body = p.h2_spoiled_body if p is not None else None
    if p is None or body is None:
        return None
    spoiled = [push for push in p.pushes if push.body_spoiled]
    if not spoiled:
        return None
    cost = lost_pushes_cost_s(obs, "h2", spoiled)
    version = obs.run.libcurl_version
    client = f"libcurl {version}" if version else "the client's HTTP stack"
    evidence = [
        above_zero("HTTP/2 pushes failed with a pack not git's", len(spoiled),
                   "pushes: " + (spoiled[0].error_message or str(spoiled[0].error_kind)),
                   of=len(p.pushes)),
        Evidence(what=f"HTTP/2 push {body.push}: request body sent whole (END_STREAM)",
                 value=body.body_bytes, unit="B", source=body.source),
        Evidence(what=f"HTTP/2 push {body.push}: pack in it, its SHA-1 trailer wrong",
                 value=body.pack_bytes, unit="B",
                 basis="git ends a pack with the SHA-1 of every byte before it "
                 "(gitformat-pack(5)); it is computed over what git wrote",
                 source=body.source),
    ]
    extra = body.pack_bytes - body.built_pack_bytes if body.built_pack_bytes else None
    if extra:
        evidence.append(Evidence(
            what=f"HTTP/2 push {body.push}: pack sent minus the pack built", value=extra,
            unit="B", basis=f"the probe built {body.built_pack_bytes} B from the same objects",
            source=body.source))
    if version:
        evidence.append(Evidence(what="libcurl version", text=version, source="run metadata"))
    return Hit(
        score=weight("client-http-stack", "spoiled-body"),
        cost_s=cost,
        cost_protocol="h2",
        summary=(
            f"{len(spoiled)} of {len(p.pushes)} HTTP/2 pushes failed with a request body "
            f"that is not the pack git built: in push {body.push}'s, decrypted, {client} sent "
            f"{body.body_bytes} B whose pack ({body.pack_bytes} B) fails its own SHA-1 "
            "trailer: the pack was broken before it left the client, so whatever answered "
            "the push (server or edge) answered a pack no git can read; the failure is the "
            "client's, not theirs."
        ),
        evidence=tuple(evidence),
        fix=(
            "Upgrade libcurl (git uses the system libcurl; this lab's 7.88.1 was seen "
            "sending one 65,535 B window of a body twice under CPU load, docs/lab.md); "
            "meanwhile `git config http.version HTTP/1.1` avoids the HTTP/2 path. In the lab "
            "it struck 1 push of 6 under load and none unloaded, so a retry may pass."
        ),
    )


def client_http_stack(obs: Observations) -> Hit | None:
    """A client stack seen spoiling a request body or stalling with credit (an upload),
    else a release with a known bug in the direction measured (``obs.run.transfer``) whose
    protocol was measured."""
    for seen in (_spoiled_body(obs), _stopped_with_credit(obs)):
        if seen is not None:
            return seen
    for bug in bugs_for(obs.run.transfer):
        version = _version(obs, bug.component)
        if version is None or version not in bug.versions:
            continue
        hit = _bug_hit(obs, bug, version)
        if hit is not None:
            return hit
    return None


# The download direction: after the pack arrives, git's ``index-pack`` inflates every
# object, resolves each delta against its base and hashes the result (trace2's
# ``Resolving deltas`` and ``Checking objects`` regions). On a starved client (a CI runner
# under load, a CPU quota) or for a delta-heavy history that work, not the network, is the
# clone's time. The same seconds on every protocol say it is the client's work.

INDEX_PACK_MIN_S = 1.0
"""index-pack seconds that count as the client's work, not noise."""
INDEX_PACK_SHARE = 0.3
"""index-pack at least this share of the whole clone."""
SAME_WORK_SPREAD = 2.0
"""index-pack on every protocol within this factor: the client's work, not a transport's."""

INDEX_PACK_FIX = (
    "give the client CPU for index-pack: run the clone where cores are free (a CI runner "
    "without a CPU quota, or a larger one), let index-pack use every core (git config "
    "pack.threads 0, the default, or index-pack.threads), and ask for less work: "
    "'git clone --filter=blob:none' or a shallow clone (--depth 1); on the server, "
    "'git repack -adf --depth=50' keeps delta chains short")


def _quota_evidence(quota: CpuQuota, throttled_s: float | None, total_s: float
                    ) -> list[Evidence]:
    """What the CPU quota of git's cgroup did over the clone before its checkout (the span
    compare times), from its ``cpu.stat``."""
    cores = quota.quota_cores
    late = "" if quota.from_git_start else " from git's move into its cgroup"
    span = "to the checkout" if quota.until_s is not None else "to git's exit"
    source = (f"cgroup cpu.stat{late} {span} ({quota.readings} readings): {quota.source}")
    if cores is None:
        return [Evidence(what="CPU quota of git's cgroup", text="none set (or not readable)",
                         source=source)]
    period = (quota.period_us or 0) / 1e6
    facts = [Evidence(what="CPU quota of git's cgroup (share of one core)", value=cores,
                      unit="ratio", text=f"{quota.quota_us} us per {quota.period_us} us period",
                      source=source)]
    if throttled_s is not None:
        facts.append(Evidence(
            what="wall time the quota held the clone throttled before its checkout",
            value=throttled_s, unit="s", of=total_s,
            basis=("throttled periods outside the server's wait x (period - quota) = "
                   "{} x ({} - {})"),
            basis_terms=(Quantity(value=quota.priced_periods, unit="count"),
                         Quantity(value=period, unit="s"),
                         Quantity(value=period * cores, unit="s")),
            source=source))
    if quota.waiting_throttled_periods:
        facts.append(Evidence(
            what="throttled periods in the server's wait (not priced: the clone waits on the "
                 "server whatever its CPU)", value=quota.waiting_throttled_periods,
            unit="count", source=source))
    if quota.throttled_s is not None:
        facts.append(Evidence(what="run-queue time throttled before the checkout (summed over "
                              "CPUs)", value=quota.throttled_s, unit="s", source=source))
    if quota.usage_s is not None:
        facts.append(Evidence(what="CPU time the clone's cgroup used before its checkout",
                              value=quota.usage_s, unit="s", source=source))
    if quota.checkout_throttled_s is not None:
        facts.append(Evidence(what="run-queue time throttled during the checkout (not priced)",
                              value=quota.checkout_throttled_s, unit="s", source=source))
    return facts


def _index_pack_hit(obs: TransferObservation, peers: Sequence[float]) -> Hit | None:
    phases = obs.phases
    index_s = phases.index_pack_s
    # The clone up to the end of index-pack: checkout is a phase of its own (a bare clone, a
    # fetch into an existing repository have none), and the client's too.
    total = (phases.total_s or 0.0) - (phases.checkout_s or 0.0)
    if index_s is None or total <= 0 or index_s < INDEX_PACK_MIN_S:
        return None
    if index_s < INDEX_PACK_SHARE * total:
        return None
    tally = Tally("client-index-pack-cpu")
    tally.add_part("share-above-threshold", (index_s / total - INDEX_PACK_SHARE) / 0.3)
    tally.add("index-pack-share", Evidence(
        what="index-pack resolving deltas and checking objects", value=index_s, unit="s",
        threshold=INDEX_PACK_SHARE * total, comparison=">=",
        basis="30% of the clone's {} before checkout",
        basis_terms=(Quantity(value=total, unit="s"),),
        source=f"trace2 progress regions, fetch {obs.protocol} #{obs.repeat}"))
    if phases.received_bytes:
        tally.note(Evidence(what="pack bytes index-pack received", unit="B",
                                value=float(phases.received_bytes), source="trace2 total_bytes"))
    others = [s for s in peers if s > 0]
    if len(others) >= 2 and max(others) <= SAME_WORK_SPREAD * min(others):
        tally.add("same-on-every-transport", Evidence(
            what="index-pack on the fastest protocol (the same work on every transport)",
            value=min(others), unit="s", of=max(others),
            source=f"trace2, {len(others)} clones"))
    if phases.checkout_s is not None:
        tally.note(Evidence(what="checkout (unpack_trees)", value=phases.checkout_s,
                                unit="s", source="trace2"))
    # A CPU quota that throttled the clone: its price is the clone's throttled time up to
    # its checkout (the wait for the first pack byte and the work after index-pack are held
    # too), not index-pack's alone; without the counters (or a quota that never bound)
    # index-pack's. The checkout is outside, as in the clone's time compare measures.
    quota = obs.cpu_quota
    throttled = quota.throttled_wall_s if quota is not None else None
    if quota is not None:
        tally.note(*_quota_evidence(quota, throttled, quota.until_s or obs.wall_s))
    summary = (f"the client's index-pack took {index_s:.1f} s of the clone's {total:.1f} s "
               "before checkout, resolving deltas: the client's CPU, not the network, set "
               "the clone's time")
    cost = index_s
    if throttled and quota is not None and quota.quota_cores is not None:
        cost = throttled
        summary += (f"; its cgroup's CPU quota ({quota.quota_cores:.0%} of one core) held the "
                    f"clone throttled {throttled:.1f} s before its checkout")
    return tally.hit(cost_s=cost, cap="cap", summary=summary, fix=INDEX_PACK_FIX,
                     cost_protocol=obs.protocol)


def client_index_pack_cpu(run: Observations) -> Hit | None:
    """A download: the client's index-pack (resolving deltas) dominates the clone."""
    peers = [obs.phases.index_pack_s for obs in run.transfers
             if obs.phases.index_pack_s is not None]
    return typical_costliest(run.transfers, lambda obs: _index_pack_hit(obs, peers))
