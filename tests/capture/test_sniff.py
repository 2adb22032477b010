"""capture/sniff.py: the transport of a connection from its first payload bytes."""

from __future__ import annotations

import struct
from pathlib import Path

from scapy.layers.inet import IP, TCP

from gitnetdiag.capture.sniff import sniff_connections
from tests.capture.craft import ETH_HEADER, pcap_bytes


def client_hello(sni: str, alpn: list[str]) -> bytes:
    """A minimal TLS 1.2-framed ClientHello with SNI and ALPN extensions."""
    name = sni.encode()
    sni_ext = struct.pack(">HBH", len(name) + 3, 0, len(name)) + name
    protos = b"".join(bytes([len(p)]) + p.encode() for p in alpn)
    alpn_ext = struct.pack(">H", len(protos)) + protos
    exts = (struct.pack(">HH", 0, len(sni_ext)) + sni_ext
            + struct.pack(">HH", 16, len(alpn_ext)) + alpn_ext)
    body = (b"\x03\x03" + bytes(32) + b"\x00" + struct.pack(">H", 2) + b"\x13\x01"
            + b"\x01\x00" + struct.pack(">H", len(exts)) + exts)
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack(">H", len(hs)) + hs


def _frames(payloads: list[tuple[int, int, bytes]]) -> list[tuple[int, bytes]]:
    out = []
    for i, (sport, dport, data) in enumerate(payloads):
        pkt = IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=sport, dport=dport, flags="PA",
                                                       seq=1000, ack=1) / data
        out.append((1_000_000_000 + i * 1000, ETH_HEADER + bytes(pkt)))
    return out


def test_alpn_sni_banner_and_git_request_on_any_port(tmp_path: Path) -> None:
    path = tmp_path / "mixed.pcap"
    path.write_bytes(pcap_bytes(_frames([
        (50000, 7777, client_hello("git.example.com", ["h2", "http/1.1"])),
        (50001, 2222, b"SSH-2.0-OpenSSH_9.6\r\n"),
        (50002, 7000, b"0032git-receive-pack /lab.git\0host=example\0"),
    ])))
    found = sniff_connections(path)
    tls = found[(7777, 50000)]
    assert tls.tls and tls.alpn == ("h2", "http/1.1") and tls.sni == "git.example.com"
    assert tls.client_port == 50000
    assert found[(2222, 50001)].ssh_banner == "SSH-2.0-OpenSSH_9.6"
    git = found[(7000, 50002)]
    assert git.git_service == "git-receive-pack" and git.client_port == 50002


def test_headers_only_keeps_the_tls_record_but_not_the_alpn(tmp_path: Path) -> None:
    path = tmp_path / "cut.pcap"
    path.write_bytes(pcap_bytes(_frames([
        (50000, 7777, client_hello("git.example.com", ["h2"]))]), snaplen=96))
    tls = sniff_connections(path)[(7777, 50000)]
    assert tls.tls and tls.alpn == () and tls.notes


def test_a_plain_http_request_names_the_git_service(tmp_path: Path) -> None:
    path = tmp_path / "http.pcap"
    path.write_bytes(pcap_bytes(_frames([
        (50000, 8080, b"GET /lab.git/info/refs?service=git-upload-pack HTTP/1.1\r\n\r\n"),
        (50001, 80, b"POST /lab.git/git-receive-pack HTTP/1.1\r\nHost: x\r\n\r\n"),
        (50002, 80, b"GET /index.html HTTP/1.1\r\n\r\n"),
    ])))
    found = sniff_connections(path)
    clone = found[(8080, 50000)]
    assert clone.service == "git-upload-pack" and clone.client_port == 50000
    assert not clone.git_service  # a plain-HTTP request, not git://
    assert found[(80, 50001)].service == "git-receive-pack"
    assert found[(80, 50002)].service is None  # any other web request names no service


def test_a_git_request_whose_length_came_in_a_segment_of_its_own(tmp_path: Path) -> None:
    """git writes the pkt-line length first (seen in the lab: "003d", then the request)."""
    path = tmp_path / "split.pcap"
    path.write_bytes(pcap_bytes(_frames([
        (50000, 9418, b"003d"),
        (50000, 9418, b"git-upload-pack /lab.git\0host=198.18.2.2:9418\0\0version=2\0"),
    ])))
    git = sniff_connections(path)[(9418, 50000)]
    assert git.git_service == "git-upload-pack" and git.client_port == 50000
