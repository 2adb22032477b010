"""The download direction's report: each clone's phases, its TCP evidence, the culprits.

Three renderers of the same inputs (``fetch.json``, the observations and the
ranked findings the fetch pipeline derived): plain terminal text, Markdown,
and JSON (schema :data:`FETCH_REPORT_SCHEMA`, docs/report-schema.md). Each
says the direction; none computes anything the others lack.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from gitnetdiag.analysis.fetchwindow import DownloadPacing
from gitnetdiag.analysis.sshdownload import SshDownloadPacing
from gitnetdiag.diagnosis.culprits.download import FetchObservation
from gitnetdiag.diagnosis.model import Finding, MeasurementFailure
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, BurstResult
from gitnetdiag.report.redact import redact_diagnosis
from gitnetdiag.report.units import fmt_evidence_threshold, fmt_evidence_value, fmt_quantity
from gitnetdiag.rundir.fetchrecords import FetchManifest, FetchSeed
from gitnetdiag.rundir.records import RefCleanup
from gitnetdiag.serial import to_jsonable

FETCH_REPORT_SCHEMA = "gitnetdiag.fetch-report/3"
"""Schema id of the fetch report's JSON."""

COLUMNS = ("protocol", "outcome", "received", "rate", "refs", "ref adv.", "1st pack byte",
            "server wait", "index-pack", "checkout", "adv. window", "rtt")
"""The clones table's columns, the same in the terminal, Markdown and HTML."""


def fetch_row(obs: FetchObservation) -> tuple[str, ...]:
    """One clone's cells, in :data:`COLUMNS` order (every format shows the same)."""
    ph, tcp = obs.phases, obs.tcp
    return (
        f"{obs.protocol} #{obs.repeat}", obs.outcome, fmt_quantity(obs.moved_bytes, "B"),
        fmt_quantity(obs.rate_bytes_per_s, "B/s"),
        fmt_quantity(ph.ref_count, "count") if ph.ref_count is not None else "-",
        fmt_quantity(ph.ref_advertisement_s, "s"), fmt_quantity(ph.first_pack_byte_s, "s"),
        fmt_quantity(ph.server_pack_generation_s, "s"), fmt_quantity(ph.index_pack_s, "s"),
        fmt_quantity(ph.checkout_s, "s"),
        fmt_quantity(tcp.advertised_window_max_bytes if tcp else None, "B"),
        fmt_quantity(obs.rtt_s, "s"),
    )


def _table(rows: Sequence[tuple[str, ...]], *, markdown: bool) -> list[str]:
    return _table_of(COLUMNS, rows, markdown=markdown)


def _finding_lines(rank: int, finding: Finding, *, markdown: bool) -> list[str]:
    head = (f"{rank}. **{finding.id}** ({finding.title}): costs ~{finding.cost_s:.1f} s, "
            f"score {finding.score:.2f}" if markdown else
            f"{rank}. {finding.id} ({finding.title}): costs ~{finding.cost_s:.1f} s, "
            f"score {finding.score:.2f}")
    lines = [head, f"   {finding.summary}"]
    for item in finding.evidence:
        threshold = fmt_evidence_threshold(item)
        lines.append(f"   - {item.what}: {fmt_evidence_value(item)}"
                     + (f" ({threshold})" if threshold else "")
                     + (f" [{item.source}]" if item.source else ""))
    lines.append(f"   fix: {finding.fix}")
    return lines


DIRECTION_LINE = "direction: fetch (download: the server sends, this client receives)"
"""How every fetch report names its direction (the push report says ``push``)."""


def burst_line(burst: BurstResult) -> str:
    """One burst (``--burst``): how many of its ls-remotes failed, and how, and its
    connections' handshake trouble."""
    failed = ", ".join(f"{kind} {n}" for kind, n in burst.failed_by_kind.items())
    return (f"burst {PROTOCOL_LABELS.get(burst.protocol, burst.protocol)} "
            f"x{burst.concurrency}: {burst.ok} ok" + (f", {burst.failed} failed ({failed})"
                                                     if burst.failed else "")
            + (f"; {burst.syn_retransmissions} SYN and {burst.synack_retransmissions} SYN-ACK "
               "retransmissions" if burst.handshakes_counted
               else "; SYN and SYN-ACK retransmissions not counted (no capture analysed)")
            + (f", connect max {fmt_quantity(burst.connect_max_s, 's')}"
               if burst.connect_max_s is not None else ""))


def seed_line(seed: FetchSeed | None) -> str:
    """What the clones fetched, and whether anything was written on the server."""
    if seed is None:
        return "fetched: what the URL serves (read-only: nothing was written on the server)"
    pushed = (f"pushed over {seed.protocol} in {fmt_quantity(seed.push_wall_s, 's')}"
              if seed.pushed else f"not pushed ({seed.push_error or 'no protocol took it'})")
    gone = {True: "gone on the server", False: "STILL LISTED on the server",
            None: "not listed afterwards"}[seed.gone_on_server]
    line = (f"fetched: the throwaway branch {seed.branch} ({fmt_quantity(seed.size_bytes, 'B')}"
            f" generated, {pushed}); clean-up: {seed.cleanup}, {gone}")
    if seed.cleanup in (RefCleanup.LEFTOVER, RefCleanup.UNCONFIRMED) and seed.remove_command:
        line += f"; remove it with: {seed.remove_command}"
    return line


LEDGER_COLUMNS = ("window advertised", "outcome", "received", "rate", "DATA frames",
                  "median burst", "longest pause")
"""The native HTTP/2 download ledgers' table, one row per window, side by side."""
LEDGER_TITLE = "HTTP/2 download ledger (native upload-pack fetch): the server's DATA pacing"


def ledger_row(pacing: DownloadPacing) -> tuple[str, ...]:
    """One window's cells, in :data:`LEDGER_COLUMNS` order."""
    if pacing.error:
        return (f"{pacing.label} ({fmt_quantity(pacing.window_bytes, 'B')})", "failed",
                pacing.error, "", "", "", "")
    return (f"{pacing.label} ({fmt_quantity(pacing.window_bytes, 'B')})", pacing.outcome,
            fmt_quantity(pacing.received_bytes, "B"), fmt_quantity(pacing.rate_bytes_per_s, "B/s"),
            fmt_quantity(pacing.frames, "count"), fmt_quantity(pacing.median_burst_bytes, "B"),
            fmt_quantity(pacing.longest_gap_s, "s"))


SSH_LEDGER_COLUMNS = ("window granted", "max packet", "outcome", "received", "rate", "reads",
                      "median burst", "longest pause", "adjusts sent", "median adjust",
                      "least credit left")
"""The native SSH download ledger's table."""
SSH_LEDGER_TITLE = ("SSH download ledger (native upload-pack fetch): the server's pacing under "
                    "the channel window this client granted")


def ssh_ledger_row(pacing: SshDownloadPacing) -> tuple[str, ...]:
    """The SSH ledger's cells, in :data:`SSH_LEDGER_COLUMNS` order."""
    if pacing.error:
        return ("-", "-", "failed", pacing.error, *([""] * 7))
    return (fmt_quantity(pacing.client_window_bytes, "B"),
            fmt_quantity(pacing.client_max_packet_bytes, "B"), pacing.outcome,
            fmt_quantity(pacing.received_bytes, "B"),
            fmt_quantity(pacing.rate_bytes_per_s, "B/s"), fmt_quantity(pacing.reads, "count"),
            fmt_quantity(pacing.median_burst_bytes, "B"), fmt_quantity(pacing.longest_gap_s, "s"),
            fmt_quantity(pacing.adjusts, "count"), fmt_quantity(pacing.median_adjust_bytes, "B"),
            fmt_quantity(pacing.least_credit_bytes, "B"))


WIRE_COLUMNS = ("clone", "libcurl", "its release's window", "stream window (git's frames)",
                "connection window (git's frames)", "WINDOW_UPDATEs sent", "DATA received")
"""git's own HTTP/2 windows (``--full``) beside its libcurl release's documented one."""
WIRE_TITLE = ("git's HTTP/2 window (its decrypted frames, --full) beside the window its "
              "libcurl release is documented to advertise")


def wire_row(obs: FetchObservation) -> tuple[str, ...] | None:
    """One HTTP/2 clone's window cells, in :data:`WIRE_COLUMNS` order; None without frames."""
    seen = obs.git_h2_window
    if seen is None:
        return None
    return (f"{obs.protocol} #{obs.repeat}", obs.libcurl or "-",
            fmt_quantity(obs.libcurl_window_bytes, "B"),
            fmt_quantity(seen.stream_window_bytes, "B"),
            fmt_quantity(seen.connection_window_bytes, "B"),
            fmt_quantity(seen.window_updates, "count"), fmt_quantity(seen.data_bytes, "B"))


SENDER_COLUMNS = ("clone", "sent", "in flight (median)", "send buffer", "client window",
                  "send-buffer bound", "window bound", "cwnd bound", "app bound")
"""The server's sockets' table (a local server only), one row per clone."""
SENDER_TITLE = "The server's socket (its TCP_INFO where it runs): what held its bytes in flight"


def sender_row(obs: FetchObservation) -> tuple[str, ...] | None:
    """One clone's server-side cells, in :data:`SENDER_COLUMNS` order; None unsampled."""
    sender = obs.sender
    if sender is None:
        return None
    return (f"{obs.protocol} #{obs.repeat}", fmt_quantity(sender.sent_bytes, "B"),
            fmt_quantity(sender.flight_median_bytes, "B"),
            fmt_quantity(sender.send_buffer_max_bytes, "B"),
            fmt_quantity(sender.peer_window_median_bytes, "B"),
            fmt_quantity(sender.sndbuf_limited_share, "ratio"),
            fmt_quantity(sender.rwnd_limited_share, "ratio"),
            fmt_quantity(sender.cwnd_full_share, "ratio"),
            fmt_quantity(sender.app_share, "ratio"))


def _table_of(columns: Sequence[str], rows: Sequence[tuple[str, ...]], *,
              markdown: bool) -> list[str]:
    if markdown:
        return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns),
                *("| " + " | ".join(row) + " |" for row in rows)]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*columns), *(fmt.format(*row).rstrip() for row in rows)]


def _render(manifest: FetchManifest, observations: Sequence[FetchObservation],
            findings: Sequence[Finding], *, markdown: bool,
            pacing: Sequence[DownloadPacing] = (),
            ssh_pacing: Sequence[SshDownloadPacing] = (), verdict: str | None = None,
            failures: Sequence[MeasurementFailure] = (),
            bursts: Sequence[BurstResult] = (), headline: str = "") -> str:
    # Every string goes through the push reports' redaction (a URL or header in an error).
    manifest, observations, findings, pacing, ssh_pacing, failures, bursts, headline = \
        redact_diagnosis((manifest, tuple(observations), tuple(findings), tuple(pacing),
                          tuple(ssh_pacing), tuple(failures), tuple(bursts), headline))
    title = "# gitnetdiag: download direction (fetch)" if markdown else \
        "gitnetdiag: download direction (fetch, read-only clones)"
    lines = [title, ""]
    urls = ", ".join(f"{run.protocol} {run.url}" for run in manifest.protocols)
    lines += [DIRECTION_LINE, f"status: {manifest.status}; remotes: {urls}",
              seed_line(manifest.seed), ""]
    if observations:
        lines += _table([fetch_row(obs) for obs in observations], markdown=markdown)
    else:
        lines.append("no clone was measured")
    lines.append("")
    if findings:
        lines.append("## Culprits" if markdown else "culprits (download direction):")
        for rank, finding in enumerate(findings, start=1):
            lines += _finding_lines(rank, finding, markdown=markdown)
    elif any(obs.measured for obs in observations):
        lines.append("no download culprit above the threshold")
    lines += [burst_line(burst) for burst in bursts]
    wires = [row for obs in observations if (row := wire_row(obs)) is not None]
    if wires:
        lines += ["", f"## {WIRE_TITLE}" if markdown else WIRE_TITLE,
                  *_table_of(WIRE_COLUMNS, wires, markdown=markdown)]
    senders = [row for obs in observations if (row := sender_row(obs)) is not None]
    if senders:
        lines += ["", f"## {SENDER_TITLE}" if markdown else SENDER_TITLE,
                  *_table_of(SENDER_COLUMNS, senders, markdown=markdown)]
    if pacing:
        lines += ["", f"## {LEDGER_TITLE}" if markdown else LEDGER_TITLE,
                  *_table_of(LEDGER_COLUMNS, [ledger_row(p) for p in pacing], markdown=markdown)]
    if verdict is not None:
        lines += ["", f"verdict: {verdict}", *([headline] if headline else [])]
        lines += [f"  {f.reference}: {f.message}"
                  + (f" (explained by {f.explained_by})" if f.explained_by else f"; {f.hint}")
                  for f in failures]
    if ssh_pacing:
        lines += ["", f"## {SSH_LEDGER_TITLE}" if markdown else SSH_LEDGER_TITLE,
                  *_table_of(SSH_LEDGER_COLUMNS, [ssh_ledger_row(p) for p in ssh_pacing],
                             markdown=markdown)]
    for error in manifest.errors:
        lines.append(f"error: {error.reference}: {error.message}")
    return "\n".join(lines).rstrip() + "\n"


def render_fetch_terminal(manifest: FetchManifest, observations: Sequence[FetchObservation],
                          findings: Sequence[Finding],
                          pacing: Sequence[DownloadPacing] = (),
                          ssh_pacing: Sequence[SshDownloadPacing] = (), *,
                          verdict: str | None = None,
                          failures: Sequence[MeasurementFailure] = (),
                          bursts: Sequence[BurstResult] = (), headline: str = "") -> str:
    """Plain text for the terminal."""
    return _render(manifest, observations, findings, markdown=False, pacing=pacing,
                   ssh_pacing=ssh_pacing, verdict=verdict, failures=failures, bursts=bursts,
                   headline=headline)


def render_fetch_markdown(manifest: FetchManifest, observations: Sequence[FetchObservation],
                          findings: Sequence[Finding],
                          pacing: Sequence[DownloadPacing] = (),
                          ssh_pacing: Sequence[SshDownloadPacing] = (), *,
                          verdict: str | None = None,
                          failures: Sequence[MeasurementFailure] = (),
                          bursts: Sequence[BurstResult] = (), headline: str = "") -> str:
    """Markdown for a ticket."""
    return _render(manifest, observations, findings, markdown=True, pacing=pacing,
                   ssh_pacing=ssh_pacing, verdict=verdict, failures=failures, bursts=bursts,
                   headline=headline)


def fetch_report_dict(manifest: FetchManifest, observations: Sequence[FetchObservation],
                      findings: Sequence[Finding],
                          pacing: Sequence[DownloadPacing] = (),
                          ssh_pacing: Sequence[SshDownloadPacing] = (), *,
                          verdict: str | None = None,
                          failures: Sequence[MeasurementFailure] = (),
                          bursts: Sequence[BurstResult] = (),
                          headline: str = "") -> dict[str, Any]:
    """The fetch report as plain JSON types (every string redacted, as the push's)."""
    manifest, observations, findings, pacing, ssh_pacing, failures, bursts, headline = \
        redact_diagnosis((manifest, tuple(observations), tuple(findings), tuple(pacing),
                          tuple(ssh_pacing), tuple(failures), tuple(bursts), headline))
    return {
        "schema": FETCH_REPORT_SCHEMA,
        "direction": "fetch",
        "generated_by": f"gitnetdiag {manifest.tool_version}",
        "status": manifest.status,
        "verdict": verdict,
        "headline": headline,
        "measurement_failures": to_jsonable(tuple(failures)),
        "culprits": [{"rank": rank, **to_jsonable(finding)}
                     for rank, finding in enumerate(findings, start=1)],
        "fetches": [{**to_jsonable(obs), "rtt_s": obs.rtt_s,
                     "server_pack_generation_s": obs.phases.server_pack_generation_s,
                     **_sender_shares(obs)}
                    for obs in observations],
        "errors": to_jsonable(manifest.errors),
        "client_tcp_rmem": to_jsonable(manifest.client_tcp_rmem),
        "seed": to_jsonable(manifest.seed),
        "h2_downloads": [{key: value for key, value in to_jsonable(p).items()
                          if key not in ("t_s", "cumulative_bytes")} for p in pacing],
        "ssh_downloads": to_jsonable(list(ssh_pacing)),
        "bursts": [_burst_json(burst) for burst in bursts],
    }


def _burst_json(burst: BurstResult) -> dict[str, Any]:
    """A burst; its handshake counts null when no capture was analysed (unknown, not 0)."""
    data: dict[str, Any] = to_jsonable(burst)
    if not burst.handshakes_counted:
        data.update(syn_retransmissions=None, synack_retransmissions=None, resets=None)
    return data


def _sender_shares(obs: FetchObservation) -> dict[str, float | None]:
    sender = obs.sender
    return {"server_sndbuf_limited_share": sender.sndbuf_limited_share if sender else None,
            "server_rwnd_limited_share": sender.rwnd_limited_share if sender else None}


def render_fetch_json(manifest: FetchManifest, observations: Sequence[FetchObservation],
                      findings: Sequence[Finding],
                      pacing: Sequence[DownloadPacing] = (),
                      ssh_pacing: Sequence[SshDownloadPacing] = (), *,
                      verdict: str | None = None,
                      failures: Sequence[MeasurementFailure] = (),
                      bursts: Sequence[BurstResult] = (), headline: str = "") -> str:
    """The fetch report as indented JSON text."""
    return json.dumps(fetch_report_dict(manifest, observations, findings, pacing, ssh_pacing,
                                        verdict=verdict, failures=failures, bursts=bursts,
                                        headline=headline),
                      indent=2) + "\n"
