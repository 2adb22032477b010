"""Issue 24: a CA bundle with no certificate is the path step's error, not an exception
escaping the thread that measures the path."""

from __future__ import annotations

import socket

from gitnetdiag.probe.pathinfo import measure_path


def test_ca_file_without_a_certificate_is_the_tls_steps_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        result = measure_path("127.0.0.1", port, tls=True, ca_file="/etc/passwd",
                              attempts=1, timeout_s=2.0)
    assert result.connect_rtt_min_s is not None
    assert result.tls_handshake_s is None
    assert result.error is not None and result.error.startswith("tls: "), result.error
