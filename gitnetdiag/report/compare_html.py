"""``gitnetdiag compare`` as one self-contained HTML page with before/after plots.

Figures (PNG, matplotlib imported on first use, the conventions of
:mod:`gitnetdiag.report.plots`):

- **bytes sent over time**, one panel per protocol captured in more than one
  run, one line per run, every panel on the same time axis: the run that
  reaches the top first pushed faster, and a flat stretch is a stall;
- **push durations**, one column of points per run within each protocol
  (every repeat, the median as a bar): the spread the noise test weighs; for runs
  that moved different amounts, the projected times the test weighs.
"""

from __future__ import annotations

import numpy as np

from gitnetdiag.diagnosis.comparison import Comparison
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, PROTOCOL_ORDER
from gitnetdiag.report.compare import (
    RUN_HEADER,
    burst_header,
    burst_rows,
    culprit_header,
    culprit_rows,
    difference_lines,
    gain_lines,
    only_lines,
    pair_intro,
    projection_lines,
    protocol_header,
    protocol_rows,
    run_rows,
    too_few,
    too_few_note,
)
from gitnetdiag.report.html import esc, html_list, html_table, page, plots_section
from gitnetdiag.report.plots import FIG_WIDTH_IN, MARGINS, MB, Figure, png_bytes, pyplot

RUN_COLORS = ("tab:red", "tab:blue", "tab:green", "tab:purple", "tab:orange", "tab:brown")
_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 64rem; margin: 2rem auto; color: #222; }
.headline { font-size: 1.2rem; font-weight: bold; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
img { max-width: 100%; }
"""


def _color(index: int) -> str:
    return RUN_COLORS[index % len(RUN_COLORS)]


def sent_over_time_figure(comparison: Comparison) -> Figure | None:
    """Bytes sent against time per protocol, a line per run, one shared time axis."""
    panels = []
    for name in PROTOCOL_ORDER:
        lines = []
        for index, d in enumerate(comparison.diagnoses):
            observed = d.observations.protocols.get(name)
            flight = observed.flight if observed is not None else None
            if flight is not None and flight.t_s and flight.bytes_sent:
                lines.append((index, flight.t_s, flight.bytes_sent))
        if len(lines) >= 2:
            panels.append((name, lines))
    if not panels:
        return None
    span = max(t[-1] for _, lines in panels for _, t, _ in lines) or 1.0
    plt = pyplot()
    fig, axes = plt.subplots(len(panels), 1, figsize=(FIG_WIDTH_IN, 0.8 + 2.2 * len(panels)),
                             sharex=True, squeeze=False)
    for ax, (name, lines) in zip(axes[:, 0], panels, strict=True):
        for index, t, sent in lines:
            run = comparison.runs[index]
            ax.step(np.asarray(t), np.asarray(sent) / MB, where="post", color=_color(index),
                    label=f"{run.label} ({run.verdict})")
        ax.set_title(PROTOCOL_LABELS.get(name, name), loc="left", fontsize="medium")
        ax.set_ylabel("MB sent")
        ax.legend(loc="lower right", fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xlim(0, span)
    axes[-1, 0].set_xlabel("seconds since the connection opened (captured push)")
    fig.subplots_adjust(hspace=0.35, top=1 - 0.35 / fig.get_figheight(),
                        bottom=0.55 / fig.get_figheight(), **MARGINS)
    return Figure(title="Bytes sent over time per protocol, each run on the same time axis",
                  png=png_bytes(fig))


def durations_figure(comparison: Comparison) -> Figure | None:
    """Every completed push's (clone's) duration per protocol and run, the median as a bar."""
    one, many = comparison.words.one, comparison.words.many
    pair_rows = [(pair, row) for pair in comparison.pairs for row in pair.protocols]
    if not pair_rows:
        return None
    labels = {run.label: index for index, run in enumerate(comparison.runs)}
    columns: dict[tuple[str, str], tuple[float, ...]] = {}
    for pair, row in pair_rows:
        columns[(row.protocol, pair.before)] = row.before_s or row.before.durations_s
        columns[(row.protocol, pair.after)] = row.after_s or row.after.durations_s
    projected = any(row.projected for _, row in pair_rows)
    rank: dict[str, int] = {name: index for index, name in enumerate(PROTOCOL_ORDER)}
    order = sorted(columns, key=lambda key: (rank.get(key[0], len(rank)), labels[key[1]]))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(FIG_WIDTH_IN, 3.4))
    for x, key in enumerate(order):
        values = np.asarray(columns[key])
        ax.plot(np.full(values.size, x), values, "o", color=_color(labels[key[1]]), alpha=0.7)
        ax.hlines(float(np.median(values)), x - 0.3, x + 0.3, color=_color(labels[key[1]]),
                  linewidth=2)
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels([f"{PROTOCOL_LABELS.get(p, p)}\n{label}" for p, label in order])
    ax.set_ylabel(f"{one} duration, s")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(f"{one.capitalize()} durations per protocol and run (points: {many}, "
                 "bar: median" + ("; runs of different amounts: projected to one size"
                                  if projected else "") + ")", loc="left", fontsize="medium")
    fig.subplots_adjust(top=0.88, bottom=0.2, **MARGINS)
    return Figure(title=f"{one.capitalize()} durations per protocol and run",
                  png=png_bytes(fig))


def render_compare_html(comparison: Comparison) -> str:
    """One self-contained page (plots inline, no external resources)."""
    parts = [
        "<h1>gitnetdiag comparison</h1>",
        f'<p class="headline">{esc(comparison.headline)}</p>',
        "<h2>Runs</h2>", html_table(RUN_HEADER, run_rows(comparison)),
    ]
    for pair in comparison.pairs:
        parts.append(f"<h2>{esc(pair.before)} &rarr; {esc(pair.after)}</h2>")
        if pair_intro(comparison, pair):
            parts.append(f"<p>{esc(pair_intro(comparison, pair))}</p>")
        if pair.protocols:
            parts.append(html_table(protocol_header(pair, comparison.words),
                                protocol_rows(pair, comparison.words)))
        if projection_lines(pair, comparison.words):
            parts.append(html_list(projection_lines(pair, comparison.words)))
        if only_lines(pair):
            parts.append(html_list(only_lines(pair)))
        if pair.culprits:
            parts += ["<h3>Culprits</h3>", html_table(culprit_header(pair), culprit_rows(pair))]
        if pair.bursts:
            parts += ["<h3>Connection bursts</h3>",
                      html_table(burst_header(pair), burst_rows(pair))]
        parts += [f"<h3>Predicted vs measured gain ({esc(pair.before)}'s top culprit)</h3>",
                  html_list(gain_lines(pair.gain, pair, comparison.words))]
        if pair.differences:
            parts += ["<h3>What differs</h3>", html_list(difference_lines(pair))]
    if too_few(comparison):
        parts.append(f"<p><em>{esc(too_few_note(comparison.words))}</em></p>")
    figures = [f for f in (sent_over_time_figure(comparison), durations_figure(comparison))
               if f is not None]
    parts.append(plots_section(figures))
    return page("gitnetdiag comparison", parts, style=_STYLE)
