"""The one unit convention of every report: numbers in, text out.

Sizes and rates are decimal and in bytes, the way git and storage tools count
what a push moves: ``65535 B`` (exact below 100 kB), ``1.6 MB``; ``1.31 MB/s``,
``614.4 kB/s``. Durations are ``50 ms`` below a second, ``3.4 s`` above;
shares are percentages (``83%``, two decimals below 10%: ``0.50%``).
docs/report-schema.md documents the same convention for readers of the JSON,
which carries the raw numbers with their :data:`~gitnetdiag.diagnosis.model.Unit`.

The scalar formatters live in :mod:`gitnetdiag.diagnosis.units` because the
diagnosis writes its one-sentence summaries with them and may not import
renderers; every renderer imports them from here.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitnetdiag.diagnosis.model import Diagnosis, Environment, Evidence, Finding, Unit
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS
from gitnetdiag.diagnosis.proxies import path_text
from gitnetdiag.diagnosis.servers import ServerIdentity
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s, fmt_share
from gitnetdiag.hops import PathHop

__all__ = [
    "answered_by",
    "environment_items",
    "evidence_rows",
    "fmt_bytes",
    "fmt_evidence_threshold",
    "fmt_evidence_value",
    "fmt_quantity",
    "fmt_rate",
    "fmt_s",
    "fmt_share",
]


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:g}"


def fmt_quantity(value: float | None, unit: Unit | None) -> str:
    """A number in its unit, by the report convention; ``-`` when unknown."""
    if value is None:
        return "-"
    if unit == "B":
        return fmt_bytes(value)
    if unit == "B/s":
        return fmt_rate(value)
    if unit == "s":
        return fmt_s(value)
    if unit == "ratio":
        return fmt_share(value)
    if unit == "IOPS":
        return f"{value:.0f} IOPS"
    return _count(value)


def fmt_evidence_value(e: Evidence) -> str:
    """What was measured: ``1.30 MB/s``, ``1 of 3``, ``5``, or the text of a non-number."""
    if e.value is None:
        return e.text or "-"
    text = fmt_quantity(e.value, e.unit)
    if e.of is not None:
        text += f" of {fmt_quantity(e.of, e.unit)}"
    if e.text:
        text += f" ({e.text})"
    return text


PROJECTED_NOTE = ("~ projected: a bounded push stops mid-pack; its duration is the whole pack "
                  "at the rate of the bytes it moved")
"""The footnote of a protocol table that has a projected duration."""


def fmt_push_duration(duration_s: float | None, *, projected: bool) -> str:
    """A protocol's median push duration, ``~``-marked when projected from bounded pushes."""
    text = fmt_s(duration_s)
    return f"~{text}" if projected and duration_s is not None else text


def fmt_evidence_threshold(e: Evidence) -> str:
    """What it was compared with: ``< BDP (SSH push x RTT) = 1.6 MB``, ``> 0``, or empty."""
    basis = (e.basis.format(*(fmt_quantity(q.value, q.unit) for q in e.basis_terms))
             if e.basis_terms else e.basis)
    parts: list[str] = [e.comparison or ""]
    if e.threshold is None:
        parts.append(basis)
    else:
        if basis:
            parts.append(f"{basis} =")
        parts.append(fmt_quantity(e.threshold, e.unit))
    return " ".join(part for part in parts if part)


def evidence_rows(finding: Finding) -> list[tuple[str, str, str, str]]:
    """A culprit's evidence, one row per item: what, measured, threshold, source."""
    return [(e.what, fmt_evidence_value(e), fmt_evidence_threshold(e), e.source)
            for e in finding.evidence]


def answered_by(identity: ServerIdentity | None) -> tuple[str, str]:
    """The environment's two server lines: the HTTPS server (with what showed it) and the
    SSH banner; ``-`` where nothing was seen."""
    if identity is None:
        return "-", "-"
    https = "-"
    if identity.server is not None or identity.unrecognised:
        https = identity.product or identity.server or "-"
        if identity.basis:
            https += " (from " + "; ".join(identity.basis) + ")"
    return https, identity.ssh_banner or "-"


def paths_line(paths: Sequence[PathHop]) -> str:
    """Each protocol's path (:func:`~gitnetdiag.diagnosis.proxies.path_text`), then which
    first hops the path check timed: ``...; checked: HTTP/2's leg to 10.0.0.1:8888, TCP
    connect RTT 50.4 ms`` ("" without paths)."""
    path = path_text(paths)
    legs = [f"{PROTOCOL_LABELS.get(p.protocol, p.protocol)}'s leg to {p.leg_endpoint}, TCP "
            f"connect RTT {fmt_s(p.leg_rtt_s)}"
            for p in paths if p.proxied and p.leg_endpoint and p.leg_rtt_s is not None]
    return f"{path}; checked: {', '.join(legs)}" if path and legs else path


def target_text(env: Environment) -> str:
    """The target as the user knows it: the checkout's remote by name beside its URLs
    (``origin: https://...``), else the URLs."""
    target = env.target_url or "-"
    named = f"remote {env.remote_name}: {target}" if env.remote_name else target
    path = paths_line(env.paths)
    return f"{named} (path: {path})" if path else named


def environment_items(d: Diagnosis) -> list[tuple[str, str]]:
    """The Markdown and HTML environment list after the target: (label, value)."""
    env = d.environment
    https_server, ssh_server = answered_by(env.server)
    return [*(("remote", note) for note in env.remote_notes),
            ("started", env.started or "-"), ("RTT", fmt_s(env.rtt_s)),
            ("path rate", fmt_rate(env.path_rate_bytes_per_s)),
            ("client versions", ", ".join(f"{k} {v}" for k, v in env.versions.items()) or "-"),
            ("HTTPS server that answered", https_server), ("SSH server", ssh_server),
            ("protocols measured", f"{', '.join(d.measured_protocols) or '-'} "
             f"(requested: {', '.join(d.requested_protocols) or '-'})")]
