"""``editcap``: a capture cut to its packets' headers (the ``--bundle`` attachment)."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.proc import run


def headers_only(capture: Path, out: Path, snaplen: int) -> None:
    """Write ``capture`` to ``out`` with every packet cut to ``snaplen`` bytes."""
    run(["editcap", "-s", str(snaplen), str(capture), str(out)], timeout_s=120,
        what="editcap", missing_hint="install tshark (editcap comes with it: wireshark-common)")
