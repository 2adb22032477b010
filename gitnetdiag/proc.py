"""Running external programs: always with a timeout, errors mapped."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from types import FrameType

from gitnetdiag.errors import EnvironmentProblem, ExternalCommandError

DEFAULT_TIMEOUT_S = 60.0


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


def run(
    argv: Sequence[str],
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    input_bytes: bytes | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` capturing text output; map failures to ExternalCommandError."""
    try:
        proc = subprocess.run(
            list(argv),
            capture_output=True,
            timeout=timeout_s,
            env=dict(env) if env is not None else None,
            input=input_bytes.decode() if input_bytes is not None else None,
            text=True,
            cwd=cwd,
        )
    except FileNotFoundError as exc:
        raise EnvironmentProblem(
            f"the program '{argv[0]}' is not installed",
            hint="make demo / make test install every program the tool needs",
            reference="missing-program",
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise ExternalCommandError(
            f"'{' '.join(argv[:3])}' did not finish within {timeout_s:.0f} s",
            hint="the peer may be hanging; rerun with a longer timeout or check the server",
            reference="command-timeout",
        ) from exc
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        last = detail[-1] if detail else f"exit code {proc.returncode}"
        raise ExternalCommandError(
            f"'{' '.join(argv[:3])}' failed: {last}",
            hint="see the message above; run with the same arguments by hand to see more",
        )
    return proc


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While active, SIGTERM raises KeyboardInterrupt like Ctrl-C (main thread only),
    so the same clean-up runs (throwaway branches deleted, scratch files removed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
