"""ALPN from TLS Hellos: real handshake bytes from Python's ssl, and tshark output."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import pytest

from gitnetdiag.analysis.tls import (
    alpn_by_connection,
    negotiated_alpn,
    parse_hello,
    parse_tls_fields,
)
from gitnetdiag.errors import CaptureFormatError
from tests.tlsutil import make_tls_files

DATA = Path(__file__).parent / "data"




def _hellos(tmp_path: Path, max_version: ssl.TLSVersion) -> tuple[bytes, bytes]:
    """ClientHello and ServerHello records from an in-memory handshake."""
    cert, key = make_tls_files(tmp_path)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    server_ctx.set_alpn_protocols(["h2", "http/1.1"])
    server_ctx.maximum_version = max_version
    client_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_ctx.load_verify_locations(cert)
    client_ctx.set_alpn_protocols(["h2", "http/1.1"])
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    client = client_ctx.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
    server = server_ctx.wrap_bio(s_in, s_out, server_side=True)
    with pytest.raises(ssl.SSLWantReadError):
        client.do_handshake()
    client_hello = c_out.read()
    s_in.write(client_hello)
    with pytest.raises(ssl.SSLWantReadError):
        server.do_handshake()
    return client_hello, s_out.read()


def test_tls12_server_hello_names_h2(tmp_path: Path) -> None:
    client_record, server_record = _hellos(tmp_path, ssl.TLSVersion.TLSv1_2)
    client = parse_hello(client_record)
    server = parse_hello(server_record)
    assert client is not None and server is not None
    assert client.alpn == ("h2", "http/1.1")
    assert server.kind == "server" and not server.tls13
    assert negotiated_alpn(client, server) == "h2"


def test_tls13_choice_is_encrypted(tmp_path: Path) -> None:
    client_record, server_record = _hellos(tmp_path, ssl.TLSVersion.TLSv1_3)
    client, server = parse_hello(client_record), parse_hello(server_record)
    assert server is not None and server.tls13
    assert negotiated_alpn(client, server) == "encrypted"


def test_headers_only_and_garbage() -> None:
    assert negotiated_alpn(None, None) == "unknown"
    assert parse_hello(b"\x17\x03\x03\x00\x10" + b"x" * 16) is None
    with pytest.raises(CaptureFormatError):
        parse_hello(b"\x16\x03\x01\x00\x50\x01\x00\x00\x4c\x03\x03")


def test_tshark_fields_pairing_by_direction() -> None:
    text = "\n".join(
        [
            "0\t10.0.0.1\t\t5000\t1\th2,http/1.1\t0x0304,0x0303",
            "0\t10.0.0.2\t\t443\t2\t\t0x0304",
            "1\t10.0.0.1\t\t5001\t1\th2,http/1.1\t0x0303",
            "1\t10.0.0.2\t\t443\t2,11\thttp/1.1\t",
            "2\t10.0.0.1\t\t5002\t1\th2\t0x0304",
        ]
    )
    by_stream = {c.tcp_stream: c for c in parse_tls_fields(text)}
    assert by_stream[0].negotiated == "encrypted"
    assert by_stream[0].offered == ("h2", "http/1.1")
    assert by_stream[1].negotiated == "http/1.1"
    assert by_stream[2].negotiated == "unknown"


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_recorded_capture_with_embedded_secrets() -> None:
    connections = alpn_by_connection(DATA / "h2_small_window_push.pcapng")
    assert [c.negotiated for c in connections] == ["h2", "h2"]
    assert connections[0].client.startswith("127.0.0.1:")
