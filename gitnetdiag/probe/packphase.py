"""Before a clone's pack: is the server still getting anywhere? (pure, no clock)

A clone's first bytes are the ref advertisement and the negotiation; then the server
runs pack-objects and, until the first pack byte, says how far it got in sideband
progress lines (``remote: Counting objects: 45% (450/1000)``). Bytes alone do not show
that it gets anywhere: upload-pack sends an empty keepalive packet every 5 s
(``uploadpack.keepAlive``) while pack-objects is silent, and a server stuck in its pack
phase may talk on without advancing. The issue-34 server said ``Counting objects`` for
0.1 MiB and then never sent a pack: counted as bytes moved, that passed the monitor's
preamble and came out ``bounded`` at 0.00 MiB/s, ranked ``bandwidth-limit``.

So until git counts the pack aloud (``Receiving objects``, when the
:class:`~gitnetdiag.probe.budget.RateMonitor` takes over), a clone gets somewhere when

- the server says something it had not said last (a new ``remote:`` line), or
- one sample interval brought at least :data:`NEWS_BYTES` that are not the server's
  words: the kernel's bytes received beyond what git's stderr grew by (the handshakes, the
  ref advertisement, a pack git does not count aloud; a keepalive is 5 bytes, with its TLS,
  HTTP or SSH framing under 100), and the next interval did not take them back. The
  kernel counts a progress line before git has written it: on a busy machine one sample
  saw 452 B received against 106 B of stderr, and the next sample's stderr caught up (a
  git:// clone of the CPU-starved lab, 2026-12-03, whose words-only bound then never
  came); a rise that the next sample takes back was git's lag, not bytes. While such a
  rise waits for its second sample nothing is called stalled.

Nothing of that for the stall timeout is a stall; once the server has spoken it is a
stall in the server's pack phase (its last words are :attr:`PackPhaseWatch.server_line`).

Words alone are no pack, however they advance (issue 42: a server that counted on for
300 s and never sent a pack held the clone for git's own timeout): with ``words_limit_s``
set, a clone whose only news for that long was the server's words (no bytes beyond them
since) is stalled too, :attr:`PackPhaseWatch.words_only`. The fetch probe sets it to the
stall timeout plus the time budget (:func:`words_limit`): the budget bounds the pack phase
as it bounds the pack. A real server's slow pack preparation may outlast it (the lab's
CPU-starved upload-pack: 17-26 s of progress before its first pack byte, cut at the
defaults' 25 s now and then): the clone's record keeps the wait (``pack_wait``), and the
diagnosis names the preparation (``server-pack-generation``, at least that long).
"""

from __future__ import annotations

import re

NEWS_BYTES = 256
"""Bytes in one sample interval, beyond the server's progress text, that show the clone
moves (more than a keepalive packet with any framing)."""
_TAIL_CHARS = 8192
_SERVER_LINE = re.compile(r"remote: ([^\r\n]*)")


def last_server_line(stderr: str) -> str:
    """The server's last progress or message line on git's stderr (``remote: ...``, its
    padding stripped); "" when the server said nothing yet."""
    found = _SERVER_LINE.findall(stderr[-_TAIL_CHARS:])
    return found[-1].strip() if found else ""


def words_limit(stall_timeout_s: float | None, budget_s: float | None,
                default_budget_s: float) -> float | None:
    """How long a clone may hear only the server's words before its pack: the stall timeout
    plus the budget (``default_budget_s`` for a complete clone); None without a stall
    timeout (only the overall timeout bounds it then)."""
    if stall_timeout_s is None:
        return None
    return stall_timeout_s + (budget_s if budget_s is not None else default_budget_s)


class PackPhaseWatch:
    """Decides when a clone that has no pack yet stopped getting anywhere (see the module
    doc); fed a sample at a time."""

    def __init__(self, stall_timeout_s: float | None,
                 words_limit_s: float | None = None) -> None:
        self.stall_timeout_s = stall_timeout_s
        self.words_limit_s = words_limit_s
        """Words alone for this long are a stall too; None: words are always news."""
        self.last_news_s = 0.0
        self.last_bytes_s = 0.0
        """When bytes beyond the server's words last came (the start, else)."""
        self.server_line = ""
        """The server's last words (``remote: ...``), "" while it said nothing."""
        self._received = 0
        self._stderr_bytes = 0
        self._rising: tuple[float, int] | None = None
        """(when, how many): a sample's :data:`NEWS_BYTES` or more beyond the words,
        awaiting the next sample to hold them."""

    def see(self, t_s: float, *, stderr: str, stderr_bytes: int, received_bytes: int) -> None:
        """One sample: git's stderr so far (``stderr_bytes`` long) and the bytes the kernel
        counted as received on git's sockets."""
        line = last_server_line(stderr)
        if line != self.server_line:
            self.last_news_s = t_s
        self._bytes_news(t_s, (received_bytes - self._received)
                         - max(0, stderr_bytes - self._stderr_bytes))
        self.server_line = line
        self._received = max(self._received, received_bytes)
        self._stderr_bytes = stderr_bytes

    def _bytes_news(self, t_s: float, beyond: int) -> None:
        """This sample's bytes beyond the server's words ``beyond``: news when a sample
        brought :data:`NEWS_BYTES` and the next did not take them back (git writing the
        words late), dated at the first."""
        rising, self._rising = self._rising, None
        if rising is not None and rising[1] + beyond >= NEWS_BYTES:
            self.last_news_s = max(self.last_news_s, rising[0])
            self.last_bytes_s = rising[0]
        if beyond >= NEWS_BYTES:
            self._rising = (t_s, beyond)

    def stalled(self, t_s: float) -> bool:
        """Nothing new for the stall timeout (never without one), or only the server's
        words for :attr:`words_limit_s` (:attr:`words_only`)."""
        if self._rising is not None:
            return False  # bytes beyond the words, to be held by the next sample
        return ((self.stall_timeout_s is not None
                 and t_s - self.last_news_s >= self.stall_timeout_s)
                or self.words_only(t_s))

    def words_only(self, t_s: float) -> bool:
        """The server said something new all along, yet for :attr:`words_limit_s` nothing
        but its words came: progress and no pack."""
        return (self.words_limit_s is not None and bool(self.server_line)
                and self._rising is None and t_s - self.last_bytes_s >= self.words_limit_s)

    def words_s(self, t_s: float) -> float:
        """Seconds the server's words were the clone's only news."""
        return t_s - self.last_bytes_s

    def quiet_s(self, t_s: float) -> float:
        """Seconds since the clone last got anywhere."""
        return t_s - self.last_news_s
