"""Writing ``manifest.json`` atomically and reading it back, validated.

The manifest is rewritten after every probe step, so a crash or Ctrl-C leaves
a valid, partial manifest (``status`` tells which). :func:`load_run` checks
every type and keeps every artifact path inside the run directory: a run
directory may come from anyone (a ticket attachment).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gitnetdiag.errors import InputError
from gitnetdiag.inputfile import read_json_input
from gitnetdiag.outcomes import MEASURED_OUTCOMES
from gitnetdiag.rundir.files import MANIFEST_NAME
from gitnetdiag.rundir.records import SCHEMA, RunManifest
from gitnetdiag.safefile import open_new_file
from gitnetdiag.serial import Malformed, from_jsonable, to_jsonable

PROTOCOL_NAMES = ("h1", "h2", "ssh", "git")

BAD_RUN_DIR = "bad-run-dir"
"""Reference of every error about a damaged or crafted run directory."""


def bad_run_dir(message: str) -> InputError:
    """The one error for a run directory whose content cannot be trusted."""
    return InputError(
        message, reference=BAD_RUN_DIR,
        hint="the run directory is damaged or was not written by gitnetdiag probe; "
        "run the probe again or ask for the original directory",
    )


def write_json_atomically(path: Path, value: Any, *, indent: int = 2) -> Path:
    """Write ``value`` (dataclasses allowed) as JSON via a temporary file and a rename.

    The temporary file is created with ``O_EXCL | O_NOFOLLOW``: anything already
    at its name (a symlink planted in the run directory) is a UsageError
    (``unsafe-file``), never a file written through. The rename replaces a
    symlink at ``path`` itself, not its target.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    data = (json.dumps(to_jsonable(value), indent=indent) + "\n").encode()
    fd = open_new_file(tmp, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_manifest(run_dir: Path, manifest: RunManifest) -> Path:
    """Write ``manifest.json`` atomically."""
    return write_json_atomically(run_dir / MANIFEST_NAME, manifest)


def inside(run_dir: Path, relative: str, where: str) -> Path:
    """``run_dir / relative`` when it stays in the run directory, else ``ValueError``.

    A crafted manifest must not make analyze or report read (or attach) /etc/passwd.
    """
    path = Path(relative)
    if path.is_absolute() or not relative:
        raise Malformed(f"{where} {relative!r} is not a path inside the run directory")
    try:
        root = run_dir.resolve()
        target = (root / path).resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11 says "Symlink loop" with RuntimeError
        raise Malformed(f"{where} {relative!r} is a symlink loop") from exc
    if not target.is_relative_to(root):
        raise Malformed(f"{where} {relative!r} points outside the run directory")
    return run_dir / path


MAX_NUMBER = 2**53
"""The largest number a run directory may hold (bytes, seconds, counts, rates): the largest
integer JSON keeps exact, 9 PB or 285 million years; nothing a probe records comes near."""


def _shown(value: float) -> str:
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"


def check_numbers(value: Any, where: str, *, negative: bool = False) -> None:
    """Every number in the records (durations, sizes, counts, rates) is finite, at most
    :data:`MAX_NUMBER` in size, and >= 0 unless ``negative`` (flow-control credit may go
    below zero); ``Malformed`` naming the field otherwise. Free-form ``dict`` values
    (``options``) are not records: skipped."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        # An int is finite (and one of 400 digits is no float: never math.isfinite).
        if (isinstance(value, float) and not math.isfinite(value)) or (value < 0
                                                                      and not negative):
            what = "a finite number" if negative else "a finite number >= 0"
            raise Malformed(f"{where} must be {what}, got {_shown(value)}")
        if abs(value) > MAX_NUMBER:
            raise Malformed(f"{where} must be at most {MAX_NUMBER}, got {_shown(value)}")
        return
    if isinstance(value, tuple | list):
        for index, item in enumerate(value):
            check_numbers(item, f"{where}[{index}]", negative=negative)
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            check_numbers(getattr(value, f.name), f"{where}.{f.name}", negative=negative)


def _check_pushes(manifest: RunManifest) -> None:
    for index, run in enumerate(manifest.protocols):
        for number, push in enumerate(run.pushes):
            if push.outcome not in MEASURED_OUTCOMES:  # a rate: wall time and size above 0
                continue
            where = f"manifest.protocols[{index}].pushes[{number}]"
            for name in ("wall_s", "pack_bytes"):
                if getattr(push, name) <= 0:
                    raise Malformed(f"{where}.{name} must be above 0 for a push with outcome "
                                    f"{push.outcome!r}, got {getattr(push, name)!r}")


def check_names(names: Iterable[str], endpoint: str, where: str) -> None:
    """Raise ``Malformed`` for a protocol gitnetdiag does not know among ``names`` (a run's,
    its transfers', its burst's) or an ``endpoint`` that is not ``host:port``."""
    unknown = sorted(set(names) - set(PROTOCOL_NAMES))
    if unknown:
        raise Malformed(f"{where} has unknown protocol {unknown[0]!r} "
                        f"(one of {', '.join(PROTOCOL_NAMES)})")
    host, _, port = endpoint.rpartition(":")
    if not host or not port.isdigit():
        raise Malformed(f"{where}.endpoint {endpoint!r} is not host:port")


def check_values(run_dir: Path, manifest: RunManifest) -> None:
    """Raise ``ValueError`` for values the types allow but the run cannot have: an
    unknown protocol, an endpoint without a port, an artifact path leaving ``run_dir``,
    a number that is negative, NaN or infinite, a measured push of 0 s or 0 bytes."""
    check_numbers(manifest, "manifest")
    _check_pushes(manifest)
    for index, run in enumerate(manifest.protocols):
        names = [run.protocol, *(push.protocol for push in run.pushes)]
        if run.burst is not None:
            names.append(run.burst.protocol)
        check_names(names, run.endpoint, f"manifest.protocols[{index}]")
    for run in manifest.protocols:
        for push in run.pushes:
            where = f"protocols.{run.protocol}.pushes[{push.repeat}]"
            if push.capture is not None:
                inside(run_dir, push.capture.path, f"{where}.capture.path")
            for kind, relative in push.artifacts.items():
                inside(run_dir, relative, f"{where}.artifacts.{kind}")
        if run.burst is not None and run.burst.capture is not None:
            inside(run_dir, run.burst.capture, f"protocols.{run.protocol}.burst.capture")


def manifest_from_dict(data: Any) -> RunManifest:
    """A :class:`RunManifest` from parsed JSON (``ValueError`` naming the field); keys a
    newer gitnetdiag added are ignored."""
    return from_jsonable(RunManifest, data, where="manifest", unknown="ignore")


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON object file of the run directory, ``None`` when absent (``bad-run-dir`` when
    unreadable, not JSON, or not an object)."""
    try:
        data = read_json_input(path, error=bad_run_dir)
    except FileNotFoundError:
        return None
    if not isinstance(data, dict):
        raise bad_run_dir(f"{path} must hold a JSON object, got {type(data).__name__}")
    return data


def load_run(path: Path | str) -> RunManifest:
    """Read and validate a run directory's manifest (``path``: the directory or the manifest).

    Types are checked field by field and artifact paths must stay inside the
    directory; anything else is an :class:`InputError` (``bad-run-dir``).
    """
    path = Path(path)
    manifest_path = path / MANIFEST_NAME if path.is_dir() else path
    try:
        data = read_json_input(manifest_path, error=bad_run_dir)
    except FileNotFoundError as exc:
        raise InputError(
            f"{manifest_path} does not exist",
            hint="give a run directory written by 'gitnetdiag probe'",
            reference="no-manifest",
        ) from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else None
        raise bad_run_dir(f"{manifest_path} has schema {found!r}, expected {SCHEMA!r}")
    try:
        manifest = manifest_from_dict(data)
        check_values(manifest_path.parent, manifest)
    except ValueError as exc:
        raise bad_run_dir(f"{manifest_path}: {exc}") from exc
    return manifest
