"""A clone stopped in the server's pack phase is the server's pack preparation (issue 42's
bound, its cost): the lab's CPU-starved upload-pack (``slow-pack-generation``) talked 25.0 s
without a pack byte at the defaults (stall timeout 15 s + budget 10 s), was stopped
``server-stall``, and the run ranked ``path-mtu-blackhole`` first from the small segments
of its progress (883 B against an advertised 1448 B), failed, exit 9. The stop is now the
evidence of ``server-pack-generation``: cost the wait, the server's last words, the bound;
the failure explained by it; never a black hole while the server's words came through."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.assembly import download_observations
from gitnetdiag.diagnosis.transfers import PackWait, TransferObservation
from tests.diagnosis.test_receiver_blackhole import STALLED, STARVED_TCP
from tests.diagnosis.test_transfer_culprits import HEALTHY, PHASES

# As the lab's default run measured it (h1 and git://, 50 ms): the request sent at 1.38 s,
# counting done (2004 objects), the delta search at 90% when the 25 s bound stopped it.
WORDS = "Compressing objects:  90% (1803/2003)"
CUT_PHASES = replace(PHASES, request_sent_s=1.38, first_pack_byte_s=None,
                     server_objects_counted=2004, server_objects_compressed=None,
                     server_compressing_done_s=None)
CUT = TransferObservation(
    protocol="h1", repeat=1, outcome="stalled", moved_bytes=15_680, measured_s=0.0,
    rate_bytes_per_s=None, wall_s=27.6, phases=CUT_PHASES, stopped="server-stall",
    tcp=replace(STARVED_TCP, received_bytes=15_680), path_rtt_s=0.05,
    last_line=f"no pack after 25.0 s: the server sent only progress, last 'remote: {WORDS}' "
    "(15680 B received)",
    pack_wait=PackWait(wait_s=25.0, server_words=WORDS, words_only=True, bound_s=25.0))


def _cut(**changes: object) -> TransferObservation:
    wait = CUT.pack_wait
    assert wait is not None
    pack = {k: changes.pop(k) for k in ("wait_s", "server_words", "words_only", "bound_s")
            if k in changes}
    return replace(CUT, pack_wait=replace(wait, **pack), **changes)  # type: ignore[arg-type]


def test_a_clone_cut_while_the_server_talks_is_its_pack_preparation() -> None:
    """Both transports cut at the bound: ranked first at the wait, the black hole not ranked
    (the words got through), the run failed but explained, the headline the preparation."""
    result = diagnose(download_observations([CUT, _cut(protocol="git", wall_s=25.6)]))
    ids = [f.id for f in result.findings]
    assert ids[:1] == ["server-pack-generation"], ids
    assert "path-mtu-blackhole" not in ids
    top = result.findings[0]
    assert top.cost_s == 25.0 and top.score >= 0.5
    wait = next(e for e in top.evidence if e.what.startswith("wait for the first pack byte"))
    assert (wait.value, wait.unit, wait.threshold, wait.comparison) == (25.0, "s", 25.0, ">=")
    assert "stopped by the bound" in wait.text and "at least" in wait.text
    said = next(e for e in top.evidence if e.what == "the server's last words")
    assert said.text == f"remote: {WORDS}"
    assert any(e.what == "objects the server counted" and e.value == 2004 for e in top.evidence)
    assert "repack -adb" in top.fix and "--budget" in top.fix and "--stall-timeout" in top.fix
    assert "25.0 s" in top.summary and WORDS in top.summary
    assert result.verdict == "failed"
    assert [(f.protocol, f.explained_by) for f in result.measurement_failures] == [
        ("h1", "server-pack-generation"), ("git", "server-pack-generation")]
    assert result.headline.startswith(
        "HTTP/1.1 and git:// clones fail (server-pack-generation): the server was still "
        "preparing the pack")
    assert "pack preparation" in result.headline


def test_a_cut_clone_beside_a_complete_one_is_explained_and_the_run_degraded() -> None:
    """One clone had its pack after 20 s, the next was cut at 25 s: the protocol measured,
    its stall explained by the preparation (the costlier clone prices it)."""
    whole = replace(HEALTHY, wall_s=24.0, phases=replace(
        PHASES, request_sent_s=1.4, first_pack_byte_s=21.4, total_s=24.0))
    result = diagnose(download_observations([whole, _cut(repeat=2)]))
    assert [f.id for f in result.findings][:1] == ["server-pack-generation"]
    assert result.verdict == "degraded"
    assert [(f.reference, f.explained_by) for f in result.measurement_failures] == [
        ("fetch-stalled", "server-pack-generation")]


def test_a_silence_while_counting_is_the_server_s_too() -> None:
    """The server said ``Counting objects: 12%`` and nothing for the stall timeout: its pack
    was not ready (the quiet stop, not the words-only bound)."""
    quiet = _cut(server_words="Counting objects:  12% (5/41)", words_only=False, bound_s=15.0,
                 wait_s=16.2)
    result = diagnose(download_observations([quiet]))
    assert [f.id for f in result.findings][:1] == ["server-pack-generation"]
    assert result.findings[0].cost_s == 16.2
    assert result.measurement_failures[0].explained_by == "server-pack-generation"


def test_no_preparation_once_the_pack_was_ready_or_the_words_stopped() -> None:
    """A silence after the delta search was done (the lab's black hole: "Compressing objects:
    100% (9/9), done.", then nothing), amid it (git:// in the hole stopped at 66%: progress
    that stops coming may be lost on the path), or a stall with no pack-phase stop at all
    (mid-pack) is not the server's preparation: the black hole keeps its lab case."""
    ready = replace(STALLED, stopped="server-stall", tcp=replace(STARVED_TCP, peer_mss_bytes=1448),
                    pack_wait=PackWait(wait_s=6.3, words_only=False, bound_s=6.0,
                                       server_words="Compressing objects: 100% (9/9), done."))
    amid = replace(ready, protocol="git", pack_wait=replace(
        ready.pack_wait, server_words="Compressing objects:  66% (6/9)"))  # type: ignore[type-var]
    talking_ready = replace(ready, pack_wait=replace(ready.pack_wait, words_only=True))  # type: ignore[type-var]
    for clone in (ready, amid, talking_ready, replace(CUT, pack_wait=None)):
        assert not clone.cut_while_preparing, clone
    ids = [f.id for f in diagnose(download_observations([ready])).findings]
    assert ids[:1] == ["path-mtu-blackhole"] and "server-pack-generation" not in ids
    assert "server-pack-generation" not in [
        f.id for f in diagnose(download_observations([amid])).findings]


def test_the_preparation_explains_only_the_clones_it_stopped() -> None:
    """A protocol whose clones stalled mid-pack (no pack-phase stop) is not explained by a
    preparation measured on another protocol's cut clone."""
    mid_pack = replace(CUT, protocol="git", pack_wait=None, stopped="stall",
                       last_line="stalled mid-pack: no byte for 15.0 s after 2000000 B",
                       tcp=None)
    result = diagnose(download_observations([CUT, mid_pack]))
    assert [f.id for f in result.findings][:1] == ["server-pack-generation"]
    assert result.verdict == "failed"
    explained = {f.protocol: f.explained_by for f in result.measurement_failures}
    assert explained == {"h1": "server-pack-generation", "git": None}
