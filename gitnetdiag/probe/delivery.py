"""Did the pack reach the server whole? What the client saw besides git's own words.

git prints ``Total N`` once pack-objects has handed the whole pack to the transport:
into a pipe to remote-curl or ssh, then into curl's buffers and the socket's send
buffer. On a fast path those hold a small pack whole, so a server that stops reading
(an edge that never forwards the body, a backend that never reads it) leaves git at
``Total`` with most of the pack still on the client. receive-pack applies a ref only
after the whole pack arrived and was checked, so such a push cannot land, and its
clean-up has nothing to wait for. Two witnesses tell it (pure, :func:`shortfall`;
:func:`cut_short` turns :func:`~gitnetdiag.probe.cleanup.push_aftermath`'s ``may-land``
into ``cut`` on their word):

    the kernel   TCP_INFO ``bytes_acked`` of git's sockets, counted while the push made
                 no progress (the monitor's stall): below the pack git wrote, the server
                 never had it all
    curl         without that count, the trace of the POST that carried the pack: a
                 ``Content-Length`` body curl never said it finished sending (it logs
                 :data:`~gitnetdiag.probe.trace2.UPLOAD_DONE` for such bodies), with
                 no answer

The kernel's count only ever keeps a push as one that may land (a count at or above
the pack, whatever the trace says): alone it never calls a push cut, since a count read
off the wrong socket or before the last acknowledgements (seen on loopback: 0.12 of
1 MiB counted for a pack the server had read whole) would skip the look for a branch
that a hook may still create. curl's own word that the body was not sent is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitnetdiag.probe.cleanup import Aftermath
from gitnetdiag.probe.gitpush import GitRun, PackProgress, parse_pack_progress
from gitnetdiag.probe.trace2 import CurlTraceSummary

ACKED_SHARE = 0.99
"""The acknowledged bytes fall short of the pack below this share of git's figure for it.
git prints the pack's size to two decimals of its unit (``700.41 KiB``): within half a
percent of the truth. Everything else the count holds (TLS records, HTTP/2 frames, the
ref negotiation) only adds to it, so a count below 99% of the pack is a pack not
delivered."""


@dataclass(frozen=True, kw_only=True)
class PackDelivery:
    """What the client saw of the pack's way to the server, beside git's progress."""

    acked_bytes: int | None = None
    """Bytes the server's TCP acknowledged on git's sockets (the kernel's TCP_INFO), when
    the push was stopped for making no progress; None when not counted then."""
    curl: CurlTraceSummary | None = None
    """git's curl trace of an HTTP push, None without one."""


def body_unfinished(curl: CurlTraceSummary) -> int | None:
    """The declared length of the last receive-pack POST when curl never finished sending
    its body and no answer came; None otherwise (a streamed body tells nothing)."""
    posts = [r for r in curl.requests
             if r.method == "POST" and r.path.endswith("git-receive-pack")]
    if not posts:
        return None
    last = posts[-1]
    if last.content_length_bytes is None or last.upload_done or last.status is not None:
        return None
    return last.content_length_bytes


def shortfall(progress: PackProgress, delivery: PackDelivery | None) -> str | None:
    """Why a push whose pack git finished never delivered it whole, with the figures;
    None when it may have (then the server may still apply it)."""
    if delivery is None:
        return None
    written = progress.written_bytes
    if delivery.acked_bytes is not None and written and (
            delivery.acked_bytes >= ACKED_SHARE * written):
        return None
    if delivery.curl is not None and (declared := body_unfinished(delivery.curl)) is not None:
        short = ""
        if delivery.acked_bytes is not None and written:
            short = (f" (the server acknowledged {_mib(delivery.acked_bytes)} of the "
                     f"{_mib(written)} pack)")
        return (f"curl never finished sending the {declared} B request body that carried "
                f"the pack, and no answer came{short}: the server never had the whole pack")
    return None


def cut_short(aftermath: Aftermath, run: GitRun | None,
              delivery: PackDelivery | None) -> tuple[Aftermath, str]:
    """``aftermath`` (:func:`~gitnetdiag.probe.cleanup.push_aftermath` of ``run``), with a
    push that "may land" (git handed over its whole pack, no answer came) found ``cut``
    when the pack never reached the server whole; and why, with the figures (empty when
    not cut on this evidence)."""
    if aftermath is not Aftermath.MAY_LAND or run is None:
        return aftermath, ""
    why = shortfall(parse_pack_progress(run.stderr), delivery)
    return (Aftermath.CUT, why) if why is not None else (aftermath, "")


def _mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"
