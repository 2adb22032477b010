"""The per-transfer sections of the one report, with the direction's words from data.

A fetch run's clones, each sampled as it ran (``fetch.json``: each clone's phases,
its TCP evidence, the server's socket, the native ledgers) is rendered by the same
renderers as any other (:data:`gitnetdiag.report.RENDERERS`); this module holds its
sections, each shown when its evidence is present: the transfers' table, git's own
HTTP/2 window, the server's socket, the native HTTP/2 and SSH ledgers, the bursts.
The words (``download``/``upload``, ``clone``/``push``) come from the direction
(:data:`WORDS`). The text layouts (terminal and Markdown) and the JSON are here; the
HTML is :mod:`gitnetdiag.report.html`'s. None computes anything the others lack.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitnetdiag.diagnosis.model import Diagnosis, FetchDetails, Finding
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, BurstResult
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.report.failures import SIGNATURE_HEADING, failure_line, failure_signature
from gitnetdiag.report.fixtext import fix_lines
from gitnetdiag.report.units import (
    evidence_rows,
    fmt_bytes,
    fmt_push_duration,
    fmt_quantity,
    fmt_rate,
    paths_line,
)
from gitnetdiag.rundir.records import RefCleanup, SeedBranch
from gitnetdiag.serial import to_jsonable

if TYPE_CHECKING:
    from gitnetdiag.analysis.nativeledger import H2Pacing, SshPacing
    from gitnetdiag.rundir.manifest import FetchManifest

TRANSFER_REPORT_SCHEMA = "gitnetdiag.fetch-report/3"
"""Schema id of the JSON of a fetch run (its clones) (docs/report-schema.md)."""


@dataclass(frozen=True)
class Words:
    """How a report names one direction."""

    way: str
    """``download`` or ``upload``."""
    transfer: str
    """``clone`` or ``push``."""
    transfers: str
    """``clones`` or ``pushes``."""
    who_sends: str
    """Which end sends and which receives."""
    moved: str
    """The table's bytes column: ``received`` or ``sent``."""


WORDS = {
    "fetch": Words(way="download", transfer="clone", transfers="clones", moved="received",
                   who_sends="the server sends, this client receives"),
    "push": Words(way="upload", transfer="push", transfers="pushes", moved="sent",
                  who_sends="this client sends, the server receives"),
}
"""A direction's words, by the diagnosis' ``direction``."""


PROTOCOL_COLUMNS = ("protocol", "ok", "failed", "bytes", "duration (median)", "rate median",
                    "rate min", "rate max")
"""The per-protocol table of a run of pushes (its summaries), in Markdown and HTML."""


def protocols_title(d: Diagnosis) -> str:
    """The per-protocol table's heading: ``Pushes per protocol``."""
    return f"{WORDS.get(d.direction, WORDS['push']).transfers.capitalize()} per protocol"


def protocol_rows(d: Diagnosis) -> list[tuple[str, ...]]:
    """One row per protocol summary, in :data:`PROTOCOL_COLUMNS` order."""
    return [(s.label, str(s.pushes_ok),
             f"{s.pushes_failed} ({', '.join(s.failure_kinds)})" if s.pushes_failed else "0",
             fmt_bytes(s.bytes),
             fmt_push_duration(s.duration_s, projected=s.projected_pushes > 0),
             fmt_rate(s.rate_bytes_per_s), fmt_rate(s.rate_min_bytes_per_s),
             fmt_rate(s.rate_max_bytes_per_s)) for s in d.protocols]


def evidence(d: Diagnosis) -> FetchDetails:
    """The per-transfer evidence of a fetch run's diagnosis (its clones)."""
    assert d.fetch_details is not None, "not a fetch run's diagnosis (its clones)"
    return d.fetch_details


def record(d: Diagnosis) -> FetchManifest:
    """The run's record (``fetch.json``) of a fetch run's diagnosis (its clones)."""
    manifest: FetchManifest = evidence(d).record
    return manifest


def direction_line(direction: str) -> str:
    """How a report names its direction: ``direction: fetch (download: ...)``."""
    words = WORDS[direction]
    return f"direction: {direction} ({words.way}: {words.who_sends})"


def columns(direction: str) -> tuple[str, ...]:
    """The transfers' table columns, the same in every format."""
    return ("protocol", "outcome", WORDS[direction].moved, "rate", "refs", "ref adv.",
            "1st pack byte", "server wait", "index-pack", "checkout", "adv. window", "rtt")


def transfer_row(obs: TransferObservation) -> tuple[str, ...]:
    """One transfer's cells, in :func:`columns` order."""
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


def burst_json(burst: dict[str, Any]) -> dict[str, Any]:
    """A burst as the JSON reports write it: its handshake counts null when no capture was
    analysed (null = not counted, 0 = counted none; docs/report-schema.md)."""
    if burst.get("handshakes_counted") is False:
        return {**burst, "syn_retransmissions": None, "synack_retransmissions": None,
                "resets": None}
    return burst


def seed_line(seed: SeedBranch | None) -> str:
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


def ledger_row(pacing: H2Pacing) -> tuple[str, ...]:
    """One window's cells, in :data:`LEDGER_COLUMNS` order."""
    window = f"{pacing.label} ({fmt_quantity(pacing.window_bytes, 'B')})"
    if pacing.error:
        return (window, "failed", pacing.error, "", "", "", "")
    return (window, pacing.outcome,
            fmt_quantity(pacing.received_bytes, "B"), fmt_quantity(pacing.rate_bytes_per_s, "B/s"),
            fmt_quantity(pacing.frames, "count"), fmt_quantity(pacing.median_burst_bytes, "B"),
            fmt_quantity(pacing.longest_gap_s, "s"))


SSH_LEDGER_COLUMNS = ("window granted", "max packet", "outcome", "received", "rate", "reads",
                      "median burst", "longest pause", "adjusts sent", "median adjust",
                      "least credit left")
"""The native SSH download ledger's table."""
SSH_LEDGER_TITLE = ("SSH download ledger (native upload-pack fetch): the server's pacing under "
                    "the channel window this client granted")


def ssh_ledger_row(pacing: SshPacing) -> tuple[str, ...]:
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


def wire_row(obs: TransferObservation) -> tuple[str, ...] | None:
    """One HTTP/2 transfer's window cells, in :data:`WIRE_COLUMNS` order; None without
    frames."""
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
"""The server's sockets' table (a local server only), one row per transfer."""
SENDER_TITLE = "The server's socket (its TCP_INFO where it runs): what held its bytes in flight"


def sender_row(obs: TransferObservation) -> tuple[str, ...] | None:
    """One transfer's server-side cells, in :data:`SENDER_COLUMNS` order; None unsampled."""
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


def sections(d: Diagnosis) -> list[tuple[str, Sequence[str], list[tuple[str, ...]]]]:
    """The evidence tables after the culprits, each (title, columns, rows) with rows only:
    git's HTTP/2 window, the server's socket, the native HTTP/2 ledger."""
    done = d.observations.transfers
    pacing = evidence(d).h2_pacing
    found = [(WIRE_TITLE, WIRE_COLUMNS, [r for o in done if (r := wire_row(o))]),
             (SENDER_TITLE, SENDER_COLUMNS, [r for o in done if (r := sender_row(o))]),
             (LEDGER_TITLE, LEDGER_COLUMNS, [ledger_row(p) for p in pacing])]
    return [(title, cols, rows) for title, cols, rows in found if rows]


def table_text(cols: Sequence[str], rows: Sequence[tuple[str, ...]], *,
               markdown: bool) -> list[str]:
    """A table as Markdown or as aligned plain-text columns."""
    if markdown:
        return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols),
                *("| " + " | ".join(row) + " |" for row in rows)]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*cols), *(fmt.format(*row).rstrip() for row in rows)]


def _finding_lines(rank: int, finding: Finding, *, markdown: bool) -> list[str]:
    name = f"**{finding.id}**" if markdown else finding.id
    lines = [f"{rank}. {name} ({finding.title}): costs ~{finding.cost_s:.1f} s, "
             f"score {finding.score:.2f}", f"   {finding.summary}"]
    lines += [f"   - {what}: {value}" + (f" ({threshold})" if threshold else "")
              + (f" [{source}]" if source else "")
              for what, value, threshold, source in evidence_rows(finding)]
    lead, *rest = fix_lines(finding.fix, first="fix: ")
    lines += [f"   {lead}", *(f"     {line}" for line in rest)]
    return lines


def header(d: Diagnosis) -> tuple[str, str]:
    """The run's status and remotes line, and what the transfers fetched."""
    run = record(d)
    urls = ", ".join(f"{p.protocol} {p.url}" for p in run.protocols)
    env = d.environment
    remote = (f" (remote {env.remote_name or 'URL'}: {'; '.join(env.remote_notes)})"
              if env.remote_notes else "")
    path = paths_line(env.paths)
    path = f"; path: {path}" if path else ""
    return f"status: {run.status}; remotes: {urls}{remote}{path}", seed_line(run.seed)


def render_text(d: Diagnosis, *, markdown: bool) -> str:
    """The terminal text or the Markdown of a redacted diagnosis of a fetch run's clones."""
    words, done, bursts = WORDS[d.direction], d.observations.transfers, d.observations.bursts
    title = (f"# gitnetdiag: {words.way} direction ({d.direction})" if markdown else
             f"gitnetdiag: {words.way} direction ({d.direction}, read-only {words.transfers})")
    lines = [title, "", direction_line(d.direction), *header(d), ""]
    if done:
        lines += table_text(columns(d.direction), [transfer_row(o) for o in done],
                            markdown=markdown)
    else:
        lines.append(f"no {words.transfer} was measured")
    lines.append("")
    if d.findings:
        lines.append("## Culprits" if markdown else f"culprits ({words.way} direction):")
        for rank, finding in enumerate(d.findings, start=1):
            lines += _finding_lines(rank, finding, markdown=markdown)
    elif any(obs.measured for obs in done):
        lines.append(f"no {words.way} culprit above the threshold")
    lines += [burst_line(burst) for burst in bursts]
    for title, cols, rows in sections(d):
        lines += ["", f"## {title}" if markdown else title,
                  *table_text(cols, rows, markdown=markdown)]
    lines += ["", f"verdict: {d.verdict}", *([d.headline] if d.headline else [])]
    for failure in d.measurement_failures:
        signature = failure_signature(failure)
        lines += [f"  {failure_line(failure)}",
                  *([f"    {SIGNATURE_HEADING}: {signature}"] if signature else [])]
    ssh = evidence(d).ssh_pacing
    if ssh:
        lines += ["", f"## {SSH_LEDGER_TITLE}" if markdown else SSH_LEDGER_TITLE,
                  *table_text(SSH_LEDGER_COLUMNS, [ssh_ledger_row(p) for p in ssh],
                              markdown=markdown)]
    lines += [f"error: {error.reference}: {error.message}" for error in record(d).errors]
    return "\n".join(lines).rstrip() + "\n"


def _culprit_json(finding: Finding) -> dict[str, Any]:
    """A culprit as this report writes it: a direction only when one was tagged (the
    report is one direction's; a ``both`` report's ranking tags its culprits)."""
    item: dict[str, Any] = to_jsonable(finding)
    if item.get("direction") is None:
        del item["direction"]
    return item


def report_dict(d: Diagnosis) -> dict[str, Any]:
    """The JSON report of a redacted diagnosis of a fetch run's clones."""
    manifest, details = record(d), evidence(d)
    return {
        "schema": TRANSFER_REPORT_SCHEMA,
        "direction": d.direction,
        "generated_by": f"gitnetdiag {manifest.tool_version}",
        "status": manifest.status,
        "verdict": d.verdict,
        "headline": d.headline,
        "measurement_failures": to_jsonable(d.measurement_failures),
        "culprits": [{"rank": rank, **_culprit_json(finding)}
                     for rank, finding in enumerate(d.findings, start=1)],
        "fetches": [{**to_jsonable(obs), "rtt_s": obs.rtt_s,
                     "server_pack_generation_s": obs.phases.server_pack_generation_s,
                     "server_sndbuf_limited_share": obs.sender.sndbuf_limited_share
                     if obs.sender else None,
                     "server_rwnd_limited_share": obs.sender.rwnd_limited_share
                     if obs.sender else None}
                    for obs in d.observations.transfers],
        "errors": to_jsonable(manifest.errors),
        "client_tcp_rmem": to_jsonable(manifest.client_tcp_rmem),
        "seed": to_jsonable(manifest.seed),
        "h2_downloads": [{key: value for key, value in to_jsonable(p).items()
                          if key not in ("t_s", "cumulative_bytes")}
                         for p in details.h2_pacing],
        "ssh_downloads": to_jsonable(list(details.ssh_pacing)),
        "bursts": [burst_json(to_jsonable(burst)) for burst in d.observations.bursts],
        "remote": {"name": d.environment.remote_name,
                   "notes": list(d.environment.remote_notes)},
        "paths": to_jsonable(list(d.environment.paths)),
    }
