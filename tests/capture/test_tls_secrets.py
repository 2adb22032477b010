"""A pcapng carrying TLS secrets (DSB) is decoded without --keylog."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gitnetdiag.analysis.capture_analysis import analyze_capture

DATA = Path(__file__).resolve().parents[1] / "analysis" / "data"
WITH_SECRETS = DATA / "h2_small_window_push.pcapng"
PLAIN = Path(__file__).resolve().parents[2] / "captures" / "healthy" / "h1-1.pcap"


def test_reader_notices_the_decryption_secrets_block() -> None:
    assert analyze_capture(WITH_SECRETS).has_tls_secrets is True
    assert analyze_capture(PLAIN).has_tls_secrets is False


def test_analyze_decodes_http2_from_embedded_secrets() -> None:
    """No --keylog: the HTTP/2 ledger still shows the 65535 window from the embedded keys."""
    proc = subprocess.run(
        [sys.executable, "-m", "gitnetdiag", "analyze", str(WITH_SECRETS), "--json", "-"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    data = json.loads(proc.stdout)
    assert data["has_tls_secrets"] is True
    ledgers = data["h2_ledgers"]
    assert ledgers, "no HTTP/2 ledger decoded"
    ledger = ledgers[0]
    assert ledger["server_settings"]["INITIAL_WINDOW_SIZE"] == 65535
    assert ledger["server_initial_window_bytes"] == 65535
    assert ledger["data_bytes_to_server"] > 65535 and ledger["stall_count"] > 0
