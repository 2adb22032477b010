"""Runs side by side: before and after a fix, or one target from several vantage points.

Pure: it takes the :class:`Diagnosis` of each run (the first is the baseline)
and returns a :class:`Comparison`; ``gitnetdiag compare`` renders it.

    Comparison
    ├── runs: (RunSide, ...)             verdict, RTT, top culprit of each run
    └── pairs: (PairComparison, ...)     baseline against each later run
          ├── protocols: (ProtocolComparison, ...)   durations, rates, noise test
          ├── culprits: (CulpritChange, ...)         gone / stayed / appeared
          ├── bursts: (BurstComparison, ...)          connection bursts of both runs
          ├── gain: GainCheck | None                  baseline's top culprit: predicted
          │                                           (its cost_s) vs measured gain
          ├── slower / beyond_noise                   which run is slower, and is it real
          └── differences: (Difference, ...)          why: RTT, path rate, versions

Runs of one direction: pushes with pushes, clones with clones (else a usage error);
the words of every summary come from it (:data:`TRANSFER_WORDS`), the numbers do not.

Noise: a protocol's change is "beyond the noise" when Welch's t-test on the
completed transfer durations of the two runs gives p < :data:`ALPHA`, with at
least :data:`MIN_REPEATS` transfers on each side. With fewer the test is not
run and the comparison says so (``noise_test = "too-few-repeats"``).

A burst culprit (``listen-backlog-overflow``, ``syn-drop``, ``ssh-maxstartups``)
costs connection time, not push time: its measured gain is the seconds a
connection of the burst lost in the baseline minus in the other run, each side
counted the way the culprit's cost counts them (:func:`burst_loss_s`). One burst
a side is one sample: that gain is not tested against the noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gitnetdiag.diagnosis.burstgain import BurstComparison, burst_loss_s, compare_bursts
from gitnetdiag.diagnosis.measures import fetched_clones, median, ok_pushes, push_bytes
from gitnetdiag.diagnosis.model import Diagnosis, Direction, Finding, Unit, Verdict
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, PROTOCOL_ORDER
from gitnetdiag.diagnosis.stats import welch_p_value
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s
from gitnetdiag.errors import UsageError
from gitnetdiag.serial import to_jsonable

MIN_REPEATS = 3
"""Completed pushes a side below which no noise test is run."""
ALPHA = 0.05
"""Significance level of the noise test."""
RTT_CHANGE_RATIO = 1.2
"""RTTs, path rates (and a transfer's bytes) that differ by more than this factor differ."""

PROTOCOL_CULPRITS: dict[str, str] = {
    "h2-flow-control-window": "h2",
    "h2-frame-settings": "h2",
    "ssh-channel-window": "ssh",
}
"""Culprits that only ever cost one protocol's pushes."""
BURST_CULPRITS = frozenset({"listen-backlog-overflow", "syn-drop", "ssh-maxstartups"})
"""Culprits whose cost is in connection bursts (client-seconds), not in push time."""


@dataclass(frozen=True)
class TransferWords:
    """How a comparison names the transfers of its direction: ``one`` (``push``,
    ``clone``) and ``many`` (``pushes``, ``clones``)."""

    one: str
    many: str


TRANSFER_WORDS: dict[str, TransferWords] = {
    "push": TransferWords(one="push", many="pushes"),
    "fetch": TransferWords(one="clone", many="clones"),
    "load": TransferWords(one="operation", many="operations"),
}
"""A direction's words, by the diagnoses' ``direction``."""
NoiseTest = Literal["welch-t", "too-few-repeats"]
CulpritStatus = Literal["gone", "stayed", "appeared"]


@dataclass(frozen=True, kw_only=True)
class RunSide:
    """One compared run."""

    label: str
    """``A``, ``B``, ... in the order given (``A`` is the baseline)."""
    source: str
    """Where the run came from (the run directory as given)."""
    started: str
    """Start of the run."""
    verdict: Verdict
    """Its diagnosis verdict."""
    rtt_s: float | None
    """Path round-trip time of the run."""
    path_rate_bytes_per_s: float | None
    """Measured path capacity, bytes per second."""
    top_culprit: str | None
    """Id of its first-ranked culprit."""
    top_cost_s: float | None
    """That culprit's estimated cost."""


@dataclass(frozen=True, kw_only=True)
class ProtocolSample:
    """One protocol's completed pushes in one run."""

    durations_s: tuple[float, ...]
    """Duration of each completed push (projected for bounded ones), in push order."""
    failed: int
    """Failed or hung pushes."""
    failed_waits_s: tuple[float, ...] = ()
    """How long each failed or hung push ran before it ended (its wait), in push order."""
    bytes: float | None
    """Bytes of a typical push."""
    duration_median_s: float | None
    """Median completed push."""
    duration_min_s: float | None
    """Fastest completed push."""
    duration_max_s: float | None
    """Slowest completed push."""
    rate_median_bytes_per_s: float | None
    """Median rate of the completed pushes, bytes per second."""


@dataclass(frozen=True, kw_only=True)
class ProtocolComparison:
    """One protocol measured in both runs of a pair."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    label: str
    """Human name."""
    before: ProtocolSample
    """The baseline run's pushes."""
    after: ProtocolSample
    """The other run's pushes."""
    change_s: float | None
    """Median duration after minus before (negative: faster)."""
    speedup: float | None
    """Median duration before over after (above 1: the other run is faster)."""
    noise_test: NoiseTest
    """How the change was tested against the noise."""
    p_value: float | None
    """Welch's t-test p-value, when run."""
    beyond_noise: bool | None
    """The change is larger than the repeats' noise; ``None`` when not tested."""


@dataclass(frozen=True, kw_only=True)
class CulpritChange:
    """A ranked culprit of either run of a pair."""

    id: str
    """Culprit id."""
    title: str
    """Its human name."""
    status: CulpritStatus
    """``gone`` (only in the baseline), ``stayed`` (both), ``appeared`` (only in the other)."""
    cost_before_s: float | None
    """Estimated cost in the baseline run."""
    cost_after_s: float | None
    """Estimated cost in the other run."""


@dataclass(frozen=True, kw_only=True)
class GainCheck:
    """The baseline's top culprit: what its cost predicted against what changed."""

    culprit_id: str
    """The culprit."""
    protocol: str | None
    """Protocol whose pushes it costs (a burst culprit: the protocol of its burst)."""
    predicted_gain_s: float | None
    """Its ``cost_s`` in the baseline: seconds a push or clone (a burst culprit: a
    connection of the burst) would gain without it; ``None`` when it carries no cost."""
    measured_gain_s: float | None
    """Median push duration before minus after on that protocol; when pushes failed or
    hung on either side, the mean time per push with each failure as its wait plus a redo
    (:func:`expected_push_s`), the way the culprits' costs count them. A burst culprit:
    the seconds a burst connection lost before minus after (:func:`burst_loss_s`)."""
    error_share: float | None
    """(predicted - measured) / measured; ``None`` without a positive measured gain."""
    culprit_gone: bool
    """The culprit no longer ranks in the other run."""
    beyond_noise: bool | None
    """The measured gain is beyond the noise (``None``: too few repeats)."""
    note: str = ""
    """Why a number is missing."""


@dataclass(frozen=True, kw_only=True)
class Difference:
    """A measured condition that differs between the two runs (why one is slower)."""

    what: str
    """What differs (``RTT``, ``path rate``, ``git version``)."""
    before: float | str | None
    """The baseline's value."""
    after: float | str | None
    """The other run's value."""
    unit: Unit | None = None
    """Unit of numeric values."""


@dataclass(frozen=True, kw_only=True)
class PairComparison:
    """The baseline against one other run."""

    before: str
    """Label of the baseline."""
    after: str
    """Label of the other run."""
    protocols: tuple[ProtocolComparison, ...]
    """Protocols measured in both, canonical order."""
    only_before: tuple[str, ...]
    """Protocols with completed pushes only in the baseline."""
    only_after: tuple[str, ...]
    """Protocols with completed pushes only in the other run."""
    culprits: tuple[CulpritChange, ...]
    """Gone, then stayed, then appeared; each group in rank order."""
    bursts: tuple[BurstComparison, ...] = ()
    """Connection bursts run on the same protocol in both runs, canonical order."""
    gain: GainCheck | None
    """Predicted vs measured gain of the baseline's top culprit; ``None`` when it has none."""
    slower: str | None
    """Label of the slower run on the deciding protocol; ``None`` when nothing to compare or
    when both take the same time (equal as shown)."""
    deciding_protocol: str | None
    """The protocol with the largest relative change."""
    beyond_noise: bool | None
    """Whether that change is beyond the noise (``None``: too few repeats)."""
    differences: tuple[Difference, ...]
    """Conditions that differ: RTT, path rate, client versions."""
    slower_top_culprit: str | None
    """The slower run's first-ranked culprit: the diagnosis of why it is slower."""
    summary: str
    """One sentence: which run is slower, by how much, and why."""


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Every run and every pair (baseline against each later run)."""

    runs: tuple[RunSide, ...]
    """The runs, baseline first."""
    pairs: tuple[PairComparison, ...]
    """The baseline against each later run."""
    headline: str
    """The first pair's summary (with the count of further pairs)."""
    direction: Direction = "push"
    """What every compared run measured: pushes, clones (``fetch``) or a load."""
    diagnoses: tuple[Diagnosis, ...] = field(default=(), compare=False, repr=False)
    """The runs' diagnoses (plots read their time series); not part of the JSON."""

    @property
    def words(self) -> TransferWords:
        """How the renderers name this direction's transfers."""
        return TRANSFER_WORDS[self.direction]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types, without the diagnoses."""
        return {
            "direction": self.direction,
            "runs": [to_jsonable(run) for run in self.runs],
            "pairs": [to_jsonable(pair) for pair in self.pairs],
            "headline": self.headline,
        }


def protocol_sample(d: Diagnosis, protocol: str) -> ProtocolSample | None:
    """A protocol's completed pushes in one run; ``None`` when none completed."""
    observed = d.observations.protocols.get(protocol)
    if observed is None:
        return None
    done = list(fetched_clones(d.observations, protocol) or ok_pushes(observed))
    if not done:
        return None
    durations = tuple(push.duration_s for push in done)
    rates = [push.bytes / push.duration_s for push in done if push.bytes > 0]
    return ProtocolSample(
        durations_s=durations, failed=len(observed.pushes) - len(done),
        failed_waits_s=tuple(push.duration_s for push in observed.pushes if not push.ok),
        bytes=push_bytes(observed), duration_median_s=median(durations),
        duration_min_s=min(durations), duration_max_s=max(durations),
        rate_median_bytes_per_s=median(rates))


def expected_push_s(sample: ProtocolSample) -> float | None:
    """Mean time a push costs when failures count: a failed push is its wait plus a redo
    (the median completed push), as the culprits' costs count them."""
    redo = sample.duration_median_s
    if redo is None:
        return None
    total = sum(sample.durations_s) + sum(wait + redo for wait in sample.failed_waits_s)
    return total / (len(sample.durations_s) + len(sample.failed_waits_s))


def compare_protocol(protocol: str, before: ProtocolSample,
                     after: ProtocolSample) -> ProtocolComparison:
    """A protocol in both runs; the noise is tested only with MIN_REPEATS pushes a side."""
    tested = min(len(before.durations_s), len(after.durations_s)) >= MIN_REPEATS
    p = welch_p_value(before.durations_s, after.durations_s) if tested else None
    b, a = before.duration_median_s, after.duration_median_s
    return ProtocolComparison(
        protocol=protocol, label=PROTOCOL_LABELS.get(protocol, protocol),
        before=before, after=after,
        change_s=a - b if a is not None and b is not None else None,
        speedup=b / a if a and b is not None else None,
        noise_test="welch-t" if tested else "too-few-repeats", p_value=p,
        beyond_noise=None if p is None else p < ALPHA)


def culprit_changes(before: Sequence[Finding], after: Sequence[Finding]) -> list[CulpritChange]:
    """Gone, stayed and appeared culprits of two ranked lists."""
    after_by_id = {f.id: f for f in after}
    before_ids = {f.id for f in before}
    changes = [
        CulpritChange(id=f.id, title=f.title,
                      status="stayed" if f.id in after_by_id else "gone",
                      cost_before_s=f.cost_s,
                      cost_after_s=after_by_id[f.id].cost_s if f.id in after_by_id else None)
        for f in before
    ]
    changes += [CulpritChange(id=f.id, title=f.title, status="appeared", cost_before_s=None,
                              cost_after_s=f.cost_s) for f in after if f.id not in before_ids]
    order = {"gone": 0, "stayed": 1, "appeared": 2}
    return sorted(changes, key=lambda c: order[c.status])


def affected_protocol(finding: Finding, measured: Sequence[ProtocolComparison]) -> str | None:
    """The protocol whose pushes a culprit costs.

    The protocol the cost model priced it on (``cost_protocol``); else a
    protocol's own culprit names it (HTTP/2 and SSH windows); otherwise the
    protocol its first evidence is about (``HTTP/2: largest advertised TCP
    window``); otherwise the baseline's slowest protocol measured in both runs.
    The first three hold even when that protocol was not measured in both runs
    (every push failed on one side): the gain check then says so.
    """
    if finding.cost_protocol is not None:
        return finding.cost_protocol
    if finding.id in PROTOCOL_CULPRITS:
        return PROTOCOL_CULPRITS[finding.id]
    by_label = {label: name for name, label in PROTOCOL_LABELS.items()}
    named = [by_label.get(item.what.split(":", 1)[0]) for item in finding.evidence]
    if (name := next((n for n in named if n is not None), None)) is not None:
        return name
    medians = [(c.before.duration_median_s or 0.0, c.protocol) for c in measured]
    return max(medians)[1] if medians else None


def _gain(top: Finding, protocol: str | None, gone: bool, notes: Sequence[str],
          measured: float | None = None, beyond_noise: bool | None = None) -> GainCheck:
    """``top``'s gain check; without a ``measured`` gain its notes say why."""
    cost = predicted(top)
    return GainCheck(
        culprit_id=top.id, protocol=protocol, predicted_gain_s=cost, measured_gain_s=measured,
        error_share=(cost - measured) / measured
        if cost is not None and measured is not None and measured > 0 else None,
        culprit_gone=gone, beyond_noise=beyond_noise, note="; ".join(notes))


def burst_gain_check(top: Finding, before: Diagnosis, after: Diagnosis,
                     gone: bool, words: TransferWords) -> GainCheck:
    """A burst culprit: its cost against the seconds a burst connection lost before minus
    after, on the protocol whose burst lost the most in the baseline."""
    losses = [(loss, name) for name in PROTOCOL_ORDER
              if (loss := burst_loss_s(before, top.id, name)) is not None]
    if not losses:
        return _gain(top, None, gone, [f"{top.id} was priced without a burst (from the "
                                       f"{words.many}' SYN retransmissions): no burst to measure"])
    loss_before, protocol = max(losses)
    loss_after = burst_loss_s(after, top.id, protocol)
    if loss_after is None:
        return _gain(top, protocol, gone,
                     [f"the other run has no {protocol} burst: rerun it with the same --burst"])
    measured = loss_before - loss_after
    notes = ["a burst culprit costs connection time: the measured gain is the seconds a "
             f"connection of the {PROTOCOL_LABELS.get(protocol, protocol)} burst lost before "
             "minus after (failures, SYN timeouts, the connect-time tail), counted as its cost "
             "counts them; one burst a side is not tested against the noise"]
    if measured <= 0:
        notes.append("nothing was gained: the burst lost as much after")
    return _gain(top, protocol, gone, notes, measured)


def _unmeasured_note(before: Diagnosis, after: Diagnosis, protocol: str | None,
                     words: TransferWords) -> str:
    """Why no gain was measured on ``protocol``: every push failed on one side, or it was
    not pushed in both runs."""
    def count(d: Diagnosis) -> tuple[int, int]:
        p = d.observations.protocols.get(protocol or "")
        return (len(ok_pushes(p)), len(p.pushes)) if p is not None else (0, 0)

    (ok_b, all_b), (ok_a, all_a) = count(before), count(after)
    name = PROTOCOL_LABELS.get(protocol or "", protocol or "the protocol")
    if all_b and not ok_b and ok_a:
        return (f"every {name} {words.one} failed before ({all_b} of {all_b}) and {ok_a} of "
                f"{all_a} completed after: the fix turned failures into {words.many}; a "
                f"failure's cost is its wait and a retry, which no completed {words.one} times")
    if all_b and ok_b and all_a and not ok_a:
        return (f"every {name} {words.one} failed after ({all_a} of {all_a}): the other run "
                "is worse")
    return "the protocol it costs was not measured in both runs"


def predicted(top: Finding) -> float | None:
    """A culprit's estimated cost as the gain its fix predicts; ``None`` when it has none."""
    return top.cost_s if top.cost_s > 0 else None


def gain_check(before: Diagnosis, after: Diagnosis, measured: Sequence[ProtocolComparison],
               words: TransferWords = TRANSFER_WORDS["push"]) -> GainCheck | None:
    """The baseline's top culprit: its cost against the gain measured in the other run."""
    if not before.findings:
        return None
    top = before.findings[0]
    gone = all(f.id != top.id for f in after.findings)
    if top.id in BURST_CULPRITS:
        return burst_gain_check(top, before, after, gone, words)
    protocol = affected_protocol(top, measured)
    row = next((c for c in measured if c.protocol == protocol), None)
    if row is None or row.change_s is None:
        return _gain(top, protocol, gone, [_unmeasured_note(before, after, protocol, words)])
    measured_gain = -row.change_s
    notes = []
    if row.before.failed or row.after.failed:
        before_s, after_s = expected_push_s(row.before), expected_push_s(row.after)
        if before_s is not None and after_s is not None:
            measured_gain = before_s - after_s
        notes.append(f"{row.before.failed} failed or hung {words.one}(es) before, "
                     f"{row.after.failed} after: the measured gain counts each as its wait "
                     f"plus a redo, as the cost does (mean time per {words.one})")
    if (sizes := sorted((row.before.bytes or 0.0, row.after.bytes or 0.0)))[1] \
            > RTT_CHANGE_RATIO * sizes[0] > 0:
        notes.append(f"a {words.one} moved {fmt_bytes(row.before.bytes)} before, "
                     f"{fmt_bytes(row.after.bytes)} after (bounded {words.many} stop mid-pack): "
                     "durations of different bytes (compare the rates)")
    if measured_gain <= 0:
        notes.append("nothing was gained: the run is not faster")
    if predicted(top) is None:
        notes.append(f"{top.id} carries no estimated cost: no predicted gain to check")
    return _gain(top, protocol, gone, notes, measured_gain, row.beyond_noise)


def _differences(before: Diagnosis, after: Diagnosis) -> list[Difference]:
    env_b, env_a = before.environment, after.environment

    measured: tuple[tuple[str, Unit, float | None, float | None], ...] = (
        ("RTT", "s", env_b.rtt_s, env_a.rtt_s),
        ("path rate", "B/s", env_b.path_rate_bytes_per_s or None,
         env_a.path_rate_bytes_per_s or None),
    )
    found = [Difference(what=what, before=b, after=a, unit=unit)
             for what, unit, b, a in measured
             if b and a and max(a, b) / min(a, b) > RTT_CHANGE_RATIO]
    for name in sorted(set(env_b.versions) | set(env_a.versions)):
        if env_b.versions.get(name) != env_a.versions.get(name):
            found.append(Difference(what=f"{name} version", before=env_b.versions.get(name),
                                    after=env_a.versions.get(name)))
    return found


def _deciding(rows: Sequence[ProtocolComparison]) -> ProtocolComparison | None:
    """The protocol whose median changed by the largest factor, either way."""
    rated = [r for r in rows if r.speedup]
    return max(rated, key=lambda r: max(r.speedup or 1.0, 1.0 / (r.speedup or 1.0)),
               default=None)


def same_time(row: ProtocolComparison) -> bool:
    """The two medians are equal as they are shown (``231 ms`` both): neither is slower."""
    return row.speedup == 1.0 or (
        fmt_s(row.before.duration_median_s) == fmt_s(row.after.duration_median_s))


def _pair_summary(labels: tuple[str, str], row: ProtocolComparison | None,
                  slower_top: Finding | None, differences: Sequence[Difference],
                  gone: Sequence[CulpritChange], words: TransferWords) -> str:
    before, after = labels
    if row is None or row.speedup is None:
        return (f"{before} and {after} share no protocol with completed {words.many}: "
                "nothing to compare.")
    if same_time(row):  # the largest change: the other protocols changed less
        return (f"{before} and {after} take the same time: no protocol's median changed as "
                f"shown ({row.label}: {fmt_s(row.before.duration_median_s)} a {words.one} on "
                "each); neither is slower.")
    slow, fast = (before, after) if row.speedup > 1 else (after, before)
    slow_s = max(row.before.duration_median_s or 0.0, row.after.duration_median_s or 0.0)
    fast_s = min(row.before.duration_median_s or 0.0, row.after.duration_median_s or 0.0)
    factor = max(row.speedup, 1 / row.speedup)
    if row.beyond_noise is None:
        noise_text = (f"fewer than {MIN_REPEATS} {words.many} a side: not tested against "
                      "the noise")
    else:
        noise_text = (f"{'beyond' if row.beyond_noise else 'within'} the noise, "
                      f"Welch p = {row.p_value:.2g}")
    text = (f"{slow} is slower than {fast} on {row.label}: {fmt_s(slow_s)} against "
            f"{fmt_s(fast_s)} a {words.one} (x{factor:.1f}, {noise_text})")
    reasons = []
    for d in differences:
        if d.unit == "s" and isinstance(d.before, float) and isinstance(d.after, float):
            reasons.append(f"RTT {fmt_s(d.before)} against {fmt_s(d.after)}")
        elif d.unit == "B/s" and isinstance(d.before, float) and isinstance(d.after, float):
            reasons.append(f"path rate {fmt_rate(d.before)} against {fmt_rate(d.after)}")
    if slower_top is not None:
        reasons.append(f"{slow}'s top culprit {slower_top.id} costs {fmt_s(slower_top.cost_s)}")
    if slow == before and gone:
        reasons.append("gone in " + after + ": " + ", ".join(c.id for c in gone))
    return text + ("; " + "; ".join(reasons) if reasons else "") + "."


def compare_pair(labels: tuple[str, str], before: Diagnosis, after: Diagnosis) -> PairComparison:
    """The baseline ``before`` against ``after`` (runs of one direction)."""
    words = TRANSFER_WORDS[before.direction]
    samples = {name: (protocol_sample(before, name), protocol_sample(after, name))
               for name in PROTOCOL_ORDER}
    rows = [compare_protocol(name, b, a) for name, (b, a) in samples.items()
            if b is not None and a is not None]
    changes = culprit_changes(before.findings, after.findings)
    deciding = _deciding(rows)
    slower: str | None = None
    slower_top: Finding | None = None
    if deciding is not None and deciding.speedup is not None and not same_time(deciding):
        slower, slower_run = (labels[0], before) if deciding.speedup > 1 else (labels[1], after)
        slower_top = slower_run.findings[0] if slower_run.findings else None
    differences = _differences(before, after)
    return PairComparison(
        before=labels[0], after=labels[1], protocols=tuple(rows),
        only_before=tuple(name for name, (b, a) in samples.items() if b and a is None),
        only_after=tuple(name for name, (b, a) in samples.items() if a and b is None),
        culprits=tuple(changes), bursts=tuple(compare_bursts(before, after)),
        gain=gain_check(before, after, rows, words), slower=slower,
        deciding_protocol=deciding.protocol if deciding else None,
        beyond_noise=deciding.beyond_noise if deciding else None,
        differences=tuple(differences),
        slower_top_culprit=slower_top.id if slower_top else None,
        summary=_pair_summary(labels, deciding, slower_top, differences,
                              [c for c in changes if c.status == "gone"], words),
    )


def run_label(index: int) -> str:
    """``A``, ``B``, ..., ``Z``, then ``R27``, ..."""
    return chr(ord("A") + index) if index < 26 else f"R{index + 1}"


def same_direction(diagnoses: Sequence[Diagnosis], sources: Sequence[str]) -> None:
    """A usage error when a run measured another direction than the baseline's."""
    first = diagnoses[0].direction
    for index, (d, source) in enumerate(zip(diagnoses, sources, strict=True)):
        if d.direction != first:
            raise UsageError(
                f"A ({sources[0]}) is a {first} run and {run_label(index)} ({source}) a "
                f"{d.direction} run: compare pairs runs of the same direction",
                hint=f"compare {TRANSFER_WORDS[first].many} with {TRANSFER_WORDS[first].many}; "
                "a --direction both run compares by its matching half (RUN for its pushes, "
                "RUN-fetch for its clones)")


def compare(diagnoses: Sequence[Diagnosis], sources: Sequence[str]) -> Comparison:
    """Compare the first run (the baseline) with each of the others."""
    if len(diagnoses) < 2 or len(diagnoses) != len(sources):
        raise ValueError("compare needs at least two runs, each with its source")
    labels = [run_label(i) for i in range(len(diagnoses))]
    same_direction(diagnoses, sources)
    runs = tuple(
        RunSide(label=label, source=source, started=d.environment.started, verdict=d.verdict,
                rtt_s=d.environment.rtt_s,
                path_rate_bytes_per_s=d.environment.path_rate_bytes_per_s,
                top_culprit=d.findings[0].id if d.findings else None,
                top_cost_s=d.findings[0].cost_s if d.findings else None)
        for label, source, d in zip(labels, sources, diagnoses, strict=True))
    pairs = tuple(compare_pair((labels[0], labels[i]), diagnoses[0], diagnoses[i])
                  for i in range(1, len(diagnoses)))
    more = len(pairs) - 1
    headline = pairs[0].summary + (f" ({more} more comparison{'s' if more > 1 else ''} below.)"
                                   if more else "")
    return Comparison(runs=runs, pairs=pairs, headline=headline,
                      direction=diagnoses[0].direction, diagnoses=tuple(diagnoses))
