"""Renderers of a :class:`~gitnetdiag.diagnosis.comparison.Comparison` (``gitnetdiag compare``).

Terminal (rich), Markdown and JSON live here; HTML with the before/after plots
in :mod:`gitnetdiag.report.compare_html`; :data:`gitnetdiag.report.COMPARE_RENDERERS`
lists all four. All of them show the same tables,
built once as rows of text by the ``*_rows`` functions below.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from gitnetdiag.diagnosis.burstgain import BurstSide
from gitnetdiag.diagnosis.comparetext import same_time
from gitnetdiag.diagnosis.comparison import (
    Comparison,
    Difference,
    GainCheck,
    PairComparison,
    ProtocolComparison,
    TransferWords,
)
from gitnetdiag.diagnosis.likeforlike import MIN_REPEATS, ProtocolSample
from gitnetdiag.report.console import console_text
from gitnetdiag.report.transfers import table_text
from gitnetdiag.report.units import fmt_bytes, fmt_quantity, fmt_rate, fmt_s

SCHEMA = "gitnetdiag.compare/2"
"""Schema id of the JSON comparison; bump on any incompatible change."""

RUN_HEADER = ("run", "source", "started", "verdict", "RTT", "top culprit")


def too_few_note(words: TransferWords) -> str:
    """The footnote of a comparison whose noise test was not run."""
    return (f"noise: Welch's t-test on the {words.one} durations, run with at least "
            f"{MIN_REPEATS} completed {words.many} a side (gitnetdiag diagnose --repeat 3); "
            "with fewer the change is shown but not tested")


def culprit_header(pair: PairComparison) -> tuple[str, ...]:
    return ("culprit", "status", f"cost in {pair.before}", f"cost in {pair.after}")


def pair_intro(comparison: Comparison, pair: PairComparison) -> str:
    """A pair's own summary, when the headline does not already say it."""
    return pair.summary if len(comparison.pairs) > 1 else ""


def protocol_header(pair: PairComparison, words: TransferWords) -> tuple[str, ...]:
    a, b = pair.before, pair.after
    return ("protocol", f"{a} {words.one} (median, range)", f"{b} {words.one} (median, range)",
            f"{a} rate", f"{b} rate", "change", "noise")


def _duration(sample: ProtocolSample, times: tuple[float, ...], median_s: float | None,
              projected: bool) -> str:
    """Median (range, count) of a side's compared times: its durations, or (``projected``)
    its transfers projected to the pair's size, marked."""
    count = len(times)
    failed = f", {sample.failed} failed" if sample.failed else ""
    low, high = min(times), max(times)
    spread = "" if low == high else f"{fmt_s(low)} to {fmt_s(high)}, "
    mark = " projected" if projected else ""
    moved = ""
    if projected:
        moved = f"; moved {fmt_bytes(sample.bytes)}" + (", bounded" if sample.partial else "")
    return f"{fmt_s(median_s)}{mark} ({spread}n={count}{failed}{moved})"


def _noise(row: ProtocolComparison, words: TransferWords) -> str:
    if row.beyond_noise is None:
        return f"not tested (< {MIN_REPEATS} {words.many})"
    verdict = "beyond the noise" if row.beyond_noise else "within the noise"
    return f"{verdict} (p = {row.p_value:.2g})"


def _change(row: ProtocolComparison) -> str:
    if row.change_s is None or row.speedup is None:
        return "-"
    if same_time(row):
        return "none (the same as shown)"
    sign = "+" if row.change_s > 0 else "-"
    factor = (f"x{row.speedup:.2f} faster" if row.speedup >= 1
              else f"x{1 / row.speedup:.2f} slower")
    return f"{sign}{fmt_s(abs(row.change_s))} ({factor})"


def _projected(row: ProtocolComparison, side: str) -> bool:
    """A side's times are projected: the runs moved different amounts and this side's
    transfers were bounded or of another size than the one compared."""
    sample = row.before if side == "before" else row.after
    return row.projected and (bool(sample.partial) or sample.bytes != row.projected_bytes)


def protocol_rows(pair: PairComparison, words: TransferWords) -> list[tuple[str, ...]]:
    """One row per protocol measured in both runs."""
    return [(row.label,
             _duration(row.before, row.before_s, row.before_median_s, _projected(row, "before")),
             _duration(row.after, row.after_s, row.after_median_s, _projected(row, "after")),
             fmt_rate(row.before.rate_median_bytes_per_s),
             fmt_rate(row.after.rate_median_bytes_per_s),
             _change(row), _noise(row, words)) for row in pair.protocols]


def projection_lines(pair: PairComparison, words: TransferWords) -> list[str]:
    """What a projected row's times are, and the durations measured behind them."""
    return [f"{row.label}: the runs moved different amounts, so each {words.one} is shown "
            f"as a whole {words.one} of {fmt_bytes(row.projected_bytes)} at its own rate "
            + ("(the larger amount moved: neither run's were whole) "
               if row.projected_origin == "larger-moved" else "")
            + f"(projected); measured {pair.before} {fmt_s(row.before.duration_median_s)} "
            f"for {fmt_bytes(row.before.bytes)}, {pair.after} "
            f"{fmt_s(row.after.duration_median_s)} for {fmt_bytes(row.after.bytes)}"
            for row in pair.protocols if row.projected]


def burst_header(pair: PairComparison) -> tuple[str, ...]:
    a, b = pair.before, pair.after
    return ("burst", f"{a} failed", f"{b} failed", f"{a} SYN retransmitted",
            f"{b} SYN retransmitted", f"{a} connect p50 / p99", f"{b} connect p50 / p99",
            "lost per connection")


def _connect(side: BurstSide) -> str:
    return f"{fmt_s(side.connect_p50_s)} / {fmt_s(side.connect_p99_s)}"


def _count(value: int | None) -> str:
    return "not counted" if value is None else str(value)


def burst_rows(pair: PairComparison) -> list[tuple[str, ...]]:
    """One row per protocol whose connections were burst in both runs."""
    return [(f"{row.label} x{row.before.concurrency}"
             + ("" if row.after.concurrency == row.before.concurrency
                else f" / x{row.after.concurrency}"),
             f"{row.before.failed} of {row.before.concurrency}",
             f"{row.after.failed} of {row.after.concurrency}",
             _count(row.before.syn_retransmissions), _count(row.after.syn_retransmissions),
             _connect(row.before), _connect(row.after),
             f"{fmt_s(row.before.lost_s)} -> {fmt_s(row.after.lost_s)}")
            for row in pair.bursts]


def run_rows(comparison: Comparison) -> list[tuple[str, ...]]:
    """One row per run."""
    return [(run.label, run.source, run.started or "-", run.verdict, fmt_s(run.rtt_s),
             f"{run.top_culprit} ({fmt_s(run.top_cost_s)})" if run.top_culprit else "none")
            for run in comparison.runs]


def culprit_rows(pair: PairComparison) -> list[tuple[str, ...]]:
    """Gone, stayed and appeared culprits with their estimated costs."""
    status = {"gone": f"gone in {pair.after}", "stayed": "stayed",
              "appeared": f"appeared in {pair.after}"}
    return [(c.id, status[c.status], fmt_s(c.cost_before_s), fmt_s(c.cost_after_s))
            for c in pair.culprits]


def gain_lines(gain: GainCheck | None, pair: PairComparison,
               words: TransferWords) -> list[str]:
    """Predicted against measured gain of the baseline's top culprit, in words."""
    if gain is None:
        return [f"{pair.before} ranked no culprit: no predicted gain to check."]
    where = f" on {gain.protocol}" if gain.protocol else ""
    if gain.predicted_gain_s is None:
        cost = f"- (no estimated cost in {pair.before})"
    elif gain.basis == "projected":
        cost = (f"{fmt_s(gain.predicted_gain_s)} (its estimated cost in {pair.before}, "
                f"{fmt_s(gain.priced_cost_s)} on {fmt_bytes(gain.priced_bytes)}, for a whole "
                f"{words.one} of {fmt_bytes(gain.projected_bytes)})")
    else:
        cost = f"{fmt_s(gain.predicted_gain_s)} (its estimated cost in {pair.before})"
    lines = [f"{gain.culprit_id}{where}: predicted gain {cost}, measured gain "
             f"{fmt_s(gain.measured_gain_s) if gain.measured_gain_s is not None else '-'}"
             + (f", prediction off by {gain.error_share:+.0%}" if gain.error_share is not None
                else "")]
    lines.append(f"culprit {'gone' if gain.culprit_gone else 'still ranked'} in {pair.after}; "
                 + ("gain not tested against the noise" if gain.beyond_noise is None
                    else "gain beyond the noise" if gain.beyond_noise
                    else "gain within the noise"))
    if gain.note:
        lines.append(gain.note)
    return lines


def _value(d: Difference, value: float | str | None) -> str:
    if isinstance(value, (int, float)):
        return fmt_quantity(float(value), d.unit)
    return value or "-"


def difference_lines(pair: PairComparison) -> list[str]:
    """Conditions that differ between the two runs."""
    return [f"{d.what}: {_value(d, d.before)} in {pair.before}, {_value(d, d.after)} in "
            f"{pair.after}" for d in pair.differences]


def only_lines(pair: PairComparison) -> list[str]:
    """Protocols measured in one run only."""
    lines = []
    if pair.only_before:
        lines.append(f"measured only in {pair.before}: {', '.join(pair.only_before)}")
    if pair.only_after:
        lines.append(f"measured only in {pair.after}: {', '.join(pair.only_after)}")
    return lines


def too_few(comparison: Comparison) -> bool:
    """Some compared protocol had fewer pushes than the noise test needs."""
    return any(row.beyond_noise is None for pair in comparison.pairs for row in pair.protocols)


# --- terminal -------------------------------------------------------------------------


def _table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    table = Table(title=title, title_justify="left", show_lines=False)
    for name in header:
        table.add_column(name)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def render_compare_terminal(comparison: Comparison, *, width: int = 100,
                            color: bool = False) -> str:
    """Tables for a terminal."""
    items: list[object] = [Text(comparison.headline, style="bold"), ""]
    items.append(_table("Runs", RUN_HEADER, run_rows(comparison)))
    for pair in comparison.pairs:
        items.append(Text(f"\n{pair.before} -> {pair.after}", style="bold"))
        if pair_intro(comparison, pair):
            items.append(Text(pair_intro(comparison, pair)))
        if pair.protocols:
            items.append(_table(f"{comparison.words.many.capitalize()} per protocol",
                                protocol_header(pair, comparison.words),
                                protocol_rows(pair, comparison.words)))
        items += [Text(line) for line in projection_lines(pair, comparison.words)]
        items += [Text(line) for line in only_lines(pair)]
        if pair.bursts:
            items.append(_table("Connection bursts", burst_header(pair), burst_rows(pair)))
        if pair.culprits:
            items.append(_table("Culprits", culprit_header(pair), culprit_rows(pair)))
        items.append(Text(f"Predicted vs measured gain ({pair.before}'s top culprit)",
                          style="bold"))
        items += [Text("  " + line) for line in gain_lines(pair.gain, pair, comparison.words)]
        if pair.differences:
            items.append(Text("What differs", style="bold"))
            items += [Text("  " + line) for line in difference_lines(pair)]
    if too_few(comparison):
        items.append(Text("\n" + too_few_note(comparison.words), style="yellow"))
    return console_text(*items, width=width, color=color)


# --- Markdown -------------------------------------------------------------------------


def md_cell(text: str) -> str:
    """Text fit for a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def md_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    """A Markdown table, its cells escaped, and a blank line."""
    return [*table_text(header, [tuple(map(md_cell, row)) for row in rows], markdown=True), ""]


def render_compare_markdown(comparison: Comparison) -> str:
    """Markdown for a ticket."""
    lines = ["# gitnetdiag comparison", "", f"**{comparison.headline}**", "", "## Runs", ""]
    lines += md_table(RUN_HEADER, [(r[0], f"`{r[1]}`", *r[2:]) for r in run_rows(comparison)])
    for pair in comparison.pairs:
        lines += [f"## {pair.before} -> {pair.after}", ""]
        if pair_intro(comparison, pair):
            lines += [pair_intro(comparison, pair), ""]
        if pair.protocols:
            lines += md_table(protocol_header(pair, comparison.words),
                              protocol_rows(pair, comparison.words))
        if projection_lines(pair, comparison.words):
            lines += [f"- {line}" for line in projection_lines(pair, comparison.words)] + [""]
        lines += [f"- {line}" for line in only_lines(pair)]
        if pair.bursts:
            lines += ["### Connection bursts", "", *md_table(burst_header(pair), burst_rows(pair))]
        if pair.culprits:
            lines += ["### Culprits", "", *md_table(culprit_header(pair), culprit_rows(pair))]
        lines += [f"### Predicted vs measured gain ({pair.before}'s top culprit)", ""]
        lines += [f"- {line}" for line in gain_lines(pair.gain, pair, comparison.words)] + [""]
        if pair.differences:
            lines += ["### What differs", ""]
            lines += [f"- {line}" for line in difference_lines(pair)] + [""]
    if too_few(comparison):
        lines += [f"_{too_few_note(comparison.words)}_", ""]
    return "\n".join(lines)


# --- JSON -----------------------------------------------------------------------------


def render_compare_json(comparison: Comparison) -> str:
    """The comparison as JSON (docs/report-schema.md, "Comparison")."""
    from gitnetdiag import __version__

    data = {"schema": SCHEMA, "generated_by": f"gitnetdiag {__version__}",
            **comparison.to_dict()}
    return json.dumps(data, indent=2) + "\n"
