"""One unit convention for every report: evidence numbers become text only here."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.model import Evidence, Quantity, Unit
from gitnetdiag.report.units import (
    fmt_evidence_threshold,
    fmt_evidence_value,
    fmt_quantity,
)


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (65535, "B", "65535 B"),
        (387_096.8, "B", "387.1 kB"),
        (24e6, "B", "24.0 MB"),
        (1_310_700.0, "B/s", "1.31 MB/s"),
        (838_000.0, "B/s", "838.0 kB/s"),
        (0.05, "s", "50 ms"),
        (18.4, "s", "18.4 s"),
        (0.96, "ratio", "96%"),
        (0.005, "ratio", "0.50%"),
        (366, "count", "366"),
        (1.5, "count", "1.5"),
        (150, "IOPS", "150 IOPS"),
        (None, "B", "-"),
    ],
)
def test_quantity(value: float | None, unit: Unit, text: str) -> None:
    assert fmt_quantity(value, unit) == text


def test_value_with_whole_qualifier_or_text() -> None:
    counted = Evidence(what="failed", value=22, unit="count", of=150, text="timeout 22")
    assert fmt_evidence_value(counted) == "22 of 150 (timeout 22)"
    assert fmt_evidence_value(Evidence(what="sysctl", text="4096 131072 262144")) == (
        "4096 131072 262144"
    )
    assert fmt_evidence_value(Evidence(what="rate", unit="B/s")) == "-"


def test_threshold_reads_comparison_basis_and_number() -> None:
    window = Evidence(
        what="window", value=65535, unit="B", threshold=387_096.8, comparison="<",
        basis="BDP (SSH push x RTT)",
    )
    assert fmt_evidence_threshold(window) == "< BDP (SSH push x RTT) = 387.1 kB"
    derived = Evidence(
        what="rate", value=1.3e6, unit="B/s", threshold=1_310_700.0,
        basis="window / RTT = {} / {}",
        basis_terms=(Quantity(value=65535, unit="B"), Quantity(value=0.05, unit="s")),
    )
    assert fmt_evidence_threshold(derived) == "window / RTT = 65535 B / 50 ms = 1.31 MB/s"
    counter = Evidence(what="overflows", value=116, unit="count", threshold=0, comparison=">")
    assert fmt_evidence_threshold(counter) == "> 0"
    words = Evidence(what="window scale option", text="absent", basis="present (RFC 7323)")
    assert fmt_evidence_threshold(words) == "present (RFC 7323)"
    assert fmt_evidence_threshold(Evidence(what="frames", value=366, unit="count")) == ""
