"""Self-contained HTML report with plots embedded as base64 PNG.

matplotlib is imported lazily here only (Agg backend), so the other renderers
and the CLI start fast.
"""

from __future__ import annotations

import base64
import html
import io
from typing import Any

from gitnetdiag.diagnosis.model import Diagnosis, Finding
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, PROTOCOL_ORDER
from gitnetdiag.report.failures import INTRO, SECTION_TITLE, failure_note, failure_where
from gitnetdiag.report.redact import redact_diagnosis
from gitnetdiag.report.units import (
    fmt_bps,
    fmt_bytes,
    fmt_evidence_threshold,
    fmt_evidence_value,
    fmt_s,
)

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; color: #222; }
.verdict { font-size: 1.4rem; font-weight: bold; }
.degraded, .failed { color: #b00020; } .healthy { color: #1b7f3b; }
.inconclusive { color: #a05a00; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
code { background: #f3f3f3; padding: 0 0.2rem; }
.fix { background: #eef7ee; padding: 0.5rem; border-left: 4px solid #1b7f3b; }
img { max-width: 100%; }
"""


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _plots(d: Diagnosis) -> list[tuple[str, str]]:
    """(caption, base64 PNG) for every plot the data allows."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    plots: list[tuple[str, str]] = []
    obs = d.observations
    flights = [
        (name, obs.protocols[name].flight)
        for name in PROTOCOL_ORDER
        if name in obs.protocols and obs.protocols[name].flight is not None
    ]
    if flights:
        fig, axes = plt.subplots(len(flights), 1, figsize=(8, 2.6 * len(flights)), squeeze=False)
        for ax, (name, flight) in zip(axes[:, 0], flights, strict=True):
            assert flight is not None
            ax.plot(flight.t_s, [v / 1e3 for v in flight.bytes_in_flight], label="bytes in flight")
            ax.plot(
                flight.t_s,
                [v / 1e3 for v in flight.advertised_window],
                label="advertised window",
                linestyle="--",
            )
            ax.set_title(PROTOCOL_LABELS.get(name, name))
            ax.set_ylabel("kB")
            ax.set_yscale("log")
            ax.legend(loc="best")
        axes[-1, 0].set_xlabel("seconds since push start")
        fig.tight_layout()
        plots.append(("Bytes in flight vs the receiver's advertised window", _png(fig)))
        plt.close(fig)
    h2 = obs.protocols.get("h2")
    if h2 is not None and h2.h2_ledger is not None and h2.h2_ledger.credit is not None:
        credit = h2.h2_ledger.credit
        fig, ax = plt.subplots(figsize=(8, 2.6))
        ax.step(credit.t_s, [v / 1e3 for v in credit.values], where="post")
        ax.set_xlabel("seconds since push start")
        ax.set_ylabel("send credit, kB")
        ax.set_title("HTTP/2 stream send credit")
        fig.tight_layout()
        plots.append(("HTTP/2 flow-control credit over time", _png(fig)))
        plt.close(fig)
    rated = [s for s in d.protocols if s.rate_bps is not None]
    if rated:
        fig, ax = plt.subplots(figsize=(6, 3))
        medians = [(s.rate_bps or 0.0) / 1e6 for s in rated]
        low = [m - (s.rate_min_bps or 0.0) / 1e6 for m, s in zip(medians, rated, strict=True)]
        high = [(s.rate_max_bps or 0.0) / 1e6 - m for m, s in zip(medians, rated, strict=True)]
        ax.bar([s.label for s in rated], medians, yerr=[low, high], capsize=6, color="#4a78b5")
        ax.set_ylabel("Mbit/s (median, min-max)")
        ax.set_title("Push rate per protocol")
        fig.tight_layout()
        plots.append(("Push rate per protocol", _png(fig)))
        plt.close(fig)
    return plots


def _finding(rank: int, f: Finding) -> str:
    rows = "".join(
        f"<tr><td>{_esc(e.what)}</td><td>{_esc(fmt_evidence_value(e))}</td>"
        f"<td>{_esc(fmt_evidence_threshold(e))}</td>"
        f"<td>{_esc(e.source)}</td></tr>"
        for e in f.evidence
    )
    return (
        f'<section class="culprit" id="{_esc(f.id)}"><h3>{rank}. <code>{_esc(f.id)}</code>: '
        f"{_esc(f.title)}</h3>"
        f"<p><b>Cost</b> ~{_esc(fmt_s(f.cost_s))} · <b>confidence</b> {f.score:.2f}</p>"
        f"<p>{_esc(f.summary)}</p>"
        "<table><tr><th>evidence</th><th>measured</th><th>threshold</th><th>source</th></tr>"
        f"{rows}</table>"
        f'<p class="fix"><b>Fix:</b> {_esc(f.fix)}</p></section>'
    )


def render_html(diagnosis: Diagnosis) -> str:
    """One self-contained HTML page (plots inline, no external resources)."""
    d = redact_diagnosis(diagnosis)
    env = d.environment
    parts = [
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
        f"<title>gitnetdiag report: {_esc(d.verdict)}</title><style>{_STYLE}</style></head><body>",
        "<h1>gitnetdiag report</h1>",
        f'<p class="verdict {_esc(d.verdict)}">Verdict: {_esc(d.verdict)}</p>',
        f"<p>{_esc(d.headline)}</p>",
    ]
    if d.measurement_failures:
        parts.append(
            f'<h2 id="measurement-failures">{_esc(SECTION_TITLE)}</h2><p>{_esc(INTRO)}</p>'
            "<table><tr><th>measurement</th><th>reference</th><th>what happened</th>"
            "<th>hint</th><th>note</th></tr>"
        )
        parts += [
            f"<tr><td>{_esc(failure_where(f))}</td><td><code>{_esc(f.reference)}</code></td>"
            f"<td>{_esc(f.message)}</td><td>{_esc(f.hint)}</td>"
            f"<td>{_esc(failure_note(f))}</td></tr>"
            for f in d.measurement_failures
        ]
        parts.append("</table>")
    if d.protocols:
        parts.append(
            "<h2>Pushes per protocol</h2><table><tr><th>protocol</th><th>ok</th><th>failed</th>"
            "<th>bytes</th><th>duration (median)</th><th>rate median</th><th>rate min</th>"
            "<th>rate max</th></tr>"
        )
        for s in d.protocols:
            failed = f"{s.pushes_failed} ({', '.join(s.failure_kinds)})" if s.pushes_failed else "0"
            parts.append(
                f"<tr><td>{_esc(s.label)}</td><td>{s.pushes_ok}</td><td>{_esc(failed)}</td>"
                f"<td>{_esc(fmt_bytes(s.bytes))}</td><td>{_esc(fmt_s(s.duration_s))}</td>"
                f"<td>{_esc(fmt_bps(s.rate_bps))}</td>"
                f"<td>{_esc(fmt_bps(s.rate_min_bps))}</td>"
                f"<td>{_esc(fmt_bps(s.rate_max_bps))}</td></tr>"
            )
        parts.append("</table>")
    parts.append("<h2>Culprits</h2>")
    if d.findings:
        parts += [_finding(i, f) for i, f in enumerate(d.findings, start=1)]
    else:
        parts.append("<p>No culprit passed the threshold.</p>")
    plots = _plots(d)
    if plots:
        parts.append("<h2>Plots</h2>")
        for caption, data in plots:
            parts.append(
                f'<figure><img alt="{_esc(caption)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{_esc(caption)}</figcaption></figure>"
            )
    versions = ", ".join(f"{k} {v}" for k, v in env.versions.items()) or "-"
    parts.append(
        "<h2>Environment</h2><ul>"
        f"<li>target: <code>{_esc(env.target_url or '-')}</code></li>"
        f"<li>started: {_esc(env.started or '-')}</li>"
        f"<li>RTT: {_esc(fmt_s(env.rtt_s))}</li>"
        f"<li>path rate: {_esc(fmt_bps(env.path_rate_bps))}</li>"
        f"<li>client versions: {_esc(versions)}</li>"
        f"<li>protocols measured: {_esc(', '.join(d.measured_protocols) or '-')} "
        f"(requested: {_esc(', '.join(d.requested_protocols) or '-')})</li>"
        f"<li>measured by: {_esc(env.measured_by or 'not recorded')}</li>"
        f"<li>gitnetdiag {_esc(env.gitnetdiag_version)}; threshold: impact &gt;= "
        f"{env.min_impact_s:g} s and confidence &gt;= {env.min_score:g}</li></ul>"
    )
    parts.append("</body></html>\n")
    return "".join(parts)
