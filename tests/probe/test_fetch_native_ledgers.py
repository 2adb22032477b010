"""The fetch run's native downloads (``--native``): each is reported with its size and
rate, a failed one becomes a warning, and the run is saved after each (no server: the
downloads are stand-ins)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gitnetdiag.probe import credentials, fetchh2, fetchrun, sshfetch
from gitnetdiag.rundir.ledgers import H2CreditLedger, SshCreditLedger
from gitnetdiag.vocabulary import TransportKind


class _Reporter:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, bool]] = []

    def begin(self, name: str) -> None:
        self.lines.append(("begin", name, True))

    def done(self, name: str, text: str, *, ok: bool = True) -> None:
        self.lines.append((name, text, ok))


class _State(SimpleNamespace):
    saves = 0

    def save(self) -> None:
        self.saves += 1


def _state(tmp_path: Path) -> Any:
    options = SimpleNamespace(
        urls={TransportKind.SSH: "ssh://git@127.0.0.1:2222/r.git",
              TransportKind.H2: "https://127.0.0.1:8443/r.git"},
        ssh_key=None, ssh_known_hosts=None, budget_s=10.0, stall_timeout_s=5.0,
        timeout_s=30.0, ca_file=None, insecure=True, out_dir=tmp_path)
    ssh_path = SimpleNamespace(endpoint="127.0.0.1:2222", connect_rtt_min_s=0.05)
    return _State(options=options, reporter=_Reporter(), warnings=[], branch="b",
                  ssh_downloads=[], h2_downloads=[], protocols={}, paths=[ssh_path])


def test_native_ssh_download_is_reported_and_saved(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    record = SshCreditLedger(target="127.0.0.1:2222", outcome="bounded",
                               received_bytes=3 * 2**20, rate_bytes_per_s=1.5 * 2**20)
    given: list[dict[str, Any]] = []
    monkeypatch.setattr(sshfetch, "ssh_download", lambda url, **kw: given.append(kw) or record)
    state = _state(tmp_path)
    fetchrun._ssh_ledger(state)
    assert state.ssh_downloads == [record]
    # Bounded by its path's 50 ms: twenty round trips, 1.1 s of pack.
    assert given[0]["budget_s"] == 1.1
    assert state.reporter.lines[-1] == ("native ssh download",
                                        "bounded, 3.0 MiB, 1.50 MiB/s", True)
    assert state.warnings == [] and state.saves == 1


def test_a_failed_native_h2_download_is_a_warning(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(credentials, "http_access", lambda url, **_: None)
    monkeypatch.setattr(fetchh2, "DOWNLOAD_WINDOWS", (("small", 65535), ("large", 2**24)))

    bounds: list[float] = []

    def download(url: str, *, label: str, window_bytes: int, **kw: Any) -> H2CreditLedger:
        bounds.append(kw["budget_s"])
        if label == "small":
            return H2CreditLedger(label=label, window_bytes=window_bytes, outcome="failed",
                                    error="connection reset")
        return H2CreditLedger(label=label, window_bytes=window_bytes, outcome="ok",
                                received_bytes=2**20, rate_bytes_per_s=2**19)

    monkeypatch.setattr(fetchh2, "h2_download", download)
    state = _state(tmp_path)
    fetchrun._h2_ledgers(state)
    assert [r.label for r in state.h2_downloads] == ["small", "large"]
    assert [line for line in state.reporter.lines if line[0] != "begin"] == [
        ("native h2 download, small window", "connection reset", False),
        ("native h2 download, large window", "ok, 1.0 MiB, 0.50 MiB/s", True)]
    assert state.warnings == ["native HTTP/2 download (small window): connection reset"]
    assert state.saves == 2
    assert bounds == [2.1] * 2  # its path not measured: the budget of an unknown RTT


def test_a_native_ssh_download_follows_a_single_jump_host_and_warns_of_a_chain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitnetdiag.hops import FirstHop

    record = SshCreditLedger(target="127.0.0.1:2222", outcome="ok")
    given: list[FirstHop | None] = []
    monkeypatch.setattr(sshfetch, "ssh_download",
                        lambda url, **kw: given.append(kw["first_hop"]) or record)
    for proxy, warned in (("u@jump", False), ("u@jump,v@other", True)):
        state = _state(tmp_path)
        hop = FirstHop(protocol="ssh", kind="ssh-proxy", proxy=proxy, source="ssh -G proxyjump")
        state.protocols = {TransportKind.SSH: SimpleNamespace(first_hop=hop)}
        fetchrun._ssh_ledger(state)
        assert given[-1] is hop  # the download decides from git's first hop
        assert any(w.startswith("the native SSH download connected directly to the server")
                   for w in state.warnings) is warned, state.warnings
