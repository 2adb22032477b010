"""The decrypted HTTP/1.1 response heads, parsed from tshark's ``-T fields`` text (the
line recorded from ``tshark 4.0.17 -o http.desegment_body:FALSE -Y http.response`` on the
keylogged clone of tests/pipeline/test_clone_ends.py)."""

from __future__ import annotations

import pytest

from gitnetdiag.analysis.h1responses import H1Response, parse_h1_responses
from gitnetdiag.errors import CaptureFormatError

RECORDED = "443\t40000\t200\t8388608\t901232\n"


def test_a_response_head_with_its_length_and_segment() -> None:
    assert parse_h1_responses(RECORDED) == [H1Response(
        server_port=443, client_port=40000, status=200, content_length=8388608,
        segment_seq=901232)]


def test_a_chunked_answer_has_no_length_and_a_line_without_status_is_skipped() -> None:
    text = "443\t40000\t200\t\t901232\n443\t40000\t\t\t901300\n\n"
    (only,) = parse_h1_responses(text)
    assert only.content_length is None and only.status == 200


def test_a_line_with_the_wrong_columns_is_a_format_error() -> None:
    with pytest.raises(CaptureFormatError, match="expected 5"):
        parse_h1_responses("443\t40000\t200\n")
