"""``gitnetdiag analyze``: what the terminal shows for awkward addresses and key sources."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.cli import app
from gitnetdiag.commands.analyze import render_analysis
from gitnetdiag.report import h2ledger_table
from gitnetdiag.tools import tshark
from tests.capture.craft import Conversation


def _ipv6_capture(tmp_path: Path, name: str = "v6.pcap") -> Path:
    conv = Conversation(client=("2001:db8::b:1", 40000), server=("fe80::1:2", 443), ipv6=True)
    conv.handshake()
    conv.segment("c", "PA", dt_s=0.001, payload=100)
    conv.segment("s", "A", dt_s=0.05)
    return conv.pcap(tmp_path / name)


def test_ipv6_endpoints_are_bracketed_and_not_emoji(tmp_path: Path) -> None:
    """``::b:`` is no emoji code and ``[addr]`` no markup tag: the title prints as is."""
    console = Console(record=True, width=200)
    render_analysis(analyze_capture(_ipv6_capture(tmp_path)), console)
    text = console.export_text()
    assert "#0 https  a=[2001:db8::b:1]:40000  b=[fe80::1:2]:443" in text
    assert "\N{NEGATIVE SQUARED LATIN CAPITAL LETTER B}" not in text


def test_markup_in_file_names_and_warnings_prints_as_is(tmp_path: Path) -> None:
    """A file name with ``[bold]`` and ``:smile:`` in it, cut short so that a warning names it."""
    path = _ipv6_capture(tmp_path, "[bold]cap:smile:.pcap")
    path.write_bytes(path.read_bytes()[:-10])
    console = Console(record=True, width=300)
    render_analysis(analyze_capture(path), console)
    text = console.export_text()
    assert f"{path}: 4 frames" in text
    assert "warning: the capture ends in the middle of a packet record" in text


def test_no_keylog_hint_when_keylog_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """"give --keylog?" is advice for someone who gave none."""
    keys = tmp_path / "keys.log"
    keys.write_text("CLIENT_RANDOM 00 11\n")
    monkeypatch.setattr(tshark, "h2_ledgers_from_capture", lambda pcap, keylog: [])
    argv = ["analyze", str(_ipv6_capture(tmp_path)), "--keylog", str(keys)]
    result = CliRunner().invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "no decrypted HTTP/2 traffic" in result.output
    assert "give --keylog?" not in result.output


def test_keylog_hint_in_the_renderer() -> None:
    """The renderer itself: the hint without keys, the other reason with them."""
    for keys_given, expected in ((False, "give --keylog?"), (True, "the keys given decrypt")):
        console = Console(record=True, width=200)
        h2ledger_table.render_h2_ledgers([], console, keys_given=keys_given)
        text = console.export_text()
        assert expected in text
        assert keys_given != ("give --keylog?" in text)
