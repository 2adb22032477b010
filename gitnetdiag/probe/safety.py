"""What a probe run does to keep the user's secrets: checks before it starts,
the secrets it must redact, and redaction of every line it reports.

The policy itself (what a secret looks like, how it is removed) is in
:mod:`gitnetdiag.redaction`; this module gathers the run's inputs for it.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol as TypingProtocol

from gitnetdiag.errors import GitnetdiagError, UsageError
from gitnetdiag.probe.options import ProbeOptions
from gitnetdiag.proc import ENDING_SIGNALS, run
from gitnetdiag.redaction import (
    SecretSet,
    redact_run_dir,
    redact_text,
    redact_url,
    secrets_from_header,
    secrets_from_url,
)
from gitnetdiag.safefile import prepare_out_dir
from gitnetdiag.vocabulary import TransportKind

CONFIG_TIMEOUT_S = 10.0
_EXTRA_HEADER_KEYS = r"^http\..*extraheader$"


def check_full_capture(urls: Mapping[TransportKind, str], protocols: Iterable[TransportKind],
                       *, full: bool) -> None:
    """Refuse ``--full`` (whole packets, keylog, pcapng) for HTTP over plain ``http://``.

    Without TLS the whole-packet capture would hold the Authorization header,
    cookies and tokens in clear text.
    """
    if not full:
        return
    for protocol in protocols:
        url = urls.get(protocol, "")
        if protocol.is_http and url.lower().startswith("http://"):
            raise UsageError(
                f"--full over plain HTTP ({redact_url(url)}) would write the credentials "
                "into the capture",
                hint="use the https:// URL of the remote, or drop --full",
                reference="full-over-http",
            )


def extra_header_secrets(cwd: Path | None = None, env: Mapping[str, str] | None = None
                         ) -> set[str]:
    """The secrets of every ``http.extraHeader`` / ``http.<url>.extraHeader`` value
    that git would see (global, system, repository and ``-c``/environment config).

    Every URL's headers count, not only the probed remote's: removing a
    secret that never appears costs nothing.
    """
    try:
        proc = run(["git", "config", "-z", "--get-regexp", _EXTRA_HEADER_KEYS],
                   timeout_s=CONFIG_TIMEOUT_S, check=False, env=env,
                   cwd=str(cwd) if cwd else "/")
    except GitnetdiagError:
        return set()
    found: set[str] = set()
    for record in proc.stdout.split("\0"):
        _key, newline, value = record.partition("\n")
        if newline and value:
            found |= secrets_from_header(value)
    return found


def probe_secrets(urls: Iterable[str], *, repo: Path | None = None) -> SecretSet:
    """The exact secrets of a run: those of each remote URL and of the user's
    ``http.extraHeader`` values. Probes add the credentials they obtain later."""
    found = SecretSet()
    for url in urls:
        found.add(*secrets_from_url(url))
    found.add(*extra_header_secrets(repo, dict(os.environ)))
    return found


def prepare_run(options: ProbeOptions) -> SecretSet:
    """Before a probe writes anything: refuse ``--full`` over plain HTTP, make the
    run directory (new, or empty and ours), and gather the secrets to redact."""
    check_full_capture(options.urls, options.protocols, full=options.full)
    prepare_out_dir(options.out_dir)
    return probe_secrets(options.urls.values(), repo=options.repo)


class _Reporter(TypingProtocol):
    def begin(self, label: str) -> None: ...
    def done(self, label: str, detail: str, *, ok: bool) -> None: ...
    def warn(self, message: str) -> None: ...


class RedactingReporter:
    """A reporter that redacts every line before the wrapped one shows it."""

    def __init__(self, inner: _Reporter, secrets: SecretSet) -> None:
        self._inner = inner
        self._secrets = secrets

    def begin(self, label: str) -> None:
        self._inner.begin(redact_text(label, self._secrets))

    def done(self, label: str, detail: str, *, ok: bool) -> None:
        self._inner.done(redact_text(label, self._secrets),
                         redact_text(detail, self._secrets), ok=ok)

    def warn(self, message: str) -> None:
        self._inner.warn(redact_text(message, self._secrets))

    def moved(self, label: str, moved_bytes: int, rate_bytes_per_s: float | None) -> None:
        # Reporters written before live progress (tests, library users) lack it.
        inner = getattr(self._inner, "moved", None)
        if inner is not None:
            inner(redact_text(label, self._secrets), moved_bytes, rate_bytes_per_s)

    def phase(self, label: str, text: str) -> None:
        inner = getattr(self._inner, "phase", None)
        if inner is not None:
            inner(redact_text(label, self._secrets), redact_text(text, self._secrets))

    def status(self, label: str, text: str) -> None:
        inner = getattr(self._inner, "status", None)
        if inner is not None:
            inner(redact_text(label, self._secrets), redact_text(text, self._secrets))


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Ignore Ctrl-C, SIGTERM and SIGHUP (main thread only) while the redaction pass runs:
    a second interrupt must not leave half the run directory unredacted."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in ENDING_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def redact_run_files(run_dir: Path, secrets: SecretSet) -> tuple[str, ...]:
    """The redaction pass at the end of a run, also after Ctrl-C or SIGTERM (which
    it defers while it runs); returns the files it could not clean, with why."""
    with signals_deferred():
        return redact_run_dir(run_dir, secrets).failed
