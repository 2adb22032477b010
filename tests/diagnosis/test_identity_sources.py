"""Who answered, from the run directory: the native probe's headers, git's curl trace for
runs without it, and old run directories that kept only ``server`` headers."""

from __future__ import annotations

import json
from pathlib import Path

from gitnetdiag.diagnosis.servers import identify
from gitnetdiag.pipeline._native import native_fingerprint
from gitnetdiag.report.units import answered_by
from gitnetdiag.rundir.native import first_response_identity

CURL_TRACE = """\
10:00:00.000001 http.c:684              => Send header: GET /r/info/refs HTTP/2
10:00:00.050000 http.c:684              <= Recv header: HTTP/2 200
10:00:00.050001 http.c:684              <= Recv header: server: ATS/9.2.9
10:00:00.050002 http.c:684              <= Recv header: content-type: text/plain
10:00:00.050003 http.c:684              <= Recv header: via: 1.1 varnish (Varnish/7.1)
10:00:00.050004 http.c:684              <= Recv header:
10:00:00.060000 http.c:684              => Send header: POST /r.git/git-receive-pack HTTP/2
10:00:00.090000 http.c:684              <= Recv header: HTTP/2 200
10:00:00.090001 http.c:684              <= Recv header: server: other/1
"""


def test_first_response_of_a_curl_trace() -> None:
    assert first_response_identity(CURL_TRACE) == (
        "server: ATS/9.2.9", "via: 1.1 varnish (Varnish/7.1)")
    assert first_response_identity("") == ()


def test_curl_trace_is_read_only_without_the_native_probe(tmp_path: Path) -> None:
    (tmp_path / "h2-1.curl.txt").write_text(CURL_TRACE)
    assert native_fingerprint(tmp_path)["identity_headers"] == (
        "server: ATS/9.2.9", "via: 1.1 varnish (Varnish/7.1)")
    # An old native record (server headers only, no identity headers) stays readable.
    record = {"schema": "gitnetdiag.native-h2/2", "target": "h:443", "alpn": "h2",
              "server_headers": ["nginx/1.22.1"], "upload_stream_id": 1,
              "request_bytes": 1, "ended_t_ns": 1, "settings_sent": [],
              "settings_received": [], "streams_opened": [], "window_updates": [],
              "data_sent": [], "report": {}, "ref": "r", "ref_deleted": True,
              "auth": "none", "tls_ca": "system", "proxy": None, "warnings": []}
    (tmp_path / "native-h2.json").write_text(json.dumps(record))
    found = native_fingerprint(tmp_path)
    assert found["server_headers"] == ("nginx/1.22.1",)
    assert found["identity_headers"] == ()
    who = identify(headers=found["identity_headers"], server_headers=found["server_headers"])
    assert who.server == "nginx"


def test_the_server_line_says_an_unrecognised_name() -> None:
    https, ssh = answered_by(identify(headers=("server: Zeus/4.3",)))
    assert https.startswith("Zeus/4.3 (from it calls itself 'Zeus/4.3'")
    assert ssh == "-"
    chain, _ = answered_by(identify(headers=("server: nginx", "via: 1.1 varnish (Varnish/7)")))
    assert chain.startswith("1.1 varnish (Varnish/7)") and "hops: Varnish" in chain


def test_the_native_record_gives_the_connection_window_before_data(tmp_path: Path) -> None:
    """HAProxy's first frames as the native probe records them behind an Apache header: its
    SETTINGS, its first connection WINDOW_UPDATE only after the POST's first DATA frame."""
    record = {"schema": "gitnetdiag.native-h2/2", "target": "h:8443", "alpn": "h2",
              "server_headers": ["Apache/2.4.71 (Debian)"],
              "identity_headers": ["server: Apache/2.4.71 (Debian)"], "upload_stream_id": 3,
              "request_bytes": 1, "ended_t_ns": 90,
              "settings_sent": [],
              "settings_received": [{"t_ns": 5, "settings": {"ENABLE_CONNECT_PROTOCOL": 1,
                                                             "MAX_CONCURRENT_STREAMS": 100}}],
              "streams_opened": [],
              "window_updates": [{"t_ns": 70, "stream_id": 0, "increment_bytes": 2147418112}],
              "data_sent": [{"t_ns": 60, "stream_id": 3, "size_bytes": 16384}],
              "report": {}, "ref": "r", "ref_deleted": True, "auth": "none",
              "tls_ca": "system", "proxy": None, "warnings": []}
    (tmp_path / "native-h2.json").write_text(json.dumps(record))
    found = native_fingerprint(tmp_path)
    assert found["h2_connection_window_before_data_bytes"] == 65535
    who = identify(headers=found["identity_headers"], h2_settings=found["h2_server_settings"],
                   connection_window_bytes=found["h2_connection_window_before_data_bytes"])
    assert who.server == "apache" and who.terminator == "haproxy"
