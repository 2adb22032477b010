"""The capture table renderer returns text, like every renderer in report/."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.report.capture import print_capture_analysis
from gitnetdiag.report.console import console_output, text_console
from tests.capture.craft import Conversation


def test_capture_table_is_text_with_one_block_per_connection(tmp_path: Path) -> None:
    """Header line with the counts, the connection title, the rows; no colour codes."""
    conv = Conversation(client=("10.0.0.1", 40000), server=("10.0.0.2", 443))
    conv.handshake()
    conv.segment("c", "PA", dt_s=0.001, payload=1000)
    conv.segment("s", "A", dt_s=0.05)
    path = conv.pcap(tmp_path / "one.pcap")
    console = text_console(width=120)
    print_capture_analysis(analyze_capture(path), console)
    text = console_output(console)
    # The header wraps at the width when the path is long (pytest-xdist's deeper tmp dirs).
    header = " ".join(text.split("#0", 1)[0].split())
    assert header.startswith(f"{path}: 5 frames, 5 TCP segments, 1 connection(s)"), header
    assert "#0 https  a=10.0.0.1:40000  b=10.0.0.2:443" in text
    assert "retransmissions" in text
    assert "\x1b[" not in text
