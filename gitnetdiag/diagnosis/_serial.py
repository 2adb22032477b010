"""Generic, strict conversion between frozen dataclasses and JSON-able dicts.

Observations are filled by adapters written by other people, so reading them
back must fail with one clear line (an :class:`InputError` naming the field)
instead of a ``TypeError`` deep inside the engine.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar

from gitnetdiag.errors import InputError

T = TypeVar("T")

_HINT = "compare it with the fields documented in gitnetdiag/diagnosis/observations.py"


def to_jsonable(value: Any) -> Any:
    """A dataclass (or container of them) as plain dicts, lists and scalars."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    return value


def from_jsonable(cls: type[T], data: Any, *, where: str = "") -> T:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types are input errors."""
    return typing.cast(T, _convert(cls, data, where or cls.__name__))


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(tp)
        if value is None:
            if type(None) in options:
                return None
            raise _bad(where, "must not be null")
        last: InputError | None = None
        for option in options:
            if option is type(None):
                continue
            try:
                return _convert(option, value, where)
            except InputError as exc:
                last = exc
        assert last is not None
        raise last
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise _bad(where, f"must be an object, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        known = {f.name for f in dataclasses.fields(tp) if f.init}
        unknown = sorted(set(value) - known)
        if unknown:
            raise _bad(where, f"unknown field(s) {', '.join(unknown)}")
        kwargs = {key: _convert(hints[key], item, f"{where}.{key}") for key, item in value.items()}
        try:
            return tp(**kwargs)
        except TypeError as exc:
            raise _bad(where, str(exc)) from exc
        except ValueError as exc:
            raise _bad(where, str(exc)) from exc
    if origin in (tuple, list):
        args = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise _bad(where, f"must be a list, got {type(value).__name__}")
        item_type = args[0] if args else Any
        items = [_convert(item_type, item, f"{where}[{i}]") for i, item in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        key_type, item_type = typing.get_args(tp)
        if not isinstance(value, dict):
            raise _bad(where, f"must be an object, got {type(value).__name__}")
        return {
            _convert(key_type, key, f"{where} key"): _convert(item_type, item, f"{where}.{key}")
            for key, item in value.items()
        }
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            allowed = ", ".join(repr(a) for a in typing.get_args(tp))
            raise _bad(where, f"must be one of {allowed}, got {value!r}")
        return value
    if tp is Any:
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _bad(where, f"must be a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise _bad(where, f"must be an integer, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _bad(where, f"must be true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise _bad(where, f"must be a string, got {value!r}")
        return value
    raise _bad(where, f"unsupported type {tp!r}")


def _bad(where: str, what: str) -> InputError:
    return InputError(
        f"observations field {where} {what}", hint=_HINT, reference="bad-observations"
    )
