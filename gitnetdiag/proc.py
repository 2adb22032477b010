"""Running external programs: always with a timeout, errors mapped.

Every program gitnetdiag starts goes through here: :func:`run` / :func:`run_binary`
(wait for it, with a timeout), :func:`start` (a long-running or streaming child,
stopped with :func:`kill_group`). :func:`map_process_errors` is the one place
where ``FileNotFoundError``, ``TimeoutExpired``, ``CalledProcessError`` and other
``OSError`` of a child become errors of :mod:`gitnetdiag.errors`.

Children die with us, however we end. A child :func:`start` puts in a process
group of its own (git and the remote helper or ssh it starts, tcpdump) is
registered with a *guardian*: a small process in a session of its own that
holds the read end of a pipe whose write end only this process has. When
this process ends, even by SIGKILL, the kernel closes the pipe; the
guardian reads end-of-file and stops every group still registered (SIGTERM,
then SIGKILL after 2 s: tcpdump flushes its file on SIGTERM), then removes
every scratch directory still registered (:func:`scratch_dir`: the clones, the
generated repository, the isolated git config)::

    gitnetdiag --pipe--> guardian          (+pgid when started, -pgid when reaped,
        |                    |              +d<hex path> made, -d<hex path> removed)
        +-- git push (pgid)  +-- EOF: killpg(pgid, SIGTERM) ... SIGKILL; rmtree(dirs)
        +-- tcpdump (pgid)

``PR_SET_PDEATHSIG`` alone would not do: it reaches the direct child only, and
git's remote helper and ssh are its grandchildren. :func:`ending_signals`
turns SIGTERM and SIGHUP (a closed terminal, a dropped SSH session) into the
same KeyboardInterrupt as Ctrl-C, and :func:`received_signal` says which one
ended the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any, Literal

from gitnetdiag.errors import EnvironmentProblem, ExternalCommandError, GitnetdiagError

DEFAULT_TIMEOUT_S = 60.0
MISSING_HINT = "make demo / make test install every program the tool needs"
TIMEOUT_HINT = "the peer may be hanging; rerun with a longer timeout or check the server"
FAILURE_HINT = "see the message above; run with the same arguments by hand to see more"


@dataclass(frozen=True, kw_only=True)
class OnTimeout:
    """The error a child that outlived its timeout becomes."""

    hint: str = TIMEOUT_HINT
    error: type[GitnetdiagError] = ExternalCommandError
    reference: str = "command-timeout"


DEFAULT_ON_TIMEOUT = OnTimeout()


def require_program(name: str, *, package: str | None = None) -> str:
    """Return the path of ``name`` or raise a clear EnvironmentProblem."""
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if path is None:
        raise EnvironmentProblem(
            f"the program '{name}' is not installed",
            hint=f"install the Debian package '{package or name}' (make demo / make test do it)",
            reference="missing-program",
        )
    return path


def require_root(what: str) -> None:
    """Raise unless running as root."""
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            f"{what} needs root",
            hint="run it as root (sudo), it creates network namespaces and captures packets",
            reference="not-root",
        )


def _last_line(*outputs: str | bytes | None) -> str:
    for output in outputs:
        text = output.decode(errors="replace") if isinstance(output, bytes) else output or ""
        lines = text.strip().splitlines()
        if lines:
            return lines[-1]
    return ""


@contextlib.contextmanager
def map_process_errors(
    what: str,
    *,
    missing_hint: str = MISSING_HINT,
    on_timeout: OnTimeout = DEFAULT_ON_TIMEOUT,
    failure_hint: str = FAILURE_HINT,
) -> Iterator[None]:
    """Map what starting or waiting for a child raises to our error tree (httpcore's
    ``map_exceptions``): ``what`` names the command in the message (``'git ls-tree'``).

    A missing program is an :class:`EnvironmentProblem` (``missing-program``); a
    timeout ``on_timeout.error`` (``command-timeout``); a non-zero exit under
    ``check`` and any other ``OSError`` an :class:`ExternalCommandError`.
    """
    try:
        yield
    except FileNotFoundError as exc:
        program = str(exc.filename) if exc.filename else what.split()[0]
        raise EnvironmentProblem(
            f"the program '{program}' is not installed",
            hint=missing_hint,
            reference="missing-program",
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise on_timeout.error(
            f"'{what}' did not finish within {exc.timeout:.0f} s",
            hint=on_timeout.hint,
            reference=on_timeout.reference,
        ) from exc
    except subprocess.CalledProcessError as exc:
        last = _last_line(exc.stderr, exc.output) or f"exit code {exc.returncode}"
        raise ExternalCommandError(f"'{what}' failed: {last}", hint=failure_hint) from exc
    except OSError as exc:
        raise ExternalCommandError(
            f"cannot run '{what}': {exc.strerror or exc}",
            hint="check that the program and its working directory are accessible",
        ) from exc


def run(
    argv: Sequence[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    input_bytes: bytes | None = None,
    cwd: str | os.PathLike[str] | None = None,
    what: str | None = None,
    missing_hint: str = MISSING_HINT,
    on_timeout: OnTimeout = DEFAULT_ON_TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` capturing text output; failures mapped by :func:`map_process_errors`
    (``what`` names the command in messages, its first three words by default)."""
    with map_process_errors(what or " ".join(argv[:3]), missing_hint=missing_hint,
                            on_timeout=on_timeout):
        return subprocess.run(
            list(argv),
            capture_output=True,
            timeout=timeout_s,
            env=dict(env) if env is not None else None,
            input=input_bytes.decode() if input_bytes is not None else None,
            text=True,
            cwd=cwd,
            check=check,
        )


def run_binary(
    argv: Sequence[str],
    *,
    what: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    input_bytes: bytes | None = None,
    cwd: str | os.PathLike[str] | None = None,
    missing_hint: str = MISSING_HINT,
    on_timeout: OnTimeout = DEFAULT_ON_TIMEOUT,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` capturing bytes, never checking the exit code (the caller reads it):
    for output that is not text (``git ls-tree -z``) or exit codes with a meaning."""
    with map_process_errors(what, missing_hint=missing_hint, on_timeout=on_timeout):
        return subprocess.run(
            list(argv),
            capture_output=True,
            timeout=timeout_s,
            env=dict(env) if env is not None else None,
            input=input_bytes,
            cwd=cwd,
            check=False,
        )


_Stream = int | IO[Any] | None


def start(
    argv: Sequence[str],
    *,
    isolate: Literal["session", "group", "none"],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdin: _Stream = subprocess.DEVNULL,
    stdout: _Stream = subprocess.PIPE,
    stderr: _Stream = subprocess.PIPE,
    missing_hint: str = MISSING_HINT,
    outlive: bool = False,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` without waiting; the caller bounds it in time and stops it.

    ``isolate``: ``session`` (a new session: no controlling terminal, so nothing can
    prompt on it, and Ctrl-C reaches only us), ``group`` (a process group of its own,
    cheaper to start: vfork stays usable), or ``none``. With either of the first two
    :func:`kill_group` stops the child and everything it started, and the guardian
    stops them if we die first (see the module docstring), unless ``outlive`` (the
    lab's servers, which must keep running after ``lab up``).
    The child is registered once it has started; a SIGKILL of this process while
    ``start`` runs (the child started, not yet registered) leaves it unguarded.
    """
    guarded = isolate != "none" and not outlive
    popen = _GuardedPopen if guarded else subprocess.Popen
    if guarded:
        # The guardian first: started after the child, a parent killed while the
        # guardian's interpreter was still coming up left the child unguarded.
        _guardian().ready()
    with map_process_errors(argv[0], missing_hint=missing_hint):
        proc = popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=isolate == "session",
            process_group=0 if isolate == "group" else None,
        )
    if guarded:
        _guardian().watch(proc.pid)
    return proc


_GUARDIAN_SCRIPT = """
import os, shutil, signal, sys, time
groups = set()
dirs = set()
for line in sys.stdin:
    if line[1:2] == "d":
        path = bytes.fromhex(line[2:].strip())
        (dirs.add if line[0] == "+" else dirs.discard)(path)
        continue
    pgid = int(line[1:])
    if line[0] == "+":
        groups.add(pgid)
    else:
        groups.discard(pgid)
def alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return False
for sig in (signal.SIGTERM, signal.SIGKILL):
    for pgid in [g for g in groups if alive(g)]:
        os.killpg(pgid, sig)
    deadline = time.monotonic() + 2.0
    while any(alive(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.05)
for path in dirs:
    shutil.rmtree(path, ignore_errors=True)
"""
"""The guardian: reads ``+pgid``/``-pgid`` and ``+d``/``-d`` lines until end-of-file (we
are gone), then stops the groups and removes the directories still registered."""


class _Guardian:
    """This process's guardian (started on first use, one per process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0

    def _pipe(self) -> IO[bytes] | None:
        if self._proc is None or self._owner != os.getpid():
            # -I -S: no site packages, no user environment: it starts in ~20 ms.
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _GUARDIAN_SCRIPT], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            self._owner = os.getpid()
        return self._proc.stdin

    def _send(self, line: str) -> None:
        with self._lock:
            try:
                pipe = self._pipe()
                if pipe is not None:
                    pipe.write(line.encode())
                    pipe.flush()
            except OSError:
                self._proc = None  # the guardian is gone: the next child starts another

    def ready(self) -> None:
        """Start the guardian now (if it is not running) so a child is watched from the
        moment its pid is known."""
        with self._lock:
            try:
                self._pipe()
            except OSError:
                self._proc = None

    def watch(self, pgid: int) -> None:
        self._send(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        if self._proc is not None:
            self._send(f"-{pgid}\n")

    def watch_dir(self, path: Path) -> None:
        self._send(f"+d{bytes(path).hex()}\n")

    def forget_dir(self, path: Path) -> None:
        if self._proc is not None:
            self._send(f"-d{bytes(path).hex()}\n")


_GUARDIAN = _Guardian()


def _guardian() -> _Guardian:
    return _GUARDIAN


def make_scratch(prefix: str) -> Path:
    """A fresh directory in the temporary directory (``tempfile.mkdtemp``) that the guardian
    removes if this process is killed (SIGKILL, the OOM killer) before it could: the caller
    removes it, then calls :func:`scratch_removed`."""
    path = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    _guardian().ready()
    _GUARDIAN.watch_dir(path)
    return path


def scratch_removed(path: Path) -> None:
    """The caller removed ``path`` (:func:`make_scratch`): the guardian forgets it."""
    _GUARDIAN.forget_dir(path)


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """``tempfile.TemporaryDirectory`` that the guardian removes if this process is killed
    (:func:`make_scratch`)."""
    path = make_scratch(prefix)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        scratch_removed(path)


class _GuardedPopen(subprocess.Popen[bytes]):
    """A child in its own group, registered with the guardian until it is reaped."""

    _forgotten = False

    def _release(self) -> None:
        if self.returncode is not None and not self._forgotten:
            self._forgotten = True
            _GUARDIAN.forget(self.pid)

    def poll(self) -> int | None:
        code = super().poll()
        self._release()
        return code

    def wait(self, timeout: float | None = None) -> int:
        code = super().wait(timeout)
        self._release()
        return code


ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Ctrl-C, ``kill`` and a closed terminal (or dropped SSH session): each ends a run the
same way, with its clean-up."""

_received: list[signal.Signals] = []


def note_signal(signum: int) -> None:
    """Remember a signal that asked us to stop (the first one is how the run ended)."""
    _received.append(signal.Signals(signum))


def received_signal() -> signal.Signals | None:
    """The first signal that asked this process to stop, None when none did."""
    return _received[0] if _received else None


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While active, SIGTERM and SIGHUP raise KeyboardInterrupt like Ctrl-C (main thread
    only), so the same clean-up runs (throwaway branches deleted, scratch files removed);
    :func:`received_signal` tells them apart afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        note_signal(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in ENDING_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child started in its own process group: SIGTERM, then SIGKILL after 2 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=2.0)
            return
        except subprocess.TimeoutExpired:
            continue
