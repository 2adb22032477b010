"""The run directory: ``manifest.json`` plus the artifacts of every probe step.

Layout and fields are documented in ``docs/run-directory.md``. The manifest is
rewritten atomically after every step, so a crash or Ctrl-C leaves a valid,
partial manifest (``status`` tells which). :func:`load_run` reads it back into
frozen dataclasses for ``gitnetdiag analyze``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import types
import typing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gitnetdiag.errors import InputError
from gitnetdiag.probe.burst import BurstResult
from gitnetdiag.probe.capture import CaptureResult
from gitnetdiag.probe.pathinfo import PathMeasurement
from gitnetdiag.probe.trace2 import Trace2Phases
from gitnetdiag.probe.versions import ToolVersions
from gitnetdiag.redaction import redact_url
from gitnetdiag.safefile import open_new_file

__all__ = ["MANIFEST_NAME", "SCHEMA", "load_run", "redact_url", "write_manifest"]

SCHEMA = "gitnetdiag.run/1"
MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True, kw_only=True)
class RunError:
    """An error met during the run; the run goes on where it can."""

    stage: str
    """``setup``, ``path``, ``push``, ``cleanup``, ``burst`` or ``capture``."""
    protocol: str | None
    """Protocol concerned, None for the whole run."""
    reference: str
    """Stable kebab-case reference of the error (as in gitnetdiag.errors)."""
    kind: str | None
    """Failure kind of a git run (``refused``, ``tls``, ``auth``, ...), when one."""
    message: str
    """One line, URLs redacted."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class RepoInfo:
    """The repository pushed."""

    generated: bool
    """True for a generated repository of random data."""
    seed: int | None
    """Seed of the generated data (same seed and size give the same commit)."""
    size_bytes: int | None
    """Bytes of generated data; None for a given repository."""
    head_oid: str
    """Commit pushed."""
    pack_bytes: int
    """Size of the pack a push of a new branch at ``head_oid`` sends."""
    source_oid: str | None = None
    """For ``--repo``: the repository's HEAD whose tree, every blob salted, became
    ``head_oid`` (new objects, same sizes and compressibility); None when generated."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class PushRecord:
    """One push of the throwaway branch and its clean-up."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    repeat: int
    """1-based repeat number."""
    branch: str
    """Throwaway branch pushed (``gitnetdiag/probe-<id>``)."""
    started_at: str
    """ISO 8601 UTC start time."""
    outcome: str
    """``ok``, ``bounded`` (stopped mid-pack at a stable rate or its time budget: rate from
    the bytes moved, nothing created), ``stalled`` (no progress for the stall timeout),
    ``hung`` (killed at the timeout), ``failed``, ``interrupted`` (Ctrl-C or
    SIGTERM), or ``no-data`` (git succeeded but sent far less than the planned pack: the
    server had the objects; no rate)."""
    failure_kind: str | None
    """Failure kind when not ok (see FailureKind)."""
    last_line: str
    """git's last stderr line (empty when ok)."""
    wall_s: float
    """Wall time of the git push."""
    pack_bytes: int
    """Bytes of the pack pushed."""
    rate_bytes_per_s: float | None
    """pack_bytes / wall_s for a push with outcome ``ok`` (never for ``no-data``); for
    ``bounded`` the rate of the bytes moved (slow start excluded)."""
    http_version: str | None
    """Negotiated HTTP version of the receive-pack POST (``HTTP/2``, ``HTTP/1.1``)."""
    alpn: str | None
    """ALPN protocol libcurl reported."""
    post_s: float | None
    """receive-pack POST: request header sent to response status (curl trace)."""
    curl_last_info: str | None
    """Last ``== Info:`` line of the curl trace: where a hung push stopped."""
    phases: Trace2Phases | None
    """Phases from trace2."""
    capture: CaptureResult | None
    """Packet capture, when captured (path relative to the run directory)."""
    artifacts: dict[str, str] = field(default_factory=dict)
    """Artifact kind (``capture``, ``capture_decrypted``, ``trace2``, ``curl_trace``,
    ``stderr``, ``keylog``, ``cleanup_stderr``) -> path relative to the run directory."""
    cleanup: str = "not-run"
    """What became of the branch: ``deleted`` (deleted under a lease on the pushed object,
    verified gone), ``never-created`` (verified absent, and the push can no longer create
    it), ``leftover`` (still on the server: ``cleanup_command`` removes it), ``unconfirmed``
    (absent when the wait ran out, but an unanswered push may still land), ``not-run``."""
    cleanup_detail: str = ""
    """Why, for anything but a plain ``deleted``/``never-created`` (URLs redacted)."""
    cleanup_s: float | None = None
    """Time the clean-up took: waiting for the server, deleting, verifying."""
    cleanup_command: str | None = None
    """For ``leftover``/``unconfirmed``: the exact command that removes the branch
    (URL redacted)."""
    pack_objects: int | None = None
    """Objects git said it sent (``Total N``); None when the pack was not finished."""
    pack_written_bytes: int | None = None
    """Pack bytes git said it wrote (``Writing objects: ..., X MiB``, rounded by git)."""
    moved_bytes: int | None = None
    """Bytes the push moved as the monitor saw them (the kernel's ``bytes_acked`` of git's
    sockets, else git's progress); None for runs without the monitor."""
    measured_s: float | None = None
    """Seconds from the first byte moved to the end (what a bounded rate is measured over)."""
    last_progress: str | None = None
    """git's last progress line (where a stalled push stopped)."""
    stopped: str | None = None
    """Why the monitor ended the push: ``stable`` (rate stable), ``budget`` (time budget
    spent), ``stall`` (no progress); None when git ended by itself."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class ProtocolRun:
    """Everything done over one protocol."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    url: str
    """Remote URL, redacted."""
    endpoint: str
    """``host:port`` the pushes connect to (key into ``RunManifest.paths``)."""
    pushes: tuple[PushRecord, ...] = ()
    """Pushes in order."""
    burst: BurstResult | None = None
    """The burst, when ``--burst`` was given."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class RunManifest:
    """``manifest.json`` of a run directory."""

    schema: str
    """Always :data:`SCHEMA` for this layout."""
    tool_version: str
    """gitnetdiag version that wrote it."""
    run_id: str
    """Random id of the run (also in the branch names)."""
    started_at: str
    """ISO 8601 UTC."""
    finished_at: str | None
    """ISO 8601 UTC, None while running or after a crash."""
    status: str
    """``running``, ``complete``, ``stalled`` (a push hung: an error ``push-stalled`` names
    it), ``failed`` (some step failed) or ``interrupted``."""
    options: dict[str, Any]
    """Options of the run (URLs redacted)."""
    environment: ToolVersions | None
    """Versions of git, libcurl, nghttp2, OpenSSH, ..."""
    repo: RepoInfo | None
    """Repository pushed."""
    capture_enabled: bool
    """Whether pushes were captured."""
    protocols: tuple[ProtocolRun, ...]
    """One entry per protocol probed, in order."""
    paths: tuple[PathMeasurement, ...]
    """Path measurements, one per endpoint."""
    errors: tuple[RunError, ...]
    """Errors met (the run went on where it could)."""
    warnings: tuple[str, ...]
    """Warnings (e.g. captures off because not root)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def protocol(self, name: str) -> ProtocolRun | None:
        return next((p for p in self.protocols if p.protocol == name), None)


def write_manifest(run_dir: Path, manifest: RunManifest) -> Path:
    """Write ``manifest.json`` atomically (temporary file + rename).

    The temporary file is created with ``O_EXCL | O_NOFOLLOW``: anything already
    at its name (a symlink planted in the run directory) is a UsageError
    (``unsafe-file``), never a file written through. The rename replaces a
    symlink at ``manifest.json`` itself, not its target.
    """
    path = run_dir / MANIFEST_NAME
    tmp = run_dir / f".{MANIFEST_NAME}.tmp"
    data = (json.dumps(manifest.to_dict(), indent=2, sort_keys=False) + "\n").encode()
    fd = open_new_file(tmp, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


class _Malformed(ValueError):
    """A manifest value of the wrong type; the message names the field."""


def _build(tp: Any, value: Any, where: str) -> Any:
    """Build ``tp`` from parsed JSON, checking every type; unknown keys are ignored
    (a newer gitnetdiag may add fields), missing ones fail in the constructor."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        if value is None:
            return None
        options = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        return _build(options[0], value, where)
    if value is None:
        raise _Malformed(f"{where} must not be null")
    if origin is tuple:
        if not isinstance(value, list):
            raise _Malformed(f"{where} must be a list, got {type(value).__name__}")
        (item_type, *_rest) = typing.get_args(tp)
        return tuple(_build(item_type, item, f"{where}[{i}]") for i, item in enumerate(value))
    if origin is dict or tp is dict:
        if not isinstance(value, dict):
            raise _Malformed(f"{where} must be an object, got {type(value).__name__}")
        args = typing.get_args(tp)
        if args and args[1] is str and not all(isinstance(v, str) for v in value.values()):
            raise _Malformed(f"{where} values must be strings")
        return dict(value)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise _Malformed(f"{where} must be an object, got {type(value).__name__}")
        hints = typing.get_type_hints(tp)
        kwargs = {
            f.name: _build(hints[f.name], value[f.name], f"{where}.{f.name}")
            for f in dataclasses.fields(tp)
            if f.name in value
        }
        try:
            return tp(**kwargs)
        except TypeError as exc:
            raise _Malformed(f"{where}: {exc}") from exc
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Malformed(f"{where} must be a number, got {value!r}")
        return float(value)
    if tp is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise _Malformed(f"{where} must be an integer, got {value!r}")
    if tp in (str, bool) and not isinstance(value, tp):
        raise _Malformed(f"{where} must be {'a string' if tp is str else 'true or false'}, "
                         f"got {value!r}")
    return value


def _inside(run_dir: Path, relative: str, where: str) -> None:
    """Artifact paths are relative and stay in the run directory: a crafted manifest
    must not make analyze or report read (or attach) /etc/passwd."""
    path = Path(relative)
    if path.is_absolute() or not relative:
        raise _Malformed(f"{where} {relative!r} is not a path inside the run directory")
    root = run_dir.resolve()
    if not (root / path).resolve().is_relative_to(root):
        raise _Malformed(f"{where} {relative!r} points outside the run directory")


PROTOCOL_NAMES = ("h1", "h2", "ssh", "git")


def check_values(run_dir: Path, manifest: RunManifest) -> None:
    """Raise ``ValueError`` for values the types allow but the run cannot have: an
    unknown protocol, an endpoint without a port, an artifact path leaving ``run_dir``."""
    for index, run in enumerate(manifest.protocols):
        where = f"manifest.protocols[{index}]"
        names = [run.protocol, *(push.protocol for push in run.pushes)]
        if run.burst is not None:
            names.append(run.burst.protocol)
        unknown = sorted(set(names) - set(PROTOCOL_NAMES))
        if unknown:
            raise _Malformed(f"{where} has unknown protocol {unknown[0]!r} "
                             f"(one of {', '.join(PROTOCOL_NAMES)})")
        host, _, port = run.endpoint.rpartition(":")
        if not host or not port.isdigit():
            raise _Malformed(f"{where}.endpoint {run.endpoint!r} is not host:port")
    for run in manifest.protocols:
        for push in run.pushes:
            where = f"protocols.{run.protocol}.pushes[{push.repeat}]"
            if push.capture is not None:
                _inside(run_dir, push.capture.path, f"{where}.capture.path")
            for kind, relative in push.artifacts.items():
                _inside(run_dir, relative, f"{where}.artifacts.{kind}")
        if run.burst is not None and run.burst.capture is not None:
            _inside(run_dir, run.burst.capture, f"protocols.{run.protocol}.burst.capture")


def manifest_from_dict(data: dict[str, Any]) -> RunManifest:
    """Build a :class:`RunManifest` from parsed JSON (raises ``ValueError`` naming the field)."""
    manifest = _build(RunManifest, data, "manifest")
    assert isinstance(manifest, RunManifest)
    return manifest


BAD_RUN_DIR = "bad-run-dir"
"""Reference of every error about a damaged or crafted run directory."""


def bad_run_dir(message: str) -> InputError:
    """The one error for a run directory whose content cannot be trusted."""
    return InputError(
        message, reference=BAD_RUN_DIR,
        hint="the run directory is damaged or was not written by gitnetdiag probe; "
        "run the probe again or ask for the original directory",
    )


def load_run(path: Path | str) -> RunManifest:
    """Read and validate a run directory's manifest (``path``: the directory or the manifest).

    Types are checked field by field and artifact paths must stay inside the
    directory; anything else is an :class:`InputError` (``bad-run-dir``).
    """
    path = Path(path)
    manifest_path = path / MANIFEST_NAME if path.is_dir() else path
    try:
        data = json.loads(manifest_path.read_text())
    except FileNotFoundError as exc:
        raise InputError(
            f"{manifest_path} does not exist",
            hint="give a run directory written by 'gitnetdiag probe'",
            reference="no-manifest",
        ) from exc
    except OSError as exc:
        raise bad_run_dir(f"cannot read {manifest_path}: {exc.strerror}") from exc
    except ValueError as exc:
        raise bad_run_dir(f"{manifest_path} is not JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else None
        raise bad_run_dir(f"{manifest_path} has schema {found!r}, expected {SCHEMA!r}")
    try:
        manifest = manifest_from_dict(data)
        check_values(manifest_path.parent, manifest)
    except ValueError as exc:
        raise bad_run_dir(f"{manifest_path}: {exc}") from exc
    return manifest
