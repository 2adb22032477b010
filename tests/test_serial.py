"""The one dataclass<->JSON converter: round trips, and errors that name field and value."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np
import pytest

from gitnetdiag.errors import InputError
from gitnetdiag.serial import Malformed, from_jsonable, to_jsonable


class Scope(enum.StrEnum):
    STREAM = "stream"
    CONNECTION = "connection"


@dataclass(frozen=True, kw_only=True)
class Point:
    t_ns: int
    credit_bytes: float


@dataclass(frozen=True, kw_only=True)
class Record:
    scope: Scope
    points: tuple[Point, ...] = ()
    settings: dict[str, int] = field(default_factory=dict)
    pair: tuple[str, int] | None = None


def test_round_trip_in_field_order() -> None:
    record = Record(scope=Scope.STREAM, points=(Point(t_ns=1, credit_bytes=2.5),),
                    settings={"MAX_FRAME_SIZE": 16_384}, pair=("a", 1))
    data = to_jsonable(record)
    assert list(data) == ["scope", "points", "settings", "pair"]
    assert data["scope"] == "stream" and data["pair"] == ["a", 1]
    assert from_jsonable(Record, data, where="r") == record


def test_numpy_values_become_plain_json() -> None:
    assert to_jsonable({"a": np.arange(3), "b": np.float64(1.5)}) == {"a": [0, 1, 2], "b": 1.5}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"scope": "both"}, "r.scope must be one of 'stream', 'connection', got 'both'"),
        ({"scope": "stream", "points": [{"t_ns": "1", "credit_bytes": 0}]},
         "r.points[0].t_ns must be an integer, got '1'"),
        ({"scope": "stream", "points": [{"t_ns": 1, "credit_bytes": True}]},
         "r.points[0].credit_bytes must be a number, got True"),
        ({"scope": "stream", "pair": ["a"]}, "r.pair must have 2 items, got 1"),
        ({"scope": "stream", "settings": []}, "r.settings must be an object, got list"),
        ({"scope": "stream", "colour": 1}, "r unknown field(s) colour"),
    ],
)
def test_a_wrong_value_names_the_field_and_the_value(data: object, message: str) -> None:
    with pytest.raises(Malformed) as info:
        from_jsonable(Record, data, where="r")
    assert str(info.value) == message


def test_unknown_keys_may_be_ignored_and_errors_mapped() -> None:
    assert from_jsonable(Record, {"scope": "stream", "new": 1}, where="r",
                         unknown="ignore") == Record(scope=Scope.STREAM)
    with pytest.raises(InputError, match=r"^r\.scope must not be null$"):
        from_jsonable(Record, {"scope": None}, where="r",
                      error=lambda message: InputError(message))
