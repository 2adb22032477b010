"""A compared pair in one sentence: which run is slower (or faster), by how much, and why.

Pure: it reads the pair's numbers (:mod:`gitnetdiag.diagnosis.comparison`) and returns
the summary every format shows first.

Runs that moved the same amount: "A is slower than B on HTTP/2: 29 s against 3.2 s a push
(x8.9, beyond the noise, Welch p = 0.0004); ...", then why (RTT, path rate, the slower
run's top culprit, the culprits gone). Runs that moved different amounts (a clone bounded
mid-pack, two sizes) answer the question of a fix first, on the projected whole
transfer: "B is faster than A on HTTP/1.1: x15 a whole clone of 24.0 MB projected at each
run's rate (36.0 s against 2.4 s; 667 kB/s against 10.0 MB/s), beyond the noise (Welch
p = 0.003); A's top culprit client-tcp-receive-window-clamp predicted 31.5 s of the
33.6 s gained (-6%); A's clones were bounded after 2.0 MB, B's moved 24.0 MB."
"""

from __future__ import annotations

from collections.abc import Sequence

from gitnetdiag.diagnosis.comparemodel import (
    CulpritChange,
    Difference,
    GainCheck,
    ProtocolComparison,
    TransferWords,
)
from gitnetdiag.diagnosis.likeforlike import MIN_REPEATS, ProtocolSample
from gitnetdiag.diagnosis.model import Finding
from gitnetdiag.diagnosis.units import fmt_bytes, fmt_rate, fmt_s


def same_time(row: ProtocolComparison) -> bool:
    """The two medians are equal as they are shown (``231 ms`` both): neither is slower."""
    return row.speedup == 1.0 or fmt_s(row.before_median_s) == fmt_s(row.after_median_s)


def noise_words(row: ProtocolComparison, words: TransferWords) -> str:
    """``beyond the noise, Welch p = 0.003``, or why it was not tested."""
    if row.beyond_noise is None:
        return f"fewer than {MIN_REPEATS} {words.many} a side: not tested against the noise"
    return (f"{'beyond' if row.beyond_noise else 'within'} the noise, "
            f"Welch p = {row.p_value:.2g}")


def _reasons(labels: tuple[str, str], slow: str, differences: Sequence[Difference],
             slower_top: Finding | None, gone: Sequence[CulpritChange]) -> list[str]:
    before, after = labels
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
    return reasons


def pair_summary(labels: tuple[str, str], row: ProtocolComparison | None,
                 slower_top: Finding | None, differences: Sequence[Difference],
                 gone: Sequence[CulpritChange], words: TransferWords,
                 gain: GainCheck | None = None) -> str:
    """The pair in one sentence, on its deciding protocol ``row``."""
    before, after = labels
    if row is None or row.speedup is None:
        return (f"{before} and {after} share no protocol with completed {words.many}: "
                "nothing to compare.")
    if row.projected:
        return projected_summary(labels, row, words, gain)
    if same_time(row):  # the largest change: the other protocols changed less
        return (f"{before} and {after} take the same time: no protocol's median changed as "
                f"shown ({row.label}: {fmt_s(row.before_median_s)} a {words.one} on "
                "each); neither is slower.")
    slow, fast = (before, after) if row.speedup > 1 else (after, before)
    slow_s = max(row.before_median_s or 0.0, row.after_median_s or 0.0)
    fast_s = min(row.before_median_s or 0.0, row.after_median_s or 0.0)
    factor = max(row.speedup, 1 / row.speedup)
    text = (f"{slow} is slower than {fast} on {row.label}: {fmt_s(slow_s)} against "
            f"{fmt_s(fast_s)} a {words.one} (x{factor:.1f}, {noise_words(row, words)})")
    reasons = _reasons(labels, slow, differences, slower_top, gone)
    return text + ("; " + "; ".join(reasons) if reasons else "") + "."


def _moved(label: str, sample: ProtocolSample, words: TransferWords) -> str:
    if sample.partial:
        return f"{label}'s {words.many} were bounded after {fmt_bytes(sample.bytes)}"
    return f"{label}'s moved {fmt_bytes(sample.bytes)}"


def prediction_words(before: str, gain: GainCheck | None, row: ProtocolComparison) -> str:
    """The baseline's top culprit's prediction beside the measured gain, on ``row``'s
    quantity; empty when there is none to set beside it."""
    if gain is None or gain.protocol != row.protocol:
        return ""
    if gain.predicted_gain_s is None:
        return f"{before}'s top culprit {gain.culprit_id} carries no estimated cost"
    if gain.measured_gain_s is None or gain.measured_gain_s <= 0:
        return (f"{before}'s top culprit {gain.culprit_id} predicted "
                f"{fmt_s(gain.predicted_gain_s)} gained, none was")
    return (f"{before}'s top culprit {gain.culprit_id} predicted "
            f"{fmt_s(gain.predicted_gain_s)} of the {fmt_s(gain.measured_gain_s)} gained"
            + (f" ({gain.error_share:+.0%})" if gain.error_share is not None else ""))


def projected_summary(labels: tuple[str, str], row: ProtocolComparison,
                      words: TransferWords, gain: GainCheck | None) -> str:
    """Runs that moved different amounts: the other run faster or slower than the baseline,
    by what factor on the projected whole transfer, the noise, the prediction, the sizes."""
    before, after = labels
    size = fmt_bytes(row.projected_bytes)
    whole = (f"a whole {words.one} of {size} projected at each run's rate"
             if row.projected_origin != "larger-moved"
             else f"a {words.one} of {size} (the larger amount moved, neither whole) "
                  "projected at each run's rate")
    times = (f"{fmt_s(row.before_median_s)} against {fmt_s(row.after_median_s)}; "
             f"{fmt_rate(row.before.rate_median_bytes_per_s)} against "
             f"{fmt_rate(row.after.rate_median_bytes_per_s)}")
    if same_time(row):
        head = f"{after} is as fast as {before} on {row.label}: {whole} ({times})"
    else:
        faster = (row.speedup or 1.0) > 1
        factor = max(row.speedup or 1.0, 1 / (row.speedup or 1.0))
        head = (f"{after} is {'faster' if faster else 'slower'} than {before} on "
                f"{row.label}: x{factor:.1f} {whole} ({times})")
    parts = [f"{head}, {noise_words(row, words).replace(', Welch', ' (Welch')}"
             + (")" if row.beyond_noise is not None else "")]
    if prediction := prediction_words(before, gain, row):
        parts.append(prediction)
    parts.append(f"{_moved(before, row.before, words)}, {_moved(after, row.after, words)}")
    return "; ".join(parts) + "."
