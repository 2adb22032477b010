"""What the engine returns: findings, per-protocol summaries, the diagnosis.

Renderers read only these types (and the :class:`Observations` a diagnosis
carries, for plots); every number they show is computed here or in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.servers import ServerIdentity
from gitnetdiag.hops import PathHop
from gitnetdiag.outcomes import FailureKind
from gitnetdiag.serial import to_jsonable

if TYPE_CHECKING:  # numpy-free at run time: the plots' series are analysis types
    from gitnetdiag.analysis.nativeledger import H2Pacing, SshPacing
    from gitnetdiag.analysis.window import ReceiverWindowSeries

Verdict = Literal["healthy", "degraded", "inconclusive", "failed"]
"""``healthy`` every requested protocol measured and nothing ranks; ``degraded``
culprits ranked; ``inconclusive`` the transfers worked but a measurement is missing;
``failed`` a requested protocol's transfers all failed, explained or not, or nothing
was measured (rules in :mod:`gitnetdiag.diagnosis.verdict`)."""


Unit = Literal["B", "B/s", "s", "ratio", "count", "IOPS"]
"""Units of evidence numbers: bytes, bytes per second, seconds, a share 0..1,
a count (pushes, frames, segments, connections), storage operations per second.
Renderers format each one way (:mod:`gitnetdiag.report.units`)."""

Comparison = Literal["<", "<=", ">", ">="]
"""How the measured value stood against the threshold for it to count as evidence."""


@dataclass(frozen=True, kw_only=True)
class Quantity:
    """A number with its unit, for the terms a threshold is derived from."""

    value: float
    """The number, in ``unit``."""
    unit: Unit
    """Its unit."""


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """One measured fact behind a finding: numbers and units, formatted by renderers."""

    what: str
    """What was measured, e.g. ``HTTP/2 stream window``."""
    value: float | None = None
    """The measured number in ``unit``; ``None`` when the fact is not a number (see ``text``)."""
    unit: Unit | None = None
    """Unit of ``value``, ``of`` and ``threshold``."""
    of: float | None = None
    """The whole ``value`` is part of (``1`` of ``3`` pushes), in ``unit``."""
    text: str = ""
    """The fact when it is not a number (a config line, a version, a log line), or a
    qualifier of ``value`` (the kinds of failed connections)."""
    threshold: float | None = None
    """The number ``value`` was compared with, in ``unit``; ``None`` when purely informative."""
    comparison: Comparison | None = None
    """``value comparison threshold`` is why this counts as evidence (``<`` BDP)."""
    basis: str = ""
    """What the threshold is, in words (``BDP ({} x RTT)``); each ``{}`` stands for one of
    ``basis_terms``, formatted by the renderer."""
    basis_terms: tuple[Quantity, ...] = ()
    """The numbers of ``basis``, in order."""
    source: str = ""
    """Where it came from: ``capture h2 conn 3 frames 120-4410``, ``trace2``,
    ``host counter ListenOverflows``, ``haproxy.cfg line 4``."""

    def __post_init__(self) -> None:
        # A number without its unit is what the string era hid: 65535 what?
        numbers = (self.value, self.of, self.threshold)
        if self.unit is None and any(n is not None for n in numbers):
            raise ValueError(f"evidence {self.what!r}: a number needs its unit")


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One culprit that fired, with its evidence and fix."""

    id: str
    """Stable culprit id from the catalogue (``h2-flow-control-window``, ...)."""
    title: str
    """Short human name of the culprit."""
    score: float
    """Confidence 0..1 that this culprit is real."""
    cost_s: float
    """Estimated seconds it cost on the measured push (or client-seconds in a burst)."""
    summary: str
    """One sentence with the key numbers."""
    evidence: tuple[Evidence, ...]
    """The measured facts."""
    fix: str
    """What to change, naming the exact setting."""
    cost_protocol: str | None = None
    """The protocol whose push ``cost_s`` is measured on (``h2``), when the cost is a
    push's upload time (:mod:`gitnetdiag.diagnosis.costs`); ``None`` otherwise."""
    shares_with: str | None = None
    """Id of another culprit whose cost holds the seconds this one only amplifies
    (``path-latency`` over a small window); ``cost_s`` is then the remainder."""
    compares: tuple[str, str] | None = None
    """``(judged, reference)``: the protocol whose rate its evidence holds against another's
    (``("h2", "ssh")``: HTTP/2 slower than SSH), None when its evidence compares none. Two
    protocols that took different first hops (one through a forward proxy) are said so
    (:mod:`gitnetdiag.diagnosis.crosshop`)."""
    direction: Direction | None = None
    """The direction whose transfers it was found on, set where findings of both directions
    are ranked together (:mod:`gitnetdiag.diagnosis.combined`); None: its diagnosis' own."""

    @property
    def impact_s(self) -> float:
        """Ranking key: cost weighted by confidence."""
        return self.cost_s * self.score


@dataclass(frozen=True, kw_only=True)
class MeasurementFailure:
    """A measurement the run could not make, shown beside the culprits."""

    protocol: str | None
    """Protocol whose measurement failed, ``None`` for the whole run."""
    stage: str
    """Step that failed: ``push``, ``setup``, ``native``, ``capture``, ..."""
    reference: str
    """Stable kebab-case reference (``auth-failed``, ``refused``, ``tls-verification``, ...)."""
    kind: FailureKind | None
    """Failure kind of the git run, when one."""
    message: str
    """What happened, one line."""
    hint: str
    """What to fix to measure it."""
    explained_by: str | None = None
    """Id of a ranked culprit this failure is evidence for (a filter that resets
    connections): then it does not make the run inconclusive, and a failed run's headline
    names it as the cause; None: no ranked culprit explains it."""
    signatures: tuple[str, ...] = ()
    """Ids of the failure-signature catalogue's entries that match what was seen of a
    failed push (``docs/failures.md``); empty when none matched or it was not described."""
    candidates: tuple[str, ...] = ()
    """Culprit ids those entries' causes point to: what to look at, not ranked findings."""
    seen: str = ""
    """What was seen of a failed push, one sentence (``HTTP/2 push: POST git-receive-pack
    answered 411; git said: ...``), ending in "gitnetdiag has no entry for it" when no
    entry matched; empty when the failure was not described."""


@dataclass(frozen=True, kw_only=True)
class ProtocolSummary:
    """Rates and outcomes of one protocol's pushes."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    label: str
    """Human name (``HTTP/2``)."""
    pushes_ok: int
    """Completed pushes."""
    pushes_failed: int
    """Failed or hung pushes."""
    failure_kinds: tuple[FailureKind, ...]
    """Kinds of the failures, in push order."""
    bytes: int | None
    """Bytes of a push (median over pushes)."""
    duration_s: float | None
    """Median duration of the completed pushes (of all pushes when none completed)."""
    duration_min_s: float | None
    """Fastest completed push."""
    duration_max_s: float | None
    """Slowest completed push."""
    rate_bytes_per_s: float | None
    """Median rate of the completed pushes, bytes per second (bytes / duration)."""
    rate_min_bytes_per_s: float | None
    """Slowest completed push's rate."""
    rate_max_bytes_per_s: float | None
    """Fastest completed push's rate."""
    upload_s: float | None
    """Upload phase of a typical push (trace2), when known."""
    projected_pushes: int = 0
    """Completed pushes that were bounded: their duration is projected for the whole pack
    from the rate of the bytes they moved (renderers mark the duration)."""


@dataclass(frozen=True, kw_only=True)
class Environment:
    """Where and how the run was measured, for the report's environment section."""

    gitnetdiag_version: str
    """Version of this tool."""
    started: str
    """Start of the run."""
    target_url: str
    """Remote (renderers redact it)."""
    rtt_s: float | None
    """Path round-trip time."""
    path_rate_bytes_per_s: float | None
    """Measured path capacity, bytes per second."""
    versions: dict[str, str]
    """Client tool versions by name (git, libcurl, nghttp2, openssh)."""
    protocols: tuple[str, ...]
    """Protocols with observations (pushed, whatever the outcome), in canonical order;
    see ``Diagnosis.measured_protocols`` for those that measured something."""
    measured_by: str
    """How it was measured."""
    min_impact_s: float
    """Ranking threshold: findings with cost x score below it were dropped."""
    min_score: float
    """Ranking threshold: findings less confident than this were dropped."""
    server: ServerIdentity | None = None
    """Who answered the HTTPS pushes (and the SSH banner), from what the probes saw."""
    remote_name: str = ""
    """The checkout's remote probed (``origin``), "" when URLs were given."""
    remote_notes: tuple[str, ...] = ()
    """How its URLs were found (:attr:`RunInfo.remote_notes`)."""
    paths: tuple[PathHop, ...] = ()
    """Each protocol's first hop (a forward proxy, or direct), its proxy identified by what
    it said of itself; empty when the run did not record them."""


Direction = Literal["push", "fetch", "load", "both"]
"""What a diagnosis measured: pushes, clones (``fetch``), a ``load`` run's operations, or
``both``: a run's pushes and its clones, each half a diagnosis of its own (``parts``)."""


@dataclass(frozen=True, kw_only=True)
class FetchDetails:
    """What a fetch run (``fetch.json``: its clones, each sampled as it ran) shows
    beside the ranking; the reports' extra sections, each shown when present. The
    transfers themselves and the bursts are the diagnosis' ``observations``."""

    record: Any
    """The run's record, a ``gitnetdiag.rundir.manifest.FetchManifest`` (its status,
    remotes, seed branch and errors); typed loosely because the diagnosis does not import
    the run directory's records (the pipeline sets it, the reports read it)."""
    windows: tuple[ReceiverWindowSeries | None, ...] = ()
    """Per transfer, the receiving socket's window over time (the HTML report's plot)."""
    h2_pacing: tuple[H2Pacing, ...] = ()
    """The native HTTP/2 ledgers, one per window, side by side."""
    ssh_pacing: tuple[SshPacing, ...] = ()
    """The native SSH ledger."""


@dataclass(frozen=True, kw_only=True)
class Diagnosis:
    """The engine's answer; the one input of every renderer."""

    verdict: Verdict
    """See :data:`Verdict`."""
    headline: str
    """One sentence: the verdict in words."""
    findings: tuple[Finding, ...]
    """Culprits above the threshold, ranked by cost x score, highest first."""
    dropped: tuple[Finding, ...]
    """Culprits that fired below the threshold (kept for the JSON, not shown as causes)."""
    protocols: tuple[ProtocolSummary, ...]
    """Per protocol summaries in canonical order."""
    environment: Environment
    """Where and how."""
    observations: Observations = field(default_factory=Observations)
    """The input it came from (plots read their series from here)."""
    requested_protocols: tuple[str, ...] = ()
    """Protocols the run was asked to measure, canonical order."""
    measured_protocols: tuple[str, ...] = ()
    """Protocols with at least one transfer that gave a rate (a stall or a reset gives none)."""
    measurement_failures: tuple[MeasurementFailure, ...] = ()
    """What could not be measured, each with its hint."""
    direction: Direction = "push"
    """What was measured: pushes (``push``), clones (``fetch``), or a ``load`` run's
    concurrent operations (clones, fetches, pushes, ls-remotes, as its observations say)."""
    fetch_details: FetchDetails | None = None
    """A fetch run's per-transfer evidence and record (its reports' extra sections and the
    ``fetch-report/3`` JSON); None for a push or load run."""
    parts: tuple[Diagnosis, ...] = ()
    """A ``both`` diagnosis' halves, the pushes' then the clones' (each as it renders
    alone); empty for any other (:func:`gitnetdiag.diagnosis.combined.combine`)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types, every field (the JSON report builds on this)."""
        result: dict[str, Any] = to_jsonable(self)
        return result
