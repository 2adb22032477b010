"""The pure diagnosis engine: :class:`Observations` in, ranked :class:`Diagnosis` out.

    from gitnetdiag.diagnosis import Observations, diagnose
    result = diagnose(Observations.from_dict(data))

No I/O here: adapters build the observations, renderers in
:mod:`gitnetdiag.report` turn the diagnosis into text.
"""

from gitnetdiag.diagnosis.culprits import CULPRITS, Culprit
from gitnetdiag.diagnosis.engine import MIN_IMPACT_S, MIN_SCORE, diagnose, rank
from gitnetdiag.diagnosis.model import Diagnosis, Environment, Evidence, Finding, ProtocolSummary
from gitnetdiag.diagnosis.observations import Observations

__all__ = [
    "CULPRITS",
    "MIN_IMPACT_S",
    "MIN_SCORE",
    "Culprit",
    "Diagnosis",
    "Environment",
    "Evidence",
    "Finding",
    "Observations",
    "ProtocolSummary",
    "diagnose",
    "rank",
]
