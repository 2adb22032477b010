"""How a git run ended: the one vocabulary of outcomes and failure kinds, end to end.

The probes record them (``gitnetdiag.rundir``), the diagnosis reads them
(``PushObservation.error_kind``), the reports print them: the same values at every
layer, with no mapping between. This module is at the bottom (standard
library only), so the pure side and the I/O side import it alike. The hints
that go with each kind are in :mod:`gitnetdiag.rundir.failures`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

TransferOutcome = Literal["ok", "bounded", "stalled", "hung", "failed", "interrupted", "no-data"]
"""How a push (or a bounded clone) ended: ``ok`` (it finished), ``bounded`` (stopped
mid-pack at a stable rate or its time budget: the rate from the bytes moved, nothing
created), ``stalled`` (no progress for the stall timeout), ``hung`` (killed at the
timeout), ``failed``, ``interrupted`` (Ctrl-C or SIGTERM), ``no-data`` (git succeeded
but sent far less than the planned pack: the server had the objects; no rate). A clone
never ends ``no-data``."""

MEASURED_OUTCOMES: frozenset[TransferOutcome] = frozenset({"ok", "bounded"})
"""Outcomes whose moved bytes and time make a rate."""


class FailureKind(StrEnum):
    """Why a git run did not succeed."""

    HUNG = "hung"
    """It did not finish within the timeout (a stall, e.g. HTTP/2 flow control)."""
    TIMEOUT = "timeout"
    """git itself reported a connection or operation timeout."""
    REFUSED = "refused"
    """TCP connection refused (nothing listening, or a REJECT rule)."""
    UNREACHABLE = "unreachable"
    """No route, unknown host, or no answer at all to the connection's SYNs (a filter
    drops them: the probe's bounded path check tells which, :data:`PathReach`)."""
    RESET = "reset"
    """Connection reset or closed by the peer mid-way."""
    TLS = "tls"
    """TLS handshake or certificate verification failed."""
    PLAIN_HTTP = "plain-http"
    """An https:// URL whose port answered in plain HTTP: no TLS handshake at all."""
    AUTH = "auth"
    """Authentication failed (HTTP 401/403, SSH key refused)."""
    HOST_KEY = "host-key"
    """The SSH host key could not be verified."""
    HTTP_STATUS = "http-status"
    """The server (or an edge in front of it) answered a request with an error status or a
    redirect git does not follow (``RPC failed; HTTP 308``); 401/403 are ``auth``."""
    SERVER_ERROR = "server-error"
    """An HTTP 5xx answer: what ``gitnetdiag load`` records of an ``http-status`` or
    ``other`` failure whose message carries a 5xx status."""
    REJECTED = "rejected"
    """The server refused the ref update (hook, permissions)."""
    INTERRUPTED = "interrupted"
    """Stopped by Ctrl-C or a signal."""
    OTHER = "other"
    """Anything else; see the last stderr line."""


UNCLASSIFIED_KINDS: dict[str, FailureKind] = {"stalled": FailureKind.HUNG,
                                              "hung": FailureKind.HUNG,
                                              "interrupted": FailureKind.INTERRUPTED}
"""The kind of a failed transfer recorded without one (a push's runs before failure kinds
were kept, a clone that stopped moving, a transfer the user interrupted: the probe records
no kind for it), whichever the direction; any other outcome is ``other``."""


REFUSALS = frozenset({FailureKind.REFUSED, FailureKind.UNREACHABLE})
"""Kinds the diagnosis counts as a refused connection: a REJECT rule answers a SYN with a
reset (``refused``) or with an ICMP unreachable (``unreachable``)."""


PathReach = Literal["open", "filtered", "refused", "no-route", "unresolved", "tls-stalled"]
"""What the probe's bounded connect to a port found before any transfer: ``open`` (the
handshake, and for HTTPS the TLS handshake, completed), ``filtered`` (no SYN answered:
no SYN-ACK, no RST, no ICMP), ``refused`` (a RST or an ICMP port unreachable:
``ECONNREFUSED``), ``no-route`` (``EHOSTUNREACH``/``ENETUNREACH``: no route, or an ICMP
host/admin prohibited), ``unresolved`` (the host name does not resolve), ``tls-stalled``
(TCP connected, the TLS handshake never completed)."""

DEAD_PATHS: frozenset[PathReach] = frozenset({"filtered", "no-route", "tls-stalled"})
"""Path check results of a port nothing can be measured over (``path-unreachable``). A
refused port and a name that does not resolve are not here: git fails on them in
milliseconds, in words the diagnosis reads (``firewall-reset`` judges a refusal, a host
that does not resolve is a failure of the run's input)."""

NOT_TRANSFERRED: dict[PathReach, FailureKind] = {
    "filtered": FailureKind.UNREACHABLE,
    "tls-stalled": FailureKind.TLS,
}
"""Dead paths whose port no transfer is tried on, each with the failure kind the protocol's
one transfer is recorded with: git would wait out its SYN retries (minutes) or a TLS
handshake with no timeout for the same answer. A port with no route is still transferred:
the ICMP answer (or the missing route) fails git's connect within a round trip, in its own
words."""
