"""The repository a probe pushes: reproducible, quick to make, incompressible by default.

``random`` data (the default) measures the network: it neither compresses nor
deltifies, and it is packed, so a push reuses the pack and the client spends
milliseconds in pack-objects. ``text`` data is what a developer's fresh commits
look like: files of the same text with small edits, left as loose objects, so a
push runs the delta search ("Compressing objects") and deflates: the client's
CPU becomes part of the push, as it is in the field.

Other probes (the native HTTP/2 and SSH ones) use :func:`generate_repo` and
:func:`pack_for_commit` too, so that every transport sends the same bytes.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gitnetdiag.errors import ExternalCommandError, UsageError
from gitnetdiag.proc import OnTimeout, run_binary, start
from gitnetdiag.thresholds import MAX_GENERATED_BYTES

if TYPE_CHECKING:  # numpy loads where a repository is generated, not at start-up
    import numpy as np

FILE_SIZE_BYTES = 1024 * 1024
"""Size of each data file in a generated repository (the last one may be smaller)."""
TEXT_FILE_BYTES = 32 * 1024
"""Size of each file of ``text`` data (source-file sized)."""
DATA_KINDS = ("random", "text")
"""What a generated repository holds (see the module docstring)."""
_TEXT_WORDS = 2000
_TEXT_EDITS = 64

GENERATED_COPIES = 3
"""A generated repository takes this many times its size on disk while it is made (the
files, their loose objects, the pack)."""

BRANCH = "main"
PROBE_BRANCH_PREFIX = "gitnetdiag/probe-"

_PROBE_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,40}")
_GIT_TIMEOUT_S = 300.0
_FIXED_DATE = "1700000000 +0000"
_IDENTITY_ENV = {
    "GIT_AUTHOR_NAME": "gitnetdiag",
    "GIT_AUTHOR_EMAIL": "probe@gitnetdiag.invalid",
    "GIT_AUTHOR_DATE": _FIXED_DATE,
    "GIT_COMMITTER_NAME": "gitnetdiag",
    "GIT_COMMITTER_EMAIL": "probe@gitnetdiag.invalid",
    "GIT_COMMITTER_DATE": _FIXED_DATE,
}


@dataclass(frozen=True, kw_only=True)
class GeneratedRepo:
    """A generated (non-bare) repository with one commit on ``main``."""

    path: Path
    """Work tree of the repository."""
    head_oid: str
    """Object id of the single commit (same seed and size give the same id)."""
    size_bytes: int
    """Bytes of random file content in the commit."""


def probe_branch_name(probe_id: str) -> str:
    """The throwaway branch a probe pushes to: ``gitnetdiag/probe-<id>``."""
    if not _PROBE_ID_RE.fullmatch(probe_id):
        raise UsageError(f"invalid probe id {probe_id!r}", hint="use letters, digits, '-' or '_'")
    return f"{PROBE_BRANCH_PREFIX}{probe_id}"


def new_probe_id() -> str:
    """A short random hex id for one probe's throwaway branch."""
    return secrets.token_hex(4)


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for git runs: fixed identity and dates, no user or system config."""
    env = dict(os.environ)
    env.update(_IDENTITY_ENV)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    if extra:
        env.update(extra)
    return env


def _git(args: list[str], *, cwd: Path, input_bytes: bytes | None = None) -> bytes:
    proc = run_binary(
        ["git", *args], what=f"git {args[0]}", cwd=cwd, env=git_env(), input_bytes=input_bytes,
        timeout_s=_GIT_TIMEOUT_S, missing_hint="install the Debian package 'git'",
        on_timeout=OnTimeout(hint="the disk may be very slow or full"),
    )
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        last = lines[-1] if lines else f"exit code {proc.returncode}"
        raise ExternalCommandError(
            f"'git {args[0]}' failed in {cwd}: {last}",
            hint="check that the directory is writable and is a git repository",
        )
    return proc.stdout


def _text_files(rng: np.random.Generator, size_bytes: int) -> list[bytes]:
    """Files of one seeded text (words of a small vocabulary), each with a few edits."""
    vocabulary = [f"w{i:04d}".encode() for i in range(_TEXT_WORDS)]
    words = rng.integers(0, _TEXT_WORDS, TEXT_FILE_BYTES // 5)
    base = b" ".join(vocabulary[int(i)] for i in words)[:TEXT_FILE_BYTES]
    files = []
    remaining = size_bytes
    while remaining > 0:
        text = bytearray(base[:min(TEXT_FILE_BYTES, remaining)])
        for pos in rng.integers(0, max(1, len(text) - 6), _TEXT_EDITS):
            text[pos:pos + 6] = rng.bytes(3).hex().encode()[:len(text) - pos]
        files.append(bytes(text))
        remaining -= len(text)
    return files


def check_generated_size(option: str, text: str, size_bytes: int,
                         scratch: Path | None = None) -> None:
    """A repository of ``size_bytes`` that a probe can make: at most
    :data:`MAX_GENERATED_BYTES`, and room for it under ``scratch`` (the temporary directory
    by default); else one usage error naming ``option``."""
    if size_bytes > MAX_GENERATED_BYTES:
        raise UsageError(
            f"{option} {text} is more than the {MAX_GENERATED_BYTES // 1024**3} GiB a probe "
            "generates", reference="size-too-large",
            hint=f"give {option} 4GiB or less: a push stops at its --budget long before "
            "(32MiB is the default)")
    where = scratch or Path(tempfile.gettempdir())
    try:
        st = os.statvfs(where)
    except OSError:
        return  # the run says why when it makes the repository
    free, needed = st.f_bavail * st.f_frsize, GENERATED_COPIES * size_bytes
    if st.f_blocks and free < needed:
        raise UsageError(
            f"{option} {text}: {where} has {free / 2**20:.0f} MiB free, making the repository "
            f"needs {needed / 2**20:.0f} MiB", reference="size-too-large",
            hint=f"give a smaller {option}, or free space there (or point TMPDIR elsewhere)")


def generate_repo(dest: Path, size_bytes: int, seed: int = 1, data: str = "random",
                  file_bytes: int = FILE_SIZE_BYTES) -> GeneratedRepo:
    """Create a repository at ``dest`` with ``size_bytes`` of seeded ``data``.

    ``random`` data is split into files of ``file_bytes`` (:data:`FILE_SIZE_BYTES`) and
    packed;
    ``text`` data into files of :data:`TEXT_FILE_BYTES`, left loose. Author,
    committer and dates are fixed, so the commit id depends only on ``seed``,
    ``size_bytes`` and ``data``. ``dest`` must not exist or be an empty directory.
    """
    if size_bytes <= 0:
        raise UsageError(f"repository size must be positive, got {size_bytes}")
    if data not in DATA_KINDS:
        raise UsageError(f"unknown data kind {data!r}", hint="choose " + " or ".join(DATA_KINDS))
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise UsageError(f"{dest} exists and is not empty", hint="choose a new directory")
    data_dir = dest / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    _git(["init", "--quiet", "--initial-branch", BRANCH, str(dest)], cwd=dest)
    _git(["config", "core.looseCompression", "0"], cwd=dest)
    import numpy as np

    rng = np.random.default_rng(seed)
    if data == "text":
        for index, text in enumerate(_text_files(rng, size_bytes)):
            (data_dir / f"text-{index:05d}.txt").write_bytes(text)
    else:
        remaining = size_bytes
        index = 0
        while remaining > 0:
            chunk = min(file_bytes, remaining)
            (data_dir / f"blob-{index:05d}.bin").write_bytes(rng.bytes(chunk))
            remaining -= chunk
            index += 1
    _git(["add", "--all"], cwd=dest)
    message = f"gitnetdiag probe data seed={seed}" + (f" data={data}" if data != "random" else "")
    _git(["commit", "--quiet", "--no-gpg-sign", "-m", message], cwd=dest)
    if data == "text":  # fresh commits are loose: the push does the delta search
        head = _git(["rev-parse", "HEAD"], cwd=dest).decode().strip()
        return GeneratedRepo(path=dest, head_oid=head, size_bytes=size_bytes)
    # Packed like a real repository, so a push reuses the pack data instead of
    # deflating every loose object again. Random data neither compresses nor
    # deltifies: level 0 and no delta window keep generation well under a second.
    _git(
        ["-c", "pack.compression=0", "repack", "-a", "-d", "-q", "--window=0", "--depth=0"],
        cwd=dest,
    )
    head = _git(["rev-parse", "HEAD"], cwd=dest).decode().strip()
    return GeneratedRepo(path=dest, head_oid=head, size_bytes=size_bytes)


def pack_for_commit(repo: Path, oid: str) -> bytes:
    """The pack a push of a brand-new branch at ``oid`` sends: everything reachable from it."""
    return _git(
        ["pack-objects", "--stdout", "--revs", "--quiet"],
        cwd=Path(repo),
        input_bytes=f"{oid}\n".encode(),
    )


def head_oid(repo: Path) -> str:
    """Object id of HEAD in an existing repository."""
    return _git(["rev-parse", "--verify", "HEAD^{commit}"], cwd=Path(repo)).decode().strip()


def check_safe_ref(ref: str) -> None:
    """The one guard every ref update passes: only our throwaway namespace.

    Probes never create, update or delete any ref but ``refs/heads/gitnetdiag/probe-<id>``.
    """
    prefix = "refs/heads/" + PROBE_BRANCH_PREFIX
    if not ref.startswith(prefix) or len(ref) == len(prefix) or ".." in ref:
        raise UsageError(f"refusing to touch {ref}: probes only write {prefix}<id>")


SALT_BYTES = 8
"""Bytes of each blob a salted copy replaces (or appends, for blobs under 16 bytes)."""


@dataclass(frozen=True, kw_only=True)
class SaltedRepo:
    """A scratch repository holding a salted copy of another repository's HEAD tree."""

    path: Path
    """Its directory."""
    head_oid: str
    """The new root commit (no parent: the server cannot have any of it)."""
    source_oid: str
    """The HEAD commit of the source repository."""
    blobs: int
    """Blobs copied."""


def salt_blob(data: bytes, salt: bytes) -> bytes:
    """``data`` with a new object id but the same size and compressibility: the first
    :data:`SALT_BYTES` bytes are replaced by the salt (appended to a tiny blob)."""
    if len(data) < 2 * SALT_BYTES:
        return data + salt
    return salt + data[SALT_BYTES:]


def _fast_import_path(path: bytes) -> bytes:
    if path.startswith(b'"') or any(c in path for c in (b"\n", b"\\", b'"')):
        escaped = path.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n")
        return b'"' + escaped + b'"'
    return path


def salted_copy(source: Path, dest: Path, salt: bytes | None = None) -> SaltedRepo:
    """Copy ``source``'s HEAD tree into a new repository at ``dest`` as one root commit,
    every blob salted (:func:`salt_blob`); ``source`` is only read, never written.

    Submodule entries stay links; symlinks keep their targets and ``.gitmodules`` its
    text (servers running fsck on pushes parse both).
    """
    source_oid = head_oid(source)
    salt = salt if salt is not None else secrets.token_hex(SALT_BYTES // 2).encode()
    if len(salt) != SALT_BYTES:
        raise ValueError(f"the salt must be {SALT_BYTES} bytes")
    listing = _git(["ls-tree", "-r", "-z", "--full-tree", source_oid], cwd=Path(source))
    dest.mkdir(parents=True, exist_ok=True)
    _git(["init", "--quiet", "--initial-branch", BRANCH, str(dest)], cwd=dest)
    reader = start(["git", "cat-file", "--batch"], isolate="none", cwd=source, env=git_env(),
                   stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    writer = start(["git", "fast-import", "--quiet", "--done"], isolate="none", cwd=dest,
                   env=git_env(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)

    def stop_both() -> None:
        reader.kill()
        writer.kill()

    watchdog = threading.Timer(_GIT_TIMEOUT_S, stop_both)
    watchdog.start()
    blobs = 0
    try:
        assert reader.stdin and reader.stdout and writer.stdin
        message = f"gitnetdiag: salted copy of {source_oid}\n".encode()
        writer.stdin.write(
            f"commit refs/heads/{BRANCH}\n".encode()
            + b"committer gitnetdiag <probe@gitnetdiag.invalid> 1700000000 +0000\n"
            + f"data {len(message)}\n".encode() + message
        )
        for item in listing.split(b"\0"):
            if not item:
                continue
            meta, _, path = item.partition(b"\t")
            mode, kind, oid = meta.split()
            target = _fast_import_path(path)
            if kind != b"blob":
                writer.stdin.write(b"M " + mode + b" " + oid + b" " + target + b"\n")
                continue
            reader.stdin.write(oid + b"\n")
            reader.stdin.flush()
            header = reader.stdout.readline().split()
            data = reader.stdout.read(int(header[2]) + 1)[:-1]
            # Symlink targets and .gitmodules stay as they are: a server's fsck parses them.
            keep = mode == b"120000" or path.rsplit(b"/", 1)[-1] == b".gitmodules"
            content = data if keep else salt_blob(data, salt)
            writer.stdin.write(b"M " + mode + b" inline " + target + b"\n"
                               + f"data {len(content)}\n".encode() + content + b"\n")
            blobs += 1
        writer.stdin.write(b"\ndone\n")
        writer.stdin.close()
        reader.stdin.close()
        assert writer.stderr is not None
        err = writer.stderr.read()
        writer.wait()
        reader.stdout.read()
        reader.wait()
    except (OSError, ValueError, IndexError) as exc:
        raise ExternalCommandError(
            f"cannot copy the tree of {source}: {exc}",
            hint="check that --repo is a readable git repository with a HEAD commit",
        ) from exc
    finally:
        watchdog.cancel()
        for proc in (reader, writer):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if writer.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()
        raise ExternalCommandError(
            f"'git fast-import' failed in {dest}: {last[-1] if last else writer.returncode}",
            hint="the disk may be full, or the repository's tree has entries git cannot copy",
        )
    head = _git(["rev-parse", "HEAD"], cwd=dest).decode().strip()
    return SaltedRepo(path=dest, head_oid=head, source_oid=source_oid, blobs=blobs)
