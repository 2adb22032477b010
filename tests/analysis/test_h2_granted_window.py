"""git's own HTTP/2 frames of a clone (decrypted, ``--full``) -> the windows it advertised."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.analysis.h2ledger import git_h2_window

PREFACE = "PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"


def _row(number: int, t: float, src_port: int, types: str, sids: str, lengths: str, *,
         magic: str = "", setting_ids: str = "", initial: str = "",
         increments: str = "") -> str:
    """One line of tshark's fields (TSHARK_FIELDS order), client 198.18.1.2 <-> server
    198.18.2.2:443."""
    src = "198.18.1.2" if src_port != 443 else "198.18.2.2"
    return "\t".join([str(number), f"{1795300000 + t:.6f}", "0", src, "", str(src_port),
                      magic, types, sids, lengths, ",".join(["0x00"] * len(types.split(","))),
                      setting_ids, initial, "", increments])


# libcurl 8.x as issue 26 describes it: a small stream window in the first SETTINGS, the
# connection window raised by a WINDOW_UPDATE on stream 0, then the pack.
DOWNLOAD = "\n".join([
    _row(4, 0.000, 40000, "4,8", "0,0", "18,4", magic=PREFACE, setting_ids="2,4,3",
         initial="65536", increments="1048510"),
    _row(6, 0.050, 443, "4,4", "0,0", "18,0", setting_ids="3,4", initial="65535"),
    _row(7, 0.051, 40000, "1", "1", "60"),
    _row(9, 0.102, 443, "1,0", "1,1", "40,16384"),
    _row(10, 0.103, 443, "0,0", "1,1", "16384,16384"),
    _row(11, 0.104, 40000, "8,8", "1,0", "4,4", increments="32768,32768"),
    _row(12, 0.105, 443, "0", "1", "8000"),
]) + "\n"


def test_gits_stream_and_connection_windows_are_read_from_its_frames() -> None:
    window = git_h2_window(DOWNLOAD)
    assert window is not None
    assert window.stream_window_bytes == 65536  # git's SETTINGS, not the server's 65,535
    assert window.connection_window_bytes == 65535 + 1048510  # before the first DATA only
    assert window.window_updates == 3 and window.data_bytes == 3 * 16384 + 8000
    assert window.first_frame == 4


def test_a_client_that_sends_no_window_setting_has_the_default() -> None:
    text = (Path(__file__).parent / "data" / "h2_small_window_push.tsv").read_text()
    window = git_h2_window(text)
    assert window is not None and window.stream_window_bytes == 65535
    assert window.connection_window_bytes == 65535


def test_no_download_or_not_tsharks_fields_is_none() -> None:
    assert git_h2_window("") is None
    assert git_h2_window("a\tb\n") is None
    assert git_h2_window(_row(4, 0.0, 40000, "4", "0", "18", magic=PREFACE) + "\n") is None
