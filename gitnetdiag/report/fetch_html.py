"""The download direction's HTML report: the fetch report's table and culprits, and a plot.

The plot, one panel per clone, is the client's advertised receive window
(``rcv_ssthresh``) against the server's bytes in flight as the client counted
them (``rcv_space``, bytes delivered per RTT), over time, from the TCP_INFO
samples (:mod:`gitnetdiag.analysis.fetchwindow`). Where the two lines meet the
server sent all the client's window allowed: the client's receive window was
the limit. With the native HTTP/2 download ledgers, their table and a second
plot: the pack bytes received over time under each window, side by side.
matplotlib is imported on first use, as for the push plots.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from gitnetdiag.analysis.fetchwindow import DownloadPacing, DownloadWindowSeries
from gitnetdiag.analysis.sshdownload import SshDownloadPacing
from gitnetdiag.diagnosis.culprits.download import FetchObservation
from gitnetdiag.diagnosis.model import Finding, MeasurementFailure
from gitnetdiag.diagnosis.observations import BurstResult
from gitnetdiag.report.fetch import (
    COLUMNS,
    DIRECTION_LINE,
    LEDGER_COLUMNS,
    LEDGER_TITLE,
    SENDER_COLUMNS,
    SENDER_TITLE,
    SSH_LEDGER_COLUMNS,
    SSH_LEDGER_TITLE,
    WIRE_COLUMNS,
    WIRE_TITLE,
    burst_line,
    fetch_row,
    ledger_row,
    seed_line,
    sender_row,
    ssh_ledger_row,
    wire_row,
)
from gitnetdiag.report.html import STYLE, plots_section
from gitnetdiag.report.plots import FIG_WIDTH_IN, MARGINS, MB, Figure, kB, png_bytes, pyplot
from gitnetdiag.report.redact import redact_diagnosis
from gitnetdiag.report.units import fmt_evidence_threshold, fmt_evidence_value, fmt_quantity
from gitnetdiag.rundir.fetchrecords import FetchManifest

WINDOW_TITLE = ("Download per clone: the client's advertised window (rcv_ssthresh) against the "
                "server's bytes in flight as the client counted them (rcv_space, per RTT)")


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _values(series: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if value is None else value / kB for value in series], dtype=float)


def window_figure(observations: Sequence[FetchObservation],
                  windows: Sequence[DownloadWindowSeries | None]) -> Figure | None:
    """One panel per clone with TCP_INFO samples; None when no clone has any."""
    panels = [(obs, series) for obs, series in zip(observations, windows, strict=False)
              if series is not None and series.t_s]
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(FIG_WIDTH_IN, 0.6 + 2.0 * len(panels)),
                             sharex=True, squeeze=False)
    for ax, (obs, series) in zip(axes[:, 0], panels, strict=True):
        t = np.asarray(series.t_s)
        ax.step(t, _values(series.advertised_window_bytes), where="post", color="tab:orange",
                linestyle="--", label="client's advertised window")
        ax.step(t, _values(series.in_flight_bytes), where="post", color="tab:blue",
                label="server's bytes in flight (per RTT)")
        ax.set_ylim(bottom=0)
        ax.set_ylabel("kB")
        ax.set_title(f"{obs.protocol} #{obs.repeat} ({series.source})", loc="left",
                     fontsize="medium")
        ax.legend(loc="upper left", fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlabel("seconds since git clone started")
    fig.subplots_adjust(hspace=0.4, top=1 - 0.35 / fig.get_figheight(),
                        bottom=0.5 / fig.get_figheight(), **MARGINS)
    return Figure(title=WINDOW_TITLE, png=png_bytes(fig))


PACING_TITLE = ("Native HTTP/2 download: pack bytes received against time under each window "
                "the client advertised (the server sends a window, then waits for credit)")


def pacing_figure(pacing: Sequence[DownloadPacing]) -> Figure | None:
    """The cumulative bytes of each native download, one line per window; None without."""
    drawn = [p for p in pacing if p.t_s]
    if not drawn:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN, 3.2))
    for p in drawn:
        ax.step(np.asarray(p.t_s), np.asarray(p.cumulative_bytes) / MB, where="post",
                label=f"{p.label} window ({fmt_quantity(p.window_bytes, 'B')}): "
                f"{fmt_quantity(p.rate_bytes_per_s, 'B/s')}")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set_ylabel("MB")
    ax.set_xlabel("seconds since the fetch request")
    ax.legend(loc="upper left", fontsize="small")
    ax.grid(True, alpha=0.3)
    fig.subplots_adjust(top=0.95, bottom=0.16, **MARGINS)
    return Figure(title=PACING_TITLE, png=png_bytes(fig))


def _table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{_esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_esc(cell)}</td>" for cell in row) + "</tr>"
                   for row in rows)
    return f"<h2>{_esc(title)}</h2><table><tr>{head}</tr>{body}</table>"


def _finding(rank: int, finding: Finding) -> str:
    rows = "".join(
        f"<tr><td>{_esc(item.what)}</td><td>{_esc(fmt_evidence_value(item))}</td>"
        f"<td>{_esc(fmt_evidence_threshold(item))}</td><td>{_esc(item.source)}</td></tr>"
        for item in finding.evidence)
    return (f"<h3>{rank}. <code>{_esc(finding.id)}</code>: {_esc(finding.title)}</h3>"
            f"<p>costs ~{finding.cost_s:.1f} s, score {finding.score:.2f}. "
            f"{_esc(finding.summary)}</p>"
            "<table><tr><th>evidence</th><th>value</th><th>threshold</th><th>source</th></tr>"
            f"{rows}</table><p class=\"fix\">fix: {_esc(finding.fix)}</p>")


def render_fetch_html(manifest: FetchManifest, observations: Sequence[FetchObservation],
                      findings: Sequence[Finding],
                      windows: Sequence[DownloadWindowSeries | None] = (),
                      pacing: Sequence[DownloadPacing] = (),
                      ssh_pacing: Sequence[SshDownloadPacing] = (), *,
                      verdict: str | None = None,
                      failures: Sequence[MeasurementFailure] = (),
                      bursts: Sequence[BurstResult] = (), headline: str = "") -> str:
    """One self-contained HTML page (the plot inline, no external resources); every string
    redacted, as the push's."""
    manifest, observations, findings, pacing, ssh_pacing, failures, bursts, headline = \
        redact_diagnosis((manifest, tuple(observations), tuple(findings), tuple(pacing),
                          tuple(ssh_pacing), tuple(failures), tuple(bursts), headline))
    urls = ", ".join(f"{run.protocol} {run.url}" for run in manifest.protocols)
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>gitnetdiag report: fetch</title><style>{STYLE}</style></head><body>",
        "<h1>gitnetdiag report: download direction (fetch)</h1>",
        f"<p>{_esc(DIRECTION_LINE)}</p>",
        f"<p>status: {_esc(manifest.status)}; remotes: {_esc(urls)}</p>",
        f"<p>{_esc(seed_line(manifest.seed))}</p>",
    ]
    if verdict is not None:
        parts.append(f"<p>verdict: <strong>{_esc(verdict)}</strong></p>")
        if headline:
            parts.append(f"<p>{_esc(headline)}</p>")
        parts += [f"<p>{_esc(f.reference)}: {_esc(f.message)}"
                  + (f" (explained by {_esc(f.explained_by)})" if f.explained_by
                     else f"; {_esc(f.hint)}") + "</p>" for f in failures]
    parts.append("<h2>Clones</h2>")
    if observations:
        parts.append("<table><tr>" + "".join(f"<th>{_esc(c)}</th>" for c in COLUMNS) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{_esc(cell)}</td>" for cell in fetch_row(obs))
                  + "</tr>" for obs in observations]
        parts.append("</table>")
    else:
        parts.append("<p>no clone was measured</p>")
    if bursts:
        parts.append("<h2>Bursts</h2><ul>" + "".join(
            f"<li>{_esc(burst_line(burst))}</li>" for burst in bursts) + "</ul>")
    parts.append("<h2>Culprits (download direction)</h2>")
    if findings:
        parts += [_finding(rank, f) for rank, f in enumerate(findings, start=1)]
    elif any(obs.measured for obs in observations):
        parts.append("<p>no download culprit above the threshold</p>")
    if manifest.errors:
        parts.append("<h2>Errors</h2><ul>" + "".join(
            f"<li><code>{_esc(e.reference)}</code>: {_esc(e.message)}</li>"
            for e in manifest.errors) + "</ul>")
    parts.append(_table(WIRE_TITLE, WIRE_COLUMNS,
                        [row for obs in observations if (row := wire_row(obs)) is not None]))
    parts.append(_table(SENDER_TITLE, SENDER_COLUMNS,
                        [row for obs in observations if (row := sender_row(obs)) is not None]))
    parts.append(_table(LEDGER_TITLE, LEDGER_COLUMNS, [ledger_row(p) for p in pacing]))
    parts.append(_table(SSH_LEDGER_TITLE, SSH_LEDGER_COLUMNS,
                        [ssh_ledger_row(p) for p in ssh_pacing]))
    figures = [window_figure(observations, windows), pacing_figure(pacing)]
    parts.append(plots_section([figure for figure in figures if figure is not None]))
    parts.append("</body></html>\n")
    return "".join(parts)
