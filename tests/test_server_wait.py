"""trace2's wait for the server, corrected by the kernel's view of when the pack landed.

Over SSH, pack-objects exits once the pack is in the send buffer: on a clamped window
the buffer drains for seconds that trace2 counts as the server's. A recorded lab run
(tcp-rmem-clamp, 3 MiB over SSH, 50 ms) had trace2 say 2.73 s of server wait while the
kernel still had unacknowledged pack bytes until 0.3 s before git exited; that push
alone ranked `server-processing` above the clamp.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gitnetdiag.analysis.tcpinfo import last_undelivered_s
from gitnetdiag.pipeline._run import server_wait_s, trace2_phases
from gitnetdiag.rundir import PushRecord
from gitnetdiag.rundir.records import Trace2Record

PACK = 3_146_449


def _sample(t_s: float, local: str, acked: float, sent: float) -> dict[str, Any]:
    return {"t_s": t_s, "local": local, "peer": "198.18.2.2:22", "source": "ss -tin",
            "counters": {"bytes_acked": acked, "bytes_sent": sent}}


def _record(wall_s: float, server_wait: float, tcpinfo: str | None) -> PushRecord:
    phases = Trace2Record(total_s=wall_s, ref_advertisement_s=0.8, pack_prepare_s=0.001,
                          pack_write_s=1.4, server_wait_s=server_wait, objects_written=6,
                          exit_code=0, events=45)
    return PushRecord(protocol="ssh", repeat=1, branch="b", started_at="", outcome="ok",
                      failure_kind=None, last_line="", wall_s=wall_s, pack_bytes=PACK,
                      rate_bytes_per_s=PACK / wall_s, http_version=None, alpn=None,
                      post_s=None, curl_last_info=None, phases=phases, capture=None,
                      artifacts={"tcpinfo": tcpinfo} if tcpinfo else {})


def _drain(every_s: float = 0.25, until_s: float = 4.75) -> list[dict[str, Any]]:
    """A clamped upload: ~0.66 MB/s from 0.9 s, still unacknowledged at ``until_s``."""
    rows = [_sample(0.25, "c:2", 1_602, 2_809)]  # the handshake socket-less phase
    t = 0.5
    while t <= until_s + 1e-9:
        acked = min(PACK - 100_000, max(0.0, (t - 0.9) * 790_000))
        rows.append(_sample(t, "c:1", acked, acked + 40_000))
        t += every_s
    rows.append(_sample(0.5, "c:9", 500, 600))  # a socket that moved almost nothing
    return rows


def test_the_last_unacknowledged_sample_of_the_upload_socket_bounds_the_upload() -> None:
    assert last_undelivered_s(_drain(), PACK) == 4.75
    delivered = [*_drain(), _sample(5.0, "c:1", PACK + 2_000, PACK + 2_000),
                 _sample(8.0, "c:1", PACK + 2_500, PACK + 2_500)]
    assert last_undelivered_s(delivered, PACK) == 4.75
    assert last_undelivered_s([], PACK) is None
    assert last_undelivered_s([_sample(1.0, "c:1", PACK, PACK)], PACK) is None


def test_send_buffer_drain_is_not_server_time(tmp_path: Path) -> None:
    (tmp_path / "ssh-1.tcpinfo.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in _drain()))
    record = _record(wall_s=5.04, server_wait=2.73, tcpinfo="ssh-1.tcpinfo.jsonl")
    corrected = server_wait_s(record, tmp_path)
    assert corrected.value is not None and abs(corrected.value - 0.29) < 1e-6, corrected
    phases = trace2_phases([record], tmp_path)
    assert phases.value is not None and phases.value.server_wait_s == corrected.value
    assert corrected.notes == () and phases.notes == ()


def test_a_hook_that_holds_the_answer_keeps_its_seconds(tmp_path: Path) -> None:
    """Delivered at 2.1 s, then a 3 s hook: the samples during the hook are all acked."""
    rows = [_sample(t / 4, "c:1", min(PACK + 5_000, t / 4 * 1_500_000),
                    min(PACK + 5_000, t / 4 * 1_500_000) + 1_000) for t in range(1, 22)]
    (tmp_path / "ssh-1.tcpinfo.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    record = _record(wall_s=5.3, server_wait=3.2, tcpinfo="ssh-1.tcpinfo.jsonl")
    assert server_wait_s(record, tmp_path).value == 3.2


def test_without_or_with_damaged_samples_trace2_stands(tmp_path: Path) -> None:
    record = _record(wall_s=5.04, server_wait=2.73, tcpinfo=None)
    assert server_wait_s(record, tmp_path).value == 2.73
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    bad = server_wait_s(_record(5.04, 2.73, "bad.jsonl"), tmp_path)
    assert bad.value == 2.73
    assert bad.notes and "bad.jsonl" in bad.notes[0]
    (tmp_path / "odd.jsonl").write_text('{"t_s": 1, "local": "x"}\n')
    odd = server_wait_s(_record(5.04, 2.73, "odd.jsonl"), tmp_path)
    assert odd.value == 2.73
    assert odd.notes and "odd.jsonl" in odd.notes[0]
    # trace2's phases carry the note of the push they read, not a list handed in.
    assert "odd.jsonl" in trace2_phases([_record(5.04, 2.73, "odd.jsonl")], tmp_path).notes[0]


def test_the_drain_moves_from_the_server_wait_to_the_upload(tmp_path: Path) -> None:
    """SSH's upload rate counted from pack-objects' write alone was 2.3 MB/s on a path
    that carried 0.8 MB/s; with the drain it is the path's rate."""
    (tmp_path / "ssh-1.tcpinfo.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in _drain()))
    record = _record(wall_s=5.04, server_wait=2.73, tcpinfo="ssh-1.tcpinfo.jsonl")
    phases = trace2_phases([record], tmp_path).value
    assert phases is not None and phases.upload_s is not None
    assert abs(phases.upload_s - (1.4 + 2.73 - 0.29)) < 1e-6
    assert 0.7e6 < PACK / phases.upload_s < 0.9e6
    plain = trace2_phases([_record(wall_s=5.04, server_wait=2.73, tcpinfo=None)], tmp_path).value
    assert plain is not None and plain.upload_s == 1.4 and plain.server_wait_s == 2.73
