"""The manifests of a run directory, written atomically and read back by one loader.

``manifest.json`` lists the pushes (:class:`RunManifest`), ``fetch.json`` the clones
(:class:`FetchManifest`); both are a :class:`RunRecord` with a ``direction``, and both are
read by :func:`read_manifest` with one set of checks (:func:`check_values`). A manifest is
rewritten after every probe step, so a crash or Ctrl-C leaves a valid, partial one
(``status`` tells which). Every type is checked and every artifact path kept inside the
run directory: a run directory may come from anyone (a ticket attachment).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from gitnetdiag.errors import InputError
from gitnetdiag.hops import FirstHop
from gitnetdiag.inputfile import read_json_input
from gitnetdiag.outcomes import MEASURED_OUTCOMES
from gitnetdiag.rundir.files import FETCH_FILE, MANIFEST_NAME
from gitnetdiag.rundir.ledgers import H2CreditLedger, SshCreditLedger
from gitnetdiag.rundir.records import (
    BurstRecord,
    CloneRecord,
    Direction,
    EndedBy,
    PathMeasurement,
    PushRecord,
    RepoInfo,
    RunError,
    RunStatus,
    SeedBranch,
    ToolVersions,
    TransferRecord,
)
from gitnetdiag.safefile import open_new_file, write_new_file
from gitnetdiag.serial import Malformed, from_jsonable, to_jsonable

SCHEMA = "gitnetdiag.run/1"
"""Schema of ``manifest.json``."""
FETCH_SCHEMA = "gitnetdiag.fetch/1"
"""Schema of ``fetch.json``."""


@dataclass(frozen=True, kw_only=True)
class ProtocolTransfers:
    """Every transfer over one protocol, and its burst."""

    transfers_field: ClassVar[str] = "transfers"
    """The transfers' key in the file (``pushes``, ``fetches``)."""

    protocol: str
    """``h1``, ``h2``, ``ssh`` or ``git``."""
    url: str
    """Remote URL, redacted."""
    endpoint: str
    """``host:port`` the transfers connect to (key into ``RunRecord.paths``)."""
    first_hop: FirstHop | None = None
    """Where its connections go first (a forward proxy, or direct), as git resolves it;
    None in run directories written before it was recorded."""
    burst: BurstRecord | None = None
    """``--burst N``: N ls-remotes at once then N raw connects, after the transfers; None
    without ``--burst`` (and in fetch.json files written before it was added)."""

    @property
    def transfers(self) -> tuple[TransferRecord, ...]:
        """The transfers in order, whichever way they went."""
        records: tuple[TransferRecord, ...] = getattr(self, self.transfers_field)
        return records


@dataclass(frozen=True, kw_only=True)
class ProtocolRun(ProtocolTransfers):
    """Every push over one protocol."""

    transfers_field: ClassVar[str] = "pushes"
    pushes: tuple[PushRecord, ...] = ()
    """Pushes in order."""


@dataclass(frozen=True, kw_only=True)
class CloneProtocolRun(ProtocolTransfers):
    """Every clone over one protocol."""

    transfers_field: ClassVar[str] = "fetches"
    fetches: tuple[CloneRecord, ...] = ()
    """Clones in order."""


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """What every manifest holds, whichever way its transfers went."""

    file: ClassVar[str]
    """Its file in the run directory."""
    schema_id: ClassVar[str]
    """Its schema."""
    label: ClassVar[str]
    """What its fields are called in messages (``manifest.protocols[0]...``)."""

    schema: str
    """Always the class's :attr:`schema_id`."""
    direction: Direction
    """Which way the transfers moved the pack."""
    tool_version: str
    """gitnetdiag version that wrote it."""
    run_id: str
    """Random id of the run (also in the branch names)."""
    started_at: str
    """ISO 8601 UTC."""
    finished_at: str | None
    """ISO 8601 UTC, None while running or after a crash."""
    status: RunStatus
    """Where the run is (see :data:`RunStatus`)."""
    options: dict[str, Any]
    """Options of the run (URLs redacted)."""
    environment: ToolVersions | None
    """Versions of git, libcurl, nghttp2, OpenSSH, ..."""
    protocols: tuple[ProtocolTransfers, ...]
    """One entry per protocol, in order."""
    paths: tuple[PathMeasurement, ...]
    """Path measurements, one per endpoint."""
    errors: tuple[RunError, ...]
    """Errors met (the run went on where it could)."""
    warnings: tuple[str, ...]
    """Warnings (e.g. captures off because not root)."""

    def protocol(self, name: str) -> ProtocolTransfers | None:
        return next((p for p in self.protocols if p.protocol == name), None)


@dataclass(frozen=True, kw_only=True)
class RunManifest(RunRecord):
    """``manifest.json``: the pushes of a run directory."""

    file: ClassVar[str] = MANIFEST_NAME
    schema_id: ClassVar[str] = SCHEMA
    label: ClassVar[str] = "manifest"

    direction: Literal["push"] = "push"
    protocols: tuple[ProtocolRun, ...]
    repo: RepoInfo | None
    """Repository pushed."""
    capture_enabled: bool
    """Whether pushes were captured."""
    ended_by: EndedBy | None = None
    """The signal that stopped an ``interrupted`` run; None for a run that went to its end
    (and while it runs)."""


@dataclass(frozen=True, kw_only=True)
class FetchManifest(RunRecord):
    """``fetch.json``: the clones of a run directory (``probe --direction fetch``)."""

    file: ClassVar[str] = FETCH_FILE
    schema_id: ClassVar[str] = FETCH_SCHEMA
    label: ClassVar[str] = "fetch"

    direction: Literal["fetch"] = "fetch"
    protocols: tuple[CloneProtocolRun, ...]
    client_tcp_rmem: tuple[int, ...] | None = None
    """The probing host's ``net.ipv4.tcp_rmem`` (min, default, max receive buffer): the
    ceiling of the window a download can get; None when unreadable."""
    h2_downloads: tuple[H2CreditLedger, ...] = ()
    """Native HTTP/2 download ledgers, one per window, side by side (``--native`` with
    HTTP/2 among the protocols)."""
    seed: SeedBranch | None = None
    """``--fetch-seed``: the throwaway branch the clones fetched; None: they fetched what
    the URL serves and nothing was written on the server."""
    ssh_downloads: tuple[SshCreditLedger, ...] = ()
    """The native SSH download ledger (``--native`` with SSH among the protocols)."""


Manifest = TypeVar("Manifest", bound=RunRecord)
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


def write_json_once(path: Path, value: Any) -> None:
    """Write a record file that is written once (the native probes' files): anything already
    at ``path`` (a planted symlink) is refused, not written through."""
    write_new_file(path, (json.dumps(to_jsonable(value), indent=1) + "\n").encode())


def write_manifest(run_dir: Path, manifest: RunRecord) -> Path:
    """Write ``manifest.json`` or ``fetch.json`` (the manifest's own file) atomically."""
    return write_json_atomically(run_dir / manifest.file, manifest)


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
    :data:`MAX_NUMBER` in size, and >= 0 unless ``negative`` or in a field marked
    ``signed`` (flow-control credit may go below zero); ``Malformed`` naming the field
    otherwise. Free-form ``dict`` values (``options``) are not records: skipped."""
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
            check_numbers(getattr(value, f.name), f"{where}.{f.name}",
                          negative=negative or f.metadata.get("signed", False))


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


def _check_transfers(run_dir: Path, manifest: RunRecord) -> None:
    """A measured transfer took time (and a push a pack); every artifact stays inside."""
    for index, run in enumerate(manifest.protocols):
        for number, record in enumerate(run.transfers):
            where = f"{manifest.label}.protocols[{index}].{run.transfers_field}[{number}]"
            for name in record.measured_fields if record.outcome in MEASURED_OUTCOMES else ():
                if getattr(record, name) <= 0:
                    raise Malformed(f"{where}.{name} must be above 0 for a {record.noun} with "
                                    f"outcome {record.outcome!r}, got {getattr(record, name)!r}")
            where = f"protocols.{run.protocol}.{run.transfers_field}[{record.repeat}]"
            for name, relative in record.files().items():
                inside(run_dir, relative, f"{where}.{name}")
        if run.burst is not None and run.burst.capture is not None:
            inside(run_dir, run.burst.capture, f"protocols.{run.protocol}.burst.capture")


def check_values(run_dir: Path, manifest: RunRecord) -> None:
    """Raise ``Malformed`` for values the types allow but the run cannot have: an unknown
    protocol, an endpoint without a port, an artifact path leaving ``run_dir``, a number
    that is negative (flow-control credit aside), NaN, infinite or absurdly large, a
    measured transfer of 0 s (or a push of 0 bytes)."""
    where = manifest.label
    check_numbers(manifest, where)
    for index, run in enumerate(manifest.protocols):
        names = [run.protocol, *(record.protocol for record in run.transfers)]
        if run.burst is not None:
            names.append(run.burst.protocol)
        check_names(names, run.endpoint, f"{where}.protocols[{index}]")
    _check_transfers(run_dir, manifest)


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


Record = TypeVar("Record")


def read_record(cls: type[Record], data: Any, *, schema: str, where: str,
                check: Callable[[Record], None] | None = None, named: str = "",
                negative: bool = False) -> Record:
    """The one reader of a run directory's JSON records (the manifests, the native event
    files, ``native-body.json``): its schema, every type, then ``check`` (by default every
    number: :func:`check_numbers`); ``bad-run-dir`` naming the field otherwise, after
    ``named`` (the file) when given."""
    found = data.get("schema") if isinstance(data, dict) else None
    if found != schema:
        raise bad_run_dir(f"{named or where} has schema {found!r}, expected {schema!r}")
    try:
        record = from_jsonable(cls, data, where=where, unknown="ignore")
        if check is None:
            check_numbers(record, where, negative=negative)
        else:
            check(record)
    except ValueError as exc:
        raise bad_run_dir(f"{named}: {exc}" if named else str(exc)) from exc
    return record


def read_manifest(path: Path, cls: type[Manifest]) -> Manifest | None:
    """``cls``'s file at ``path`` (its file, or the run directory holding it) by
    :func:`read_record`, checked by :func:`check_values`; None when there is no such
    file."""
    path = path / cls.file if path.is_dir() else path
    try:
        data = read_json_input(path, error=bad_run_dir)
    except FileNotFoundError:
        return None
    return read_record(cls, data, schema=cls.schema_id, where=cls.label,
                       check=lambda manifest: check_values(path.parent, manifest),
                       named=str(path))


def load_run(path: Path | str) -> RunManifest:
    """A run directory's ``manifest.json`` (``path``: the directory or the file), read by
    :func:`read_manifest`; ``no-manifest`` when there is none."""
    path = Path(path)
    manifest = read_manifest(path, RunManifest)
    if manifest is None:
        raise InputError(
            f"{path / MANIFEST_NAME if path.is_dir() else path} does not exist",
            hint="give a run directory written by 'gitnetdiag probe'",
            reference="no-manifest",
        )
    return manifest


def load_fetch_manifest(run_dir: Path) -> FetchManifest | None:
    """A run directory's ``fetch.json``, read by :func:`read_manifest`; None when the run
    cloned nothing."""
    return read_manifest(run_dir, FetchManifest)
