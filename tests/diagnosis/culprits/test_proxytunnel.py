"""``proxy-refused-tunnel``: the forward proxy refused git's CONNECT, in its own terms."""

from __future__ import annotations

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import Observations, ProtocolObservation, PushObservation
from gitnetdiag.hops import FirstHop, ProxyAnswer
from gitnetdiag.outcomes import FailureKind
from tests.diagnosis.culprits.crafted import (
    MB,
    Case,
    assert_ranks_first_with_its_fix,
    cap,
    proto,
    run,
)

TINYPROXY = ProxyAnswer(status=400, status_line="HTTP/1.1 400 Bad Request",
                        server="tinyproxy/1.11.1", body="400 Bad Request ...")


def case_proxy_refused_tunnel() -> Observations:
    """tinyproxy answers a CONNECT to a port outside its ConnectPort lines 403; curl says
    ``CONNECT tunnel failed, response 403``."""
    refused = PushObservation(duration_s=0.01, bytes=MB, ok=False, error_kind=FailureKind.OTHER,
                         error_message="fatal: unable to access 'https://git.lab/r.git/': "
                         "CONNECT tunnel failed, response 403")
    hops = (FirstHop(protocol="h2", kind="http-proxy", proxy="10.77.0.1:8888",
                     source="https_proxy", answer=TINYPROXY), FirstHop(protocol="ssh"))
    return Observations(
        run=run(target_url="https://git.lab/r.git", first_hops=hops),
        protocols={"h2": ProtocolObservation(pushes=(refused,) * 3),
                   "ssh": proto(MB / 40e6, capture=cap())})


CASES: dict[str, Case] = {
    "proxy-refused-tunnel": (case_proxy_refused_tunnel, ("ConnectPort", "no_proxy")),
}


def test_culprit_ranks_first_with_its_fix() -> None:
    assert_ranks_first_with_its_fix("proxy-refused-tunnel", CASES["proxy-refused-tunnel"])


def test_the_refusal_is_named_with_the_proxy_and_explains_the_failure() -> None:
    d = diagnose(case_proxy_refused_tunnel())
    top = d.findings[0]
    assert top.id == "proxy-refused-tunnel"
    assert "the forward proxy 10.77.0.1:8888 (tinyproxy/1.11.1) refused the CONNECT tunnel " \
           "with 403" in top.summary
    assert "`ConnectPort` lines in tinyproxy.conf" in top.fix
    assert d.verdict == "failed"
    assert any(f.explained_by == "proxy-refused-tunnel" for f in d.measurement_failures)


def test_a_refusal_without_a_proxy_on_the_path_is_not_this_culprit() -> None:
    obs = case_proxy_refused_tunnel()
    direct = Observations(run=run(target_url="https://git.lab/r.git"), protocols=obs.protocols)
    assert "proxy-refused-tunnel" not in [f.id for f in diagnose(direct).findings]
