"""The one table of hand-set signal weights, and the Tally that reads it by name."""

from __future__ import annotations

import inspect
import sys

import pytest

from gitnetdiag.diagnosis import CULPRITS
from gitnetdiag.diagnosis.culprits._common import Tally
from gitnetdiag.diagnosis.culprits.weights import WEIGHTS, weight
from gitnetdiag.diagnosis.model import Evidence

DETECTOR_MODULES: dict[str, set[str]] = {}
for _id, _module in [(c.id, c.detect.__module__) for c in CULPRITS]:
    DETECTOR_MODULES.setdefault(_id, set()).add(_module)


def test_the_table_names_registered_culprits_only() -> None:
    ids = set(DETECTOR_MODULES)
    assert set(WEIGHTS) <= ids
    # edge-backend-errors (pool.py) keeps its own scores for now; every other detector
    # reads the table (slow-ref-advertisement's download side reuses the push row's id
    # with its own two fixed scores).
    assert ids - set(WEIGHTS) <= {"edge-backend-errors"}


@pytest.mark.parametrize("culprit", sorted(WEIGHTS))
def test_every_weight_is_read_by_its_family(culprit: str) -> None:
    """A weight no detector names is a weight nobody can tune: each signal of a culprit's
    row appears, quoted, in the module of its detector (push and download alike)."""
    source = "".join(inspect.getsource(sys.modules[m]) for m in DETECTOR_MODULES[culprit])
    missing = [s for s in WEIGHTS[culprit] if f'"{s}"' not in source]
    assert missing == []


def test_tally_adds_scales_and_notes_in_order() -> None:
    first, second, third = (Evidence(what=w) for w in ("a", "b", "c"))
    tally = Tally("tcp-receive-window-clamp")
    tally.add("rwnd-limited", first)
    tally.note(second)
    tally.add("flat-in-flight")
    tally.add("no-bdp", third)
    tally.scale("autotune-maximum")
    assert tally.score == pytest.approx((0.45 + 0.2 - 0.1) * 0.5)
    assert [e.what for e in tally.evidence] == ["a", "b", "c"]


def test_an_unknown_signal_is_an_error_not_a_zero() -> None:
    with pytest.raises(KeyError):
        Tally("ssh-channel-window").add("no-such-signal")
    with pytest.raises(KeyError):
        weight("no-such-culprit", "slower")
