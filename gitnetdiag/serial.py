"""The one strict conversion between frozen dataclasses and JSON values.

Run directories, observations and reports cross the seam as JSON; reading
them back must fail with one line naming the field and the value found
(``manifest.protocols[0].pushes[0].wall_s must be a number, got 'fast'``),
never with a ``TypeError`` deep inside the engine. That message (field *and*
value) is why this is not msgspec: its errors name the path but not the value.

    to_jsonable(value)                      dataclass -> dicts, lists, scalars
    from_jsonable(cls, data, where=..., unknown=..., error=...)
                                            JSON -> cls, every type checked
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar

T = TypeVar("T")


class Malformed(ValueError):
    """A value of the wrong type; the message names the field and the value."""


def to_jsonable(value: Any) -> Any:
    """A dataclass (or a container of them) as plain dicts, lists and scalars, in field order.

    numpy arrays and scalars become lists and numbers, enums their values.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, enum.Enum):
        return value.value
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars, without importing numpy
    if callable(tolist) and type(value).__module__ == "numpy":
        return tolist()
    return value


def from_jsonable(cls: type[T], data: Any, *, where: str,
                  unknown: Literal["ignore", "reject"] = "reject",
                  error: Callable[[str], Exception] = Malformed) -> T:
    """Build ``cls`` from parsed JSON, checking every type.

    ``unknown="ignore"`` skips keys a newer gitnetdiag may have added (run
    directories); ``"reject"`` names them (observations written by adapters).
    ``error`` makes the exception from the message ``"<where> <what>"``.
    """
    try:
        return typing.cast(T, _convert(cls, data, where, unknown == "ignore"))
    except Malformed as exc:
        if error is Malformed:
            raise
        raise error(str(exc)) from exc


def _union(tp: Any, value: Any, where: str, ignore: bool) -> Any:
    options = typing.get_args(tp)
    if value is None:
        if type(None) in options:
            return None
        raise Malformed(f"{where} must not be null")
    last: Malformed | None = None
    for option in options:
        if option is type(None):
            continue
        try:
            return _convert(option, value, where, ignore)
        except Malformed as exc:
            last = exc
    assert last is not None
    raise last


def _dataclass(tp: Any, value: Any, where: str, ignore: bool) -> Any:
    if not isinstance(value, dict):
        raise Malformed(f"{where} must be an object, got {type(value).__name__}")
    hints = typing.get_type_hints(tp)
    known = {f.name for f in dataclasses.fields(tp) if f.init}
    extra = sorted(set(value) - known)
    if extra and not ignore:
        raise Malformed(f"{where} unknown field(s) {', '.join(extra)}")
    required = [f.name for f in dataclasses.fields(tp) if f.init
                and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [name for name in required if name not in value]
    if missing:
        raise Malformed(f"{where} is missing field(s) {', '.join(missing)}")
    kwargs = {key: _convert(hints[key], item, f"{where}.{key}", ignore)
              for key, item in value.items() if key in known}
    try:
        return tp(**kwargs)
    except (TypeError, ValueError) as exc:
        raise Malformed(f"{where}: {exc}") from exc


_SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    float: ((int, float), "a number"),
    int: ((int,), "an integer"),
    bool: ((bool,), "true or false"),
    str: ((str,), "a string"),
}


def _convert(tp: Any, value: Any, where: str, ignore: bool) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _union(tp, value, where, ignore)
    if tp is Any:
        return value
    if value is None:
        raise Malformed(f"{where} must not be null")
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass(tp, value, where, ignore)
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise Malformed(f"{where} must be a list, got {type(value).__name__}")
        args = typing.get_args(tp)
        if origin is tuple and len(args) > 1 and args[1] is not Ellipsis:
            if len(value) != len(args):
                raise Malformed(f"{where} must have {len(args)} items, got {len(value)}")
            return tuple(_convert(arg, item, f"{where}[{i}]", ignore)
                         for i, (arg, item) in enumerate(zip(args, value, strict=True)))
        item_type = args[0] if args else Any
        items = [_convert(item_type, item, f"{where}[{i}]", ignore) for i, item in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise Malformed(f"{where} must be an object, got {type(value).__name__}")
        key_type, item_type = typing.get_args(tp) or (str, Any)
        return {_convert(key_type, key, f"{where} key", ignore):
                _convert(item_type, item, f"{where}.{key}", ignore)
                for key, item in value.items()}
    if origin is Literal:
        if value not in typing.get_args(tp):
            allowed = ", ".join(repr(a) for a in typing.get_args(tp))
            raise Malformed(f"{where} must be one of {allowed}, got {value!r}")
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError as exc:
            raise Malformed(f"{where} must be one of "
                            f"{', '.join(repr(m.value) for m in tp)}, got {value!r}") from exc
    if tp in _SCALARS:
        kinds, what = _SCALARS[tp]
        if tp is int and isinstance(value, float) and value.is_integer():
            return int(value)
        if (isinstance(value, bool) and tp is not bool) or not isinstance(value, kinds):
            raise Malformed(f"{where} must be {what}, got {value!r}")
        return float(typing.cast(float, value)) if tp is float else value
    raise Malformed(f"{where} has an unsupported type {tp!r}")
