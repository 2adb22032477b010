"""The records of a comparison of runs (:mod:`gitnetdiag.diagnosis.comparison` builds them,
:mod:`gitnetdiag.diagnosis.comparetext` words them, the renderers format them). Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gitnetdiag.diagnosis.burstgain import BurstComparison
from gitnetdiag.diagnosis.likeforlike import Basis, ProtocolSample
from gitnetdiag.diagnosis.model import Diagnosis, Direction, Unit, Verdict
from gitnetdiag.serial import to_jsonable


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
    """Median compared time after minus before (negative: faster)."""
    speedup: float | None
    """Median compared time before over after (above 1: the other run is faster); when
    ``projected``, the ratio of the median rates' inverses."""
    noise_test: NoiseTest
    """How the change was tested against the noise."""
    p_value: float | None
    """Welch's t-test p-value on the compared times, when run."""
    beyond_noise: bool | None
    """The change is larger than the repeats' noise; ``None`` when not tested."""
    basis: Basis = "duration"
    """What was compared: each transfer's measured ``duration`` (the runs moved the same
    amount), or each transfer ``projected`` to :attr:`projected_bytes` at its own rate (a
    clone bounded mid-pack on either side, or transfers of different sizes)."""
    projected_bytes: float | None = None
    """The size every transfer was projected to (``projected``), else ``None``."""
    projected_origin: str | None = None
    """Whose whole transfer that size is: ``before``, ``after``, or ``larger-moved``
    (neither run's transfers were whole: the larger amount moved)."""
    before_s: tuple[float, ...] = ()
    """The baseline's compared times: its durations, or its transfers projected."""
    after_s: tuple[float, ...] = ()
    """The other run's compared times."""
    before_median_s: float | None = None
    """Median of :attr:`before_s`."""
    after_median_s: float | None = None
    """Median of :attr:`after_s`."""

    @property
    def projected(self) -> bool:
        """The runs moved different amounts: the times are projected to one size."""
        return self.basis == "projected"


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
    """Median push duration before minus after on that protocol (``projected``: the
    projected medians); when pushes failed or hung on either side, the mean time per push
    with each failure as its wait plus a redo (:func:`~gitnetdiag.diagnosis.likeforlike.
    expected_s`), the way the culprits' costs count them. A burst culprit: the seconds a
    burst connection lost before minus after (:func:`burst_loss_s`)."""
    error_share: float | None
    """(predicted - measured) / measured; ``None`` without a positive measured gain."""
    culprit_gone: bool
    """The culprit no longer ranks in the other run."""
    beyond_noise: bool | None
    """The measured gain is beyond the noise (``None``: too few repeats)."""
    note: str = ""
    """Why a number is missing."""
    basis: Basis = "duration"
    """What the gains are on: the measured durations, or (``projected``: the runs moved
    different amounts) a whole transfer of :attr:`projected_bytes` at each run's rates;
    then ``predicted_gain_s`` is the cost scaled to that size and ``measured_gain_s`` the
    projected medians' difference."""
    projected_bytes: float | None = None
    """The size of the projected transfer, else ``None``."""
    priced_cost_s: float | None = None
    """The culprit's ``cost_s`` as the diagnosis priced it, on its typical transfer."""
    priced_bytes: float | None = None
    """Bytes of the baseline's typical transfer, the one the cost was priced on."""


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
