"""Observations round-trip through JSON, reject bad input clearly, and never crash the engine."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitnetdiag.diagnosis import Observations, diagnose
from gitnetdiag.diagnosis.observations import MAX_SERIES_POINTS, TimeSeries
from gitnetdiag.errors import InputError
from tests.diagnosis import examples

EXAMPLES = [examples.healthy, examples.slow_h2_edge, examples.git_daemon_backlog]


@pytest.mark.parametrize("make", EXAMPLES, ids=lambda f: f.__name__)
def test_round_trip_through_json(make: Any) -> None:
    obs = make()
    text = json.dumps(obs.to_dict())
    back = Observations.from_dict(json.loads(text))
    assert back == obs


def test_defaults_are_all_optional() -> None:
    obs = Observations.from_dict({"protocols": {"h1": {"pushes": [{"duration_s": 1, "bytes": 5}]}}})
    p = obs.protocols["h1"]
    assert p.capture is None and p.trace2 is None and p.pushes[0].ok
    assert obs.host is None and obs.bursts == ()


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"protocols": {"h3": {}}}, "unknown protocol key"),
        ({"run": {"rtt_s": "fast"}}, "observations.run.rtt_s must be a number"),
        ({"run": {"colour": 1}}, "unknown field(s) colour"),
        ({"protocols": {"h1": {"pushes": [{"bytes": 5}]}}}, "pushes[0]"),
        (
            {"protocols": {"h1": {"pushes": [{"duration_s": 1, "bytes": 1, "error_kind": "x"}]}}},
            "must be one of",
        ),
        ([], "must be an object"),
    ],
)
def test_bad_input_is_one_clear_input_error(data: Any, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        Observations.from_dict(data)
    assert fragment in info.value.message
    assert info.value.hint


def test_series_length_is_bounded() -> None:
    with pytest.raises(ValueError):
        TimeSeries(t_s=(0.0,) * (MAX_SERIES_POINTS + 1), values=(0.0,) * (MAX_SERIES_POINTS + 1))
    with pytest.raises(ValueError):
        TimeSeries(t_s=(0.0, 1.0), values=(0.0,))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every dict key path below ``value`` (the fields an adapter might leave out)."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((*prefix, key))
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


_FULL = [make().to_dict() for make in EXAMPLES]
# Required fields, and series arrays that must stay equally long (their owner may go).
_KEEP = {
    "duration_s",
    "bytes",
    "protocol",
    "concurrency",
    "ok",
    "port",
    "backlog",
    "setting",
    "value",
    "file",
    "t_s",
    "values",
    "bytes_in_flight",
    "advertised_window",
}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_engine_copes_with_any_missing_optional_field(data: st.DataObject) -> None:
    """Drop any subset of optional fields from a full run: the engine still answers."""
    base = copy.deepcopy(_FULL[data.draw(st.integers(0, len(_FULL) - 1))])
    paths = [p for p in _paths(base) if p[-1] not in _KEEP and not isinstance(p[-1], int)]
    drop = data.draw(st.lists(st.sampled_from(paths), max_size=12, unique=True)) if paths else []
    for path in sorted(drop, key=len, reverse=True):
        parent = base
        try:
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
    obs = Observations.from_dict(base)
    result = diagnose(obs)
    # Dropping every push of a protocol leaves it unmeasured: never healthy then.
    assert result.verdict in ("healthy", "degraded", "inconclusive", "failed")
    assert (result.verdict == "healthy") <= (not result.measurement_failures)
    assert all(0 <= f.score <= 1 and f.cost_s >= 0 for f in result.findings)


def test_observations_written_with_the_path_rate_in_bits_still_read() -> None:
    """Before report version 4 the path rate was ``run.path_rate_bps``, bits per second."""
    old = Observations.from_dict({"run": {"path_rate_bps": 800e6}, "protocols": {}})
    assert old.run.path_rate_bytes_per_s == 100e6
    unknown = Observations.from_dict({"run": {"path_rate_bps": None}})
    assert unknown.run.path_rate_bytes_per_s is None
    with pytest.raises(InputError, match="path_rate_bytes_per_s must be a number, got 'fast'"):
        Observations.from_dict({"run": {"path_rate_bps": "fast"}})
