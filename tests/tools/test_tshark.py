"""The tshark adapter: the recorded push decoded by tshark gives the recorded ledgers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gitnetdiag.analysis.h2ledger import h2_ledgers_from_rows, parse_tshark_fields
from gitnetdiag.errors import InputError
from gitnetdiag.tools.tshark import h2_ledgers_from_capture

DATA = Path(__file__).parent.parent / "analysis" / "data"


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_pcapng_with_embedded_secrets_matches_recorded_output() -> None:
    from_capture = h2_ledgers_from_capture(DATA / "h2_small_window_push.pcapng", None)
    from_text = h2_ledgers_from_rows(
        parse_tshark_fields((DATA / "h2_small_window_push.tsv").read_text())
    )
    assert [ledger.to_dict() for ledger in from_capture] == [
        ledger.to_dict() for ledger in from_text
    ]


def test_missing_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        h2_ledgers_from_capture(tmp_path / "none.pcap", None)
    with pytest.raises(InputError):
        h2_ledgers_from_capture(DATA / "h2_small_window_push.pcapng", tmp_path / "none.keys")
