"""The failure-signature catalogue's word on each failed push or clone of a diagnosis.

For a failure the catalogue can speak of (:data:`DESCRIBED_KINDS`), what was seen is
gathered from the observations (git's line, on a clone every error line git printed; the
request the transfer ended on and its status, how the server side closed it and after what
silence) and
:meth:`~gitnetdiag.diagnosis.signatures.Catalogue.describe` turns it into the matched
entries, their candidate culprits and a sentence; the failure carries them
(``signatures``, ``candidates``, ``seen``). Nothing here changes the verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gitnetdiag.diagnosis.model import MeasurementFailure
from gitnetdiag.diagnosis.observations import (
    PROTOCOL_LABELS,
    HttpExchange,
    Observations,
    PushObservation,
)
from gitnetdiag.diagnosis.signatures import BASE, Catalogue, Description, TcpEnding
from gitnetdiag.outcomes import FailureKind

DESCRIBED_KINDS = frozenset({
    FailureKind.RESET, FailureKind.TIMEOUT, FailureKind.REFUSED, FailureKind.TLS,
    FailureKind.HTTP_STATUS, FailureKind.SERVER_ERROR, FailureKind.REJECTED,
    FailureKind.OTHER,
})
"""Failed pushes the catalogue describes: those that ended with words of the network or
the server. Auth, host keys, plain HTTP and names that do not resolve have their own
reference and hint; a push that hung or was interrupted said nothing to match."""


def _failed_push(obs: Observations, failure: MeasurementFailure
                 ) -> tuple[int, PushObservation] | None:
    """The failed push (1-based position, record) a failure speaks of: the first of its
    protocol that failed with the failure's kind, else the first that failed."""
    p = obs.protocols.get(failure.protocol or "")
    failed = [(n, push) for n, push in enumerate(p.pushes if p else (), 1) if not push.ok]
    same = [item for item in failed if item[1].error_kind == failure.kind]
    chosen = same or failed
    return chosen[0] if chosen else None


def _last_request(requests: Sequence[HttpExchange], push: int) -> HttpExchange | None:
    """The request git's push ended on, when it did not end well (git stops at the
    request that failed)."""
    mine = [r for r in requests if r.push in (push, 0)]
    if not mine:
        return None
    last = mine[-1]
    failed = (last.status is not None and last.status >= 300) or bool(last.ending) \
        or last.silence_before_close_s is not None
    return last if failed else None


def describe_failure(obs: Observations, failure: MeasurementFailure,
                     catalogue: Catalogue = BASE) -> Description | None:
    """The catalogue's description of a failed git push of a diagnosis; None for a failure
    it does not describe (see :data:`DESCRIBED_KINDS`) and in a run where git did not run
    (a bare capture: what its failures say is gitnetdiag's reading of the packets)."""
    if failure.stage not in ("push", "fetch") or failure.protocol is None or failure.kind is None \
            or FailureKind(failure.kind) not in DESCRIBED_KINDS:
        return None
    download = obs.run.transfer == "download"
    if obs.run.git_version is None and not (download and obs.run.measured_by == "fetch"):
        return None  # no git ran (a bare capture): its failure lines are not git's words
    found = _failed_push(obs, failure)
    number, push = found if found is not None else (0, None)
    git_line = (push.error_message if push is not None else "") or failure.message
    if download:  # a clone's stderr says more than its last line: every error line
        said = next((t.git_said for t in obs.transfers if t.protocol == failure.protocol
                     and t.repeat == number and t.git_said), ())
        git_line = " | ".join(said) or git_line
    p = obs.protocols.get(failure.protocol)
    request = _last_request(p.http_requests if p else (), number)
    tcp = None
    if request is not None and request.silence_before_close_s is not None:
        tcp = TcpEnding(side="server", silence_s=request.silence_before_close_s,
                        ending=catalogue.ending_in_words(request.ending))
    what = "clone" if download else "push"
    return catalogue.describe(
        operation=f"{PROTOCOL_LABELS.get(failure.protocol, failure.protocol)} {what}",
        git_line=git_line, status=request.status if request is not None else None,
        request=request.kind if request is not None else None, tcp=tcp,
        direction="download" if download else "upload")


def describe_failures(obs: Observations, failures: Sequence[MeasurementFailure],
                      catalogue: Catalogue = BASE) -> tuple[MeasurementFailure, ...]:
    """``failures`` with the catalogue's description filled in for each failed push."""
    return tuple(failure if (found := describe_failure(obs, failure, catalogue)) is None
                 else replace(failure, signatures=found.ids, candidates=found.culprits,
                              seen=found.seen) for failure in failures)
