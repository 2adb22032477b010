"""Flow-control ledgers a native probe kept as it received a pack (``fetch.json``'s
``h2_downloads`` and ``ssh_downloads``): seconds as floats, and the credit the probe
computed after each read, where the native push probes record raw events in nanoseconds
(:mod:`gitnetdiag.rundir.native`) replayed offline."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, kw_only=True)
class NativeLedger:
    """What every native download ledger holds: how the pack stream ended, and its rate."""

    outcome: str
    """``ok`` (whole pack), ``bounded`` (ended at a stable rate or the budget), ``stalled``,
    ``failed``."""
    error: str = ""
    """``reference: message`` when failed."""
    stopped: str | None = None
    """Why the stream was ended early (``stable``, ``budget``, ``stall``, ``timeout``)."""
    request_t_s: float | None = None
    """When the request was sent, seconds since the connection (HTTP/2) or channel (SSH)
    opened; every time below is on that clock."""
    received_bytes: int = 0
    """Bytes of the pack stream (SSH: the whole upload-pack answer) received."""
    rate_bytes_per_s: float | None = None
    """Rate of the pack stream (slow start excluded, as for git's clones)."""


@dataclass(frozen=True, kw_only=True)
class H2CreditLedger(NativeLedger):
    """One native HTTP/2 upload-pack fetch under a chosen window (``probe.fetchh2``): the
    server's DATA frames as they arrived, and the credit it had left after each."""

    label: str
    """Which window: ``HTTP/2 default`` (65,535 B) or ``large``."""
    window_bytes: int
    """The window the client advertised (stream ``SETTINGS_INITIAL_WINDOW_SIZE``; the
    connection window raised to it when larger than the default)."""
    server_settings: dict[str, int] = field(default_factory=dict)
    """The server's SETTINGS."""
    data_t_s: tuple[float, ...] = ()
    """Arrival of each DATA frame of the pack stream."""
    data_bytes: tuple[int, ...] = ()
    """Flow-controlled bytes of each of those frames."""
    credit_left_bytes: tuple[int, ...] = field(default=(), metadata={"signed": True})
    """The stream credit the server had left after each frame (after h2's refills)."""


@dataclass(frozen=True, kw_only=True)
class SshCreditLedger(NativeLedger):
    """One native SSH upload-pack fetch (``probe.sshfetch``): the channel window this client
    granted the server, each read of the pack as it arrived, each window adjust it sent."""

    target: str
    """``host:port``."""
    server_banner: str = ""
    """The server's SSH version string."""
    via: str = ""
    """The SSH jump host (``user@host:port``) gone through (git's single ``ProxyJump``
    host), "" when straight to ``target``."""
    connect_s: float | None = None
    """TCP connect time; through a jump host, until the channel to the server was open."""
    kex_s: float | None = None
    """Key exchange and host-key check."""
    auth_s: float | None = None
    """Public-key authentication."""
    client_window_bytes: int = 0
    """The channel window this client granted the server at the channel's open (what the
    server may send before the client's first SSH_MSG_CHANNEL_WINDOW_ADJUST)."""
    client_max_packet_bytes: int = 0
    """The largest channel packet this client accepts."""
    server_window_bytes: int = 0
    """The window the server granted this client (the request's side)."""
    wants: int = 0
    """Ref tips asked for (``want`` lines)."""
    read_t_s: tuple[float, ...] = ()
    """Each read of the pack stream."""
    read_bytes: tuple[int, ...] = ()
    """Bytes of each of those reads."""
    adjust_t_s: tuple[float, ...] = ()
    """Each window adjust this client sent (its grant renewed)."""
    adjust_bytes: tuple[int, ...] = ()
    """Bytes each of those adjusts granted."""
