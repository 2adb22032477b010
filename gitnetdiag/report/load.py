"""Renderers of a :class:`LoadReport`: terminal table, Markdown, HTML with the box plot, JSON.

Each takes the same report (redacted first) and computes nothing the others lack.
matplotlib is imported only inside :func:`render_html`.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from gitnetdiag.model.load.records import HOST_COUNTERS_SHOWN, ErrorGroup, LoadReport, StepResult
from gitnetdiag.report.console import console_output, text_console
from gitnetdiag.report.redact import redact_diagnosis

COLUMNS = ("step", "conc", "ops", "ok", "err", "ops/s", "ops/h", "p50 s", "p75 s", "p90 s",
           "p99 s", "max s", "MB", "errors", "host")


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _errors_text(errors: Sequence[ErrorGroup]) -> str:
    return ", ".join(f"{e.kind} {e.count}" for e in errors) or "-"


def _host_text(step: StepResult) -> str:
    shown = [f"{k} +{step.host_deltas[k]}" for k in HOST_COUNTERS_SHOWN if k in step.host_deltas]
    if step.listener is not None:
        shown.append(f"backlog {step.listener.backlog}, accept queue peak "
                     f"{step.listener.accept_queue_max}")
    shown += [f"client {k} +{v}" for k, v in sorted(step.client_deltas.items())]
    return ", ".join(shown) or "-"


def step_row(step: StepResult) -> tuple[str, ...]:
    """One table row (the same cells in the terminal and Markdown tables)."""
    lat = step.latency
    return (
        str(step.index + 1) + ("*" if step.interrupted else ""),
        str(step.concurrency), str(step.ops), str(step.ok), str(step.failed),
        f"{step.ops_per_s:.2f}", f"{step.ops_per_hour:,.0f}",
        *(_f(None if lat is None else v) for v in (
            (lat.p50_s, lat.p75_s, lat.p90_s, lat.p99_s, lat.max_s) if lat else (0.0,) * 5)),
        f"{step.bytes_moved / 1e6:.2f}", _errors_text(step.errors), _host_text(step),
    )


TARGET_COLUMNS = ("step", "conc", "remote", "ops", "ok", "err", "p50 s", "by operation", "errors")


def target_rows(report: LoadReport) -> list[tuple[str, ...]]:
    """The per-remote rows of every step (terminal, Markdown and HTML); none when the run had
    a single remote."""
    if len(report.remotes) < 2:
        return []
    return [(str(step.index + 1), str(step.concurrency), share.url, str(share.ops),
             str(share.ok), str(share.failed), _f(share.p50_s),
             ", ".join(f"{op} {n}" for op, n in sorted(share.ops_by_op.items())) or "-",
             _errors_text(share.errors))
            for step in report.steps for share in step.by_target]


def verdict_line(report: LoadReport) -> str:
    """One line: totals and pass/fail against the pass mark."""
    best = max(report.steps, key=lambda s: s.ops_per_hour, default=None)
    text = f"{report.total_ops} operations, {report.total_failed} failed"
    if best is not None:
        text += (f"; best step: {best.ops_per_hour:,.0f} ops/hour at concurrency "
                 f"{best.concurrency}")
    if report.passed is not None:
        mark = f"{report.min_ops_per_hour:,.0f} ops/hour"
        text += f"; PASS (>= {mark})" if report.passed else f"; FAIL (below {mark})"
    if report.interrupted:
        text += "; interrupted, partial results"
    return text


def _header(report: LoadReport) -> str:
    mix = ", ".join(f"{op} {w}" for op, w in zip(report.ops, report.mix, strict=True))
    remotes = report.remotes
    where = remotes[0] if len(remotes) == 1 else f"{len(remotes)} remotes: {', '.join(remotes)}"
    return (f"{report.protocol} {where} | mix {mix} | {report.step_duration_s:.3g} s per "
            f"step | timeout {report.timeout_s:g} s | {report.source} | {report.started}")


def render_terminal(report: LoadReport, *, width: int = 100, color: bool = False) -> str:
    """The step table, the verdict and the error messages."""
    report = redact_diagnosis(report)
    console = text_console(width=width, color=color)
    table = Table(title=f"gitnetdiag load: {_header(report)}",
                  caption="latency of successful operations; * = interrupted step")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("errors", "host") else "right")
    for step in report.steps:
        table.add_row(*step_row(step))
    console.print(table)
    rows = target_rows(report)
    if rows:
        per_remote = Table(title="per remote (operations spread round robin per operation type)")
        for column in TARGET_COLUMNS:
            per_remote.add_column(column, justify="right" if column in (
                "step", "conc", "ops", "ok", "err", "p50 s") else "left")
        for row in rows:
            per_remote.add_row(*row)
        console.print(per_remote)
    console.print(verdict_line(report))
    for step in report.steps:
        for group in step.errors:
            for message in group.messages:
                console.print(Text(f"  step {step.index + 1} {group.kind}: {message}"))
    if report.cleanup.get("leftover"):
        console.print(f"[red]{report.cleanup['leftover']} throwaway branch(es) could not be "
                      "deleted[/red]")
    return console_output(console)


def render_markdown(report: LoadReport) -> str:
    """Markdown: header, step table, per-operation latency, errors with git's messages."""
    report = redact_diagnosis(report)
    lines = ["# gitnetdiag load", "", _header(report), "", f"**{verdict_line(report)}**", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in step_row(s)) + " |"
              for s in report.steps]
    rows = target_rows(report)
    if rows:
        lines += ["", "## Per remote", "", "| " + " | ".join(TARGET_COLUMNS) + " |",
                  "|" + "---|" * len(TARGET_COLUMNS)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    lines += ["", "## Latency per operation (successful, seconds)", "",
              "| step | op | ops | p50 | p90 | p99 | max |", "|---|---|---|---|---|---|---|"]
    for step in report.steps:
        for op, lat in sorted(step.latency_by_op.items()):
            lines.append(f"| {step.index + 1} | {op} | {step.ops_by_op.get(op, 0)} | "
                         f"{lat.p50_s:.3f} | {lat.p90_s:.3f} | {lat.p99_s:.3f} | {lat.max_s:.3f} |")
    errors = [(s, g) for s in report.steps for g in s.errors]
    if errors:
        lines += ["", "## Errors", ""]
        for step, group in errors:
            lines.append(f"- step {step.index + 1} (concurrency {step.concurrency}): "
                         f"{group.kind} x{group.count}")
            lines += [f"  - `{m}`" for m in group.messages]
    host = [s for s in report.steps if s.host_deltas]
    if host:
        lines += ["", "## Server counter deltas per step", ""]
        for step in host:
            deltas = ", ".join(f"{k} +{v}" for k, v in sorted(step.host_deltas.items())
                               if "." not in k)
            lines.append(f"- step {step.index + 1} (concurrency {step.concurrency}): {deltas}")
    lines += ["", f"Throwaway branches: {json.dumps(report.cleanup, sort_keys=True)}", ""]
    return "\n".join(lines)


def render_json(report: LoadReport) -> str:
    """The report as JSON (the same record ``load.json`` holds)."""
    return json.dumps(redact_diagnosis(report).to_dict(), indent=2, sort_keys=True) + "\n"


def _box_plot_png(report: LoadReport) -> str | None:
    """Latency box per step, ops/s on a second axis, failed operations marked (base64 PNG)."""
    steps = [s for s in report.steps if s.latency is not None or s.failed]
    if not steps:
        return None
    from gitnetdiag.report.plots import png_bytes, pyplot

    fig, ax = pyplot().subplots(figsize=(8, 4.2))
    positions = list(range(1, len(steps) + 1))
    boxes = [
        {"label": str(s.concurrency), "med": s.latency.p50_s, "q1": s.latency.q1_s,
         "q3": s.latency.p75_s, "whislo": s.latency.whisker_low_s,
         "whishi": s.latency.whisker_high_s, "fliers": [s.latency.max_s]}
        for s in steps if s.latency is not None
    ]
    box_positions = [p for p, s in zip(positions, steps, strict=True) if s.latency is not None]
    if boxes:
        ax.bxp(boxes, positions=box_positions, showfliers=True)
    ax.set_xticks(positions, [str(s.concurrency) for s in steps])
    ax.set_xlabel("concurrency")
    ax.set_ylabel("latency (s)")
    rate = ax.twinx()
    rate.plot(positions, [s.ops_per_s for s in steps], "o-", color="tab:green", label="ops/s")
    rate.set_ylabel("successful ops/s", color="tab:green")
    rate.set_ylim(bottom=0)
    failed = [(p, s) for p, s in zip(positions, steps, strict=True) if s.failed]
    if failed:
        rate.scatter([p for p, _ in failed], [s.ops_per_s for _, s in failed], marker="x",
                     s=120, color="tab:red", zorder=5, label="errors")
        for p, s in failed:
            rate.annotate(f"{s.failed} err", (p, s.ops_per_s), textcoords="offset points",
                          xytext=(6, 6), color="tab:red")
    rate.legend(loc="upper left")
    ax.set_title("latency per concurrency step (box), throughput (line), errors (x)")
    return base64.b64encode(png_bytes(fig, bbox_inches="tight")).decode("ascii")


def render_html(report: LoadReport) -> str:
    """Self-contained HTML: the box plot, the step table, errors with git's messages."""
    report = redact_diagnosis(report)
    esc = html.escape
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>gitnetdiag load</title>",
             "<style>body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto}"
             "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.2rem .5rem}"
             "img{max-width:100%}</style></head><body>",
             "<h1>gitnetdiag load</h1>", f"<p>{esc(_header(report))}</p>",
             f"<p><b>{esc(verdict_line(report))}</b></p>"]
    png = _box_plot_png(report)
    if png:
        parts.append(f"<img alt='latency box plot per concurrency step' "
                     f"src='data:image/png;base64,{png}'>")
    parts.append("<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in COLUMNS) + "</tr>")
    for step in report.steps:
        parts.append("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in step_row(step)) + "</tr>")
    parts.append("</table>")
    rows = target_rows(report)
    if rows:
        parts.append("<h2>Per remote</h2><table><tr>"
                     + "".join(f"<th>{esc(c)}</th>" for c in TARGET_COLUMNS) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows]
        parts.append("</table>")
    errors = [(s, g) for s in report.steps for g in s.errors]
    if errors:
        parts.append("<h2>Errors</h2><ul>")
        for step, group in errors:
            messages = "".join(f"<li><code>{esc(m)}</code></li>" for m in group.messages)
            parts.append(f"<li>step {step.index + 1}: {esc(group.kind)} x{group.count}"
                         f"<ul>{messages}</ul></li>")
        parts.append("</ul>")
    parts.append(f"<p>Throwaway branches: {esc(json.dumps(report.cleanup, sort_keys=True))}</p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
