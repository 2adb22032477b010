"""``--full`` for an HTTP/2 clone: git's own frames, decrypted, give the window it advertised.

The window libcurl advertises in a download is what a release's source says
(``client-http2-window``'s data); the window *this* git really advertised is in
its HTTP/2 frames: its ``SETTINGS_INITIAL_WINDOW_SIZE`` (each stream) and the
``WINDOW_UPDATE`` on stream 0 that raises the connection's. They are inside
TLS, so with ``--full`` (root) the clone runs under a whole-packet ``tcpdump``
of its connection with ``SSLKEYLOGFILE`` (a 0600 file in the run directory),
and afterwards ``tshark`` decrypts the capture into ``<stem>.http2.tsv``
(:data:`gitnetdiag.analysis.h2ledger.TSHARK_FIELDS`), read by
:func:`gitnetdiag.analysis.h2ledger.git_h2_window`. A failure (no tcpdump, no tshark, no
keys written) leaves the clone unchanged, with a warning.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.probe.capture import Capture, create_private_file
from gitnetdiag.safefile import replace_file

TSHARK_TIMEOUT_S = 120.0
"""Bound on decrypting one clone's capture."""


class FetchWire:
    """``with FetchWire(...) as wire:`` captures the clone's connection with git's TLS keys;
    :meth:`frames` then decrypts it. ``env`` goes into git's environment."""

    def __init__(self, run_dir: Path, stem: str, *, host: str, port: int) -> None:
        self.run_dir = run_dir
        self.names = {"keylog": f"{stem}.keylog", "capture": f"{stem}.pcap"}
        self.keylog = (run_dir / self.names["keylog"]).resolve()
        self.capture = Capture(run_dir / self.names["capture"], host=host, port=port,
                               snaplen=0)
        self.env = {"SSLKEYLOGFILE": str(self.keylog)}
        self.warning = ""
        self.started = False

    def __enter__(self) -> FetchWire:
        create_private_file(self.keylog)
        try:
            self.capture.start()
            self.started = True
        except GitnetdiagError as exc:
            self.warning = f"no capture: {exc.message}"
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.started:
            self.capture.stop()

    def frames(self) -> dict[str, str]:
        """Decrypt the capture into ``<stem>.http2.tsv``; the artifacts written (kind ->
        name): the keylog, the capture and the frames, as far as they exist."""
        artifacts = {kind: name for kind, name in self.names.items()
                     if (self.run_dir / name).exists()}
        if not self.started or self.keylog.stat().st_size == 0:
            self.warning = self.warning or "git wrote no TLS keys"
            return artifacts
        from gitnetdiag.tools import tshark

        try:
            text = tshark.http2_fields(self.run_dir / self.names["capture"], self.keylog,
                                       timeout_s=TSHARK_TIMEOUT_S)
        except GitnetdiagError as exc:
            self.warning = f"its HTTP/2 frames were not read ({exc.message})"
            return artifacts
        name = self.names["capture"].removesuffix(".pcap") + ".http2.tsv"
        replace_file(self.run_dir / name, text.encode())
        return {**artifacts, "http2_frames": name}
