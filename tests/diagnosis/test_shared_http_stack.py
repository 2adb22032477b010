"""``client-http-stack`` on clones: the push detector, judging a download with the
download's rows of the known-bug table only (``data/libcurl_bugs.toml``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.culprits.knownbugs import bugs_for, load_bugs, parse_bugs
from gitnetdiag.diagnosis.observations import Observations, PushObservation
from gitnetdiag.diagnosis.transfers import TransferObservation
from gitnetdiag.errors import UsageError
from gitnetdiag.outcomes import FailureKind
from tests.diagnosis.culprits.crafted import MB, cap, proto, run
from tests.diagnosis.test_transfer_culprits import HEALTHY
from tests.diagnosis.transfer_cases import ranked


def _clones(libcurl: str, *, failed: int = 3, kind: FailureKind = FailureKind.RESET,
            line: str = "error: RPC failed; curl 92 HTTP/2 stream 7 was not closed cleanly: "
                        "INTERNAL_ERROR (err 2)") -> list[TransferObservation]:
    """Two healthy HTTP/1.1 clones and three HTTP/2 clones, ``failed`` of them failing."""
    h1 = [replace(HEALTHY, repeat=n, libcurl=libcurl) for n in (1, 2)]
    good = replace(HEALTHY, protocol="h2", libcurl=libcurl)
    bad = replace(good, outcome="failed", moved_bytes=200_000, measured_s=0.0,
                  rate_bytes_per_s=None, wall_s=12.0, failure_kind=kind, last_line=line)
    return h1 + [replace(bad if n <= failed else good, repeat=n) for n in (1, 2, 3)]


def _ids(findings: tuple[object, ...]) -> list[str]:
    return [f.id for f in findings]  # type: ignore[attr-defined]


def test_a_clone_on_libcurl_8_10_0_failing_over_http2_ranks_the_download_bug() -> None:
    findings = ranked(_clones("8.10.0"))
    assert _ids(findings)[:1] == ["client-http-stack"], _ids(findings)
    top = findings[0]
    assert "curl issue 14923" in top.summary and "14892" not in top.summary
    assert "3 of 3 HTTP/2 clones failed" in top.summary and "push" not in top.summary
    assert "http.version HTTP/1.1" in top.fix and "not documented" in top.fix
    (version, failures) = top.evidence
    assert version.text == "8.10.0" and "fixed in: not documented" in version.basis
    assert "https://github.com/curl/curl/issues/14923" in version.source
    assert failures.value == 3 and top.cost_s > 12.0


def test_a_hung_clone_on_libcurl_8_1_1_ranks_issue_11201() -> None:
    findings = ranked(_clones("libcurl/8.1.1", failed=1, kind=FailureKind.HUNG,
                                     line="stalled"))
    assert _ids(findings)[:1] == ["client-http-stack"], _ids(findings)
    assert "curl issue 11201" in findings[0].summary
    assert "1 of 3 HTTP/2 clones" in findings[0].summary


@pytest.mark.parametrize("libcurl", ["8.0.1", "8.1.2", "8.9.1", "8.10.1"])
def test_a_release_without_a_download_row_is_not_blamed(libcurl: str) -> None:
    """8.0.1 and 8.1.2 are in the upload's rows (curl issues 11353, 11426), not the
    download's: the same failing clones rank no client-http-stack."""
    assert "client-http-stack" not in _ids(ranked(_clones(libcurl)))


def test_an_affected_release_with_healthy_clones_costs_nothing() -> None:
    assert "client-http-stack" not in _ids(ranked(_clones("8.10.0", failed=0)))


def test_a_push_on_8_10_0_is_still_judged_with_the_upload_row() -> None:
    broken = PushObservation(duration_s=4.0, bytes=MB, ok=False, error_kind="other",
                        error_message="error: RPC failed; curl 16 Error in the HTTP2 framing")
    h2 = proto(2.7, capture=cap())
    obs = Observations(run=run(libcurl_version="8.10.0"),
                       protocols={"h1": proto(2.6, capture=cap()),
                                  "h2": replace(h2, pushes=(h2.pushes[0], broken, broken))})
    top = diagnose(obs).findings[0]
    assert top.id == "client-http-stack"
    assert "curl issue 14892" in top.summary and "14923" not in top.summary
    assert "8.10.1 or newer" in top.fix


def test_every_row_has_a_direction_and_a_source_page() -> None:
    downloads = bugs_for("download")
    assert {bug.reference for bug in downloads} == {"curl issue 11201", "curl issue 14923"}
    assert all(bug.fixed_in is None for bug in downloads)
    assert len(bugs_for("upload")) + len(downloads) == len(load_bugs())
    assert all(bug.source.startswith("https://github.com/curl/curl/issues/")
               for bug in load_bugs())


def test_a_row_without_a_source_page_stops_the_load_naming_it() -> None:
    text = ('[[bug]]\ncomponent = "libcurl"\nversions = ["8.1.0"]\nprotocol = "h2"\n'
            'direction = "download"\nwhat = "x"\nreference = "r"\nfixed_in = "8.2.0"\n'
            'source = "curl issue 1"\n')
    with pytest.raises(UsageError, match="bug 1 has no source page"):
        parse_bugs(text)
    with pytest.raises(UsageError, match="bug 1 has no valid 'direction'"):
        parse_bugs(text.replace('"download"', '"sideways"').replace(
            '"curl issue 1"', '"https://github.com/curl/curl/issues/1"'))
