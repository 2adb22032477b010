"""Runs side by side: before and after a fix, or one target from several vantage points.

Pure: it takes the :class:`Diagnosis` of each run (the first is the baseline)
and returns a :class:`Comparison`; ``gitnetdiag compare`` renders it.

    Comparison
    ├── runs: (RunSide, ...)             verdict, RTT, top culprit of each run
    └── pairs: (PairComparison, ...)     baseline against each later run
          ├── protocols: (ProtocolComparison, ...)   durations (or projected), rates, noise
          ├── culprits: (CulpritChange, ...)         gone / stayed / appeared
          ├── bursts: (BurstComparison, ...)          connection bursts of both runs
          ├── gain: GainCheck | None                  baseline's top culprit: predicted
          │                                           (its cost_s) vs measured gain
          ├── slower / beyond_noise                   which run is slower, and is it real
          └── differences: (Difference, ...)          why: RTT, path rate, versions

Runs of one direction: pushes with pushes, clones with clones (else a usage error);
the words of every summary come from it (:data:`TRANSFER_WORDS`), the numbers do not.

Like with like (:mod:`~gitnetdiag.diagnosis.likeforlike`): runs that moved the
same amount compare their durations; runs that moved different amounts (a clone
bounded mid-pack on either side, pushes or clones of different sizes) compare each
transfer projected to one whole size at its own rate, the projection marked
(``basis = "projected"``), and the baseline's top culprit's cost is scaled to that
size, so predicted and measured gain are one quantity. The summary sentences are
:mod:`~gitnetdiag.diagnosis.comparetext`'s.

Noise: a protocol's change is "beyond the noise" when Welch's t-test on the
compared times of the two runs (durations, or the projected ones) gives
p < :data:`ALPHA`, with at least :data:`MIN_REPEATS` transfers on each side.
With fewer the test is not run and the comparison says so
(``noise_test = "too-few-repeats"``).

A burst culprit (``listen-backlog-overflow``, ``syn-drop``, ``ssh-maxstartups``)
costs connection time, not push time: its measured gain is the seconds a
connection of the burst lost in the baseline minus in the other run, each side
counted the way the culprit's cost counts them (:func:`burst_loss_s`). One burst
a side is one sample: that gain is not tested against the noise.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitnetdiag.diagnosis.burstgain import burst_loss_s, compare_bursts
from gitnetdiag.diagnosis.comparemodel import (
    TRANSFER_WORDS,
    Comparison,
    CulpritChange,
    Difference,
    GainCheck,
    PairComparison,
    ProtocolComparison,
    RunSide,
    TransferWords,
)
from gitnetdiag.diagnosis.comparetext import pair_summary, same_time
from gitnetdiag.diagnosis.likeforlike import (
    ALPHA,
    MIN_REPEATS,
    Projection,
    ProtocolSample,
    expected_s,
    projection,
    protocol_sample,
    scaled_cost_s,
)
from gitnetdiag.diagnosis.measures import median, ok_pushes
from gitnetdiag.diagnosis.model import Diagnosis, Finding, Unit
from gitnetdiag.diagnosis.observations import PROTOCOL_LABELS, PROTOCOL_ORDER
from gitnetdiag.diagnosis.stats import welch_p_value
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_s
from gitnetdiag.errors import UsageError

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


def compare_protocol(protocol: str, before: ProtocolSample,
                     after: ProtocolSample) -> ProtocolComparison:
    """A protocol in both runs, on their durations or, when they moved different amounts,
    on each transfer projected to one size (:func:`~gitnetdiag.diagnosis.likeforlike.
    projection`); the noise is tested on the same times, only with MIN_REPEATS a side."""
    projected: Projection | None = projection(before, after)
    times_b, times_a = ((projected.before_s, projected.after_s) if projected is not None
                        else (before.durations_s, after.durations_s))
    tested = min(len(times_b), len(times_a)) >= MIN_REPEATS
    p = welch_p_value(times_b, times_a) if tested else None
    b, a = median(times_b), median(times_a)
    return ProtocolComparison(
        protocol=protocol, label=PROTOCOL_LABELS.get(protocol, protocol),
        before=before, after=after,
        change_s=a - b if a is not None and b is not None else None,
        speedup=b / a if a and b is not None else None,
        noise_test="welch-t" if tested else "too-few-repeats", p_value=p,
        beyond_noise=None if p is None else p < ALPHA,
        basis="duration" if projected is None else "projected",
        projected_bytes=projected.bytes if projected is not None else None,
        projected_origin=projected.origin if projected is not None else None,
        before_s=times_b, after_s=times_a, before_median_s=b, after_median_s=a)


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
          measured: float | None = None, beyond_noise: bool | None = None,
          row: ProtocolComparison | None = None) -> GainCheck:
    """``top``'s gain check; without a ``measured`` gain its notes say why. On a ``row``
    of runs that moved different amounts the cost is scaled to the projected size."""
    cost = priced = predicted(top)
    size = row.projected_bytes if row is not None and row.projected else None
    if cost is not None and size is not None and row is not None:
        cost = scaled_cost_s(cost, row.before, size)
    return GainCheck(
        culprit_id=top.id, protocol=protocol, predicted_gain_s=cost, measured_gain_s=measured,
        error_share=(cost - measured) / measured
        if cost is not None and measured is not None and measured > 0 else None,
        culprit_gone=gone, beyond_noise=beyond_noise, note="; ".join(notes),
        basis="projected" if size is not None else "duration", projected_bytes=size,
        priced_cost_s=priced, priced_bytes=row.before.bytes if row is not None else None)


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
        before_s = expected_s(row.before_s, row.before.failed_waits_s)
        after_s = expected_s(row.after_s, row.after.failed_waits_s)
        if before_s is not None and after_s is not None:
            measured_gain = before_s - after_s
        notes.append(f"{row.before.failed} failed or hung {words.one}(es) before, "
                     f"{row.after.failed} after: the measured gain counts each as its wait "
                     f"plus a redo, as the cost does (mean time per {words.one})")
    if row.projected:
        notes.append(projected_note(row, top, words))
    if measured_gain <= 0:
        notes.append("nothing was gained: the run is not faster")
    if predicted(top) is None:
        notes.append(f"{top.id} carries no estimated cost: no predicted gain to check")
    return _gain(top, protocol, gone, notes, measured_gain, row.beyond_noise, row)


def moved_words(sample: ProtocolSample, words: TransferWords) -> str:
    """What a typical transfer of a sample moved: ``2.1 MB (bounded)`` or ``24.0 MB``."""
    return fmt_bytes(sample.bytes) + (f" (bounded: {sample.partial} of "
                                      f"{len(sample.durations_s)} {words.many} stopped "
                                      "mid-pack)" if sample.partial else "")


def projected_note(row: ProtocolComparison, top: Finding, words: TransferWords) -> str:
    """How a gain of runs that moved different amounts was measured and predicted."""
    scaled = (f"; the predicted gain is {top.id}'s cost on a {words.one} of "
              f"{fmt_bytes(row.before.bytes)} scaled to that size"
              if predicted(top) is not None else "")
    return (f"a {words.one} moved {moved_words(row.before, words)} before, "
            f"{moved_words(row.after, words)} after: compared on a whole {words.one} of "
            f"{fmt_bytes(row.projected_bytes)} projected at each {words.one}'s rate, "
            f"{fmt_s(row.before_median_s)} against {fmt_s(row.after_median_s)} "
            f"(median){scaled}")


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
    gain = gain_check(before, after, rows, words)
    return PairComparison(
        before=labels[0], after=labels[1], protocols=tuple(rows),
        only_before=tuple(name for name, (b, a) in samples.items() if b and a is None),
        only_after=tuple(name for name, (b, a) in samples.items() if a and b is None),
        culprits=tuple(changes), bursts=tuple(compare_bursts(before, after)),
        gain=gain, slower=slower,
        deciding_protocol=deciding.protocol if deciding else None,
        beyond_noise=deciding.beyond_noise if deciding else None,
        differences=tuple(differences),
        slower_top_culprit=slower_top.id if slower_top else None,
        summary=pair_summary(labels, deciding, slower_top, differences,
                             [c for c in changes if c.status == "gone"], words, gain),
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


__all__ = ["Comparison", "CulpritChange", "Difference", "GainCheck", "PairComparison",
           "ProtocolComparison", "RunSide", "TransferWords", "compare", "compare_pair"]
