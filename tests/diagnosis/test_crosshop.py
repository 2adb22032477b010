"""A/B comparisons across different first hops (issue 43, :mod:`gitnetdiag.diagnosis.crosshop`):
HTTP/2 through a forward proxy against SSH direct is said so, and set aside when the proxy's
leg explains the difference."""

from __future__ import annotations

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.crosshop import same_hop_observations
from gitnetdiag.diagnosis.observations import H2Ledger, Observations, ProtocolObservation
from gitnetdiag.hops import FirstHop, ProxyAnswer
from tests.diagnosis.culprits.crafted import MB, cap, clamped, proto, run

PROXY = "10.77.0.1:8888"
TINYPROXY = ProxyAnswer(status=400, status_line="HTTP/1.1 400 Bad Request",
                        server="tinyproxy/1.11.1")
LEDGER = H2Ledger(source="native HTTP/2 probe", server_initial_window_bytes=16_777_216,
                  connection_window_bytes=16_777_216, max_frame_size_bytes=16384,
                  stream_zero_credit_s=0.0, connection_zero_credit_s=0.0, window_updates=40)
WINDOW = 65_536


def _proxied(*protocols: str) -> tuple[FirstHop, ...]:
    return (*(FirstHop(protocol=p, kind="http-proxy", proxy=PROXY, source="https_proxy",
                       answer=TINYPROXY) for p in protocols), FirstHop(protocol="ssh"))


def _h2(*, clamp: bool) -> ProtocolObservation:
    """HTTP/2 at a 64 KiB window's rate over 50 ms (1.3 MB/s), its own window open."""
    return proto(MB / (WINDOW / 0.05), capture=clamped(WINDOW) if clamp else cap(),
                 h2_ledger=LEDGER)


def _obs(first_hops: tuple[FirstHop, ...], **protocols: ProtocolObservation) -> Observations:
    return Observations(run=run(path_rate_bytes_per_s=50e6, first_hops=first_hops),
                        protocols=protocols)


def test_the_proxy_leg_explains_http2_against_ssh_direct_so_frames_are_not_ranked() -> None:
    """The lab's forward-proxy-buffer push: HTTP/2 through the proxy's clamped window, SSH
    direct and fast. The clamp on the proxy's leg ranks; h2-frame-settings, whose evidence
    is that difference and the default frame size, is not ranked and says why."""
    obs = _obs(_proxied("h2"), h2=_h2(clamp=True), ssh=proto(MB / 40e6, capture=cap()))
    d = diagnose(obs)
    ranked = [f.id for f in d.findings]
    assert ranked[0] == "tcp-receive-window-clamp", ranked
    assert "h2-frame-settings" not in ranked, ranked
    frames = next(f for f in d.dropped if f.id == "h2-frame-settings")
    assert frames.compares == ("h2", "ssh")
    assert (f"Not ranked: HTTP/2 went through the proxy {PROXY}, SSH direct, and "
            "tcp-receive-window-clamp measured on HTTP/2's leg to the proxy explains the "
            "difference") in frames.summary, frames.summary
    hops = next(e for e in frames.evidence if e.what == "first hops of the protocols compared")
    assert hops.text == f"HTTP/2: client -> proxy {PROXY} (tinyproxy/1.11.1) -> server; SSH: direct"


def test_the_same_comparison_all_direct_still_ranks_the_frames() -> None:
    """Control: the same rates with every protocol direct: h2-frame-settings fires as before
    (the comparison holds the path fixed), with nothing said of first hops."""
    obs = _obs((), h2=_h2(clamp=False), ssh=proto(MB / 40e6, capture=cap()))
    frames = next(f for f in diagnose(obs).findings if f.id == "h2-frame-settings")
    assert "first hops" not in frames.summary
    assert frames.compares == ("h2", "ssh")


def test_a_comparison_across_hops_that_no_leg_culprit_explains_is_said_and_kept() -> None:
    """HTTP/2 through the proxy slower than SSH direct, but nothing measured on the proxy's
    leg holds it (its TCP window open): ranked, saying the first hops differ."""
    obs = _obs(_proxied("h2"), h2=_h2(clamp=False), ssh=proto(MB / 40e6, capture=cap()))
    d = diagnose(obs)
    frames = next(f for f in d.findings if f.id == "h2-frame-settings")
    assert "tcp-receive-window-clamp" not in [f.id for f in d.findings]
    assert (f"The comparison is across different first hops (HTTP/2 went through the proxy "
            f"{PROXY}, SSH direct): a difference between them may be the proxy's."
            ) in frames.summary, frames.summary


def test_set_aside_then_judged_again_beside_the_same_hop() -> None:
    """HTTP/1.1 through the same proxy and fast, SSH direct and faster still: the comparison
    with SSH is set aside, and HTTP/2 against HTTP/1.1 (same first hop) judged again: it
    fires on that evidence, and says so."""
    obs = _obs(_proxied("h1", "h2"), h1=proto(MB / 20e6, capture=cap()),
               h2=_h2(clamp=True), ssh=proto(MB / 40e6, capture=cap()))
    assert set(same_hop_observations(obs, "h2").protocols) == {"h1", "h2"}
    assert set(same_hop_observations(obs, "ssh").protocols) == {"ssh"}
    d = diagnose(obs)
    frames = next(f for f in d.findings if f.id == "h2-frame-settings")
    assert frames.compares == ("h2", "h1"), frames.compares
    assert "vs HTTP/1.1" in frames.summary, frames.summary
    assert ("Judged beside only the protocols of HTTP/2's own first hop: HTTP/2 went through "
            f"the proxy {PROXY}, SSH direct") in frames.summary, frames.summary
    assert "h2-frame-settings" not in [f.id for f in d.dropped]
