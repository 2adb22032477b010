"""Captures as customers send them (issue 16): compressed, tunnelled, stacked VLANs,
IPv6 fragments, broken timestamp fields.  Each is crafted from one plain conversation
and must analyse exactly like it."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path
from typing import Any

import pytest
import zstandard
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Raw

from gitnetdiag.analysis.capture_analysis import analyze_capture
from gitnetdiag.analysis.tcp import analyze_connections
from gitnetdiag.capture import read_capture
from gitnetdiag.errors import CaptureFormatError
from tests.capture.craft import (
    ETH6_HEADER,
    Conversation,
    Interface,
    PcapngSection,
    pcap_bytes,
    pcapng_bytes,
    write,
)

_ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")  # no ARP lookup by scapy


def _conversation() -> Conversation:
    conv = Conversation()
    conv.handshake()
    for _ in range(8):
        conv.segment("c", "PA", dt_s=0.001, payload=700)
        conv.segment("s", "A", dt_s=0.02, win=300)
    conv.segment("c", "FA", dt_s=0.01)
    return conv


def _analysis(path: Path, **kw: Any) -> list[dict[str, Any]]:
    r = read_capture(path, **kw)
    assert r.damage is None
    return [c.to_dict() for c in analyze_connections(r.packets, r.connections)]


@pytest.fixture
def plain(tmp_path: Path) -> tuple[Conversation, list[dict[str, Any]]]:
    conv = _conversation()
    return conv, _analysis(conv.pcap(tmp_path / "plain.pcap"))


@pytest.mark.parametrize("chunk_bytes", [4 * 1024 * 1024, 300])
@pytest.mark.parametrize(
    ("kind", "compress"),
    [("gzip", gzip.compress), ("zstd", lambda data: zstandard.ZstdCompressor().compress(data))],
)
def test_compressed_pcap_and_pcapng(
    tmp_path: Path, plain: tuple[Conversation, list[dict[str, Any]]], kind: str,
    compress: Any, chunk_bytes: int, parallel: bool,
) -> None:
    """``capture.pcap.gz`` and ``capture.pcapng.zst`` read like the plain files
    (the issue: "magic number 1f8b0800")."""
    conv, expected = plain
    ng = PcapngSection(packets=[(0, ts, frame, "epb") for ts, frame in conv.frames])
    for name, data in (("c.pcap", pcap_bytes(conv.frames)), ("c.pcapng", pcapng_bytes([ng]))):
        path = write(tmp_path / f"{name}.{kind}", compress(data))
        assert _analysis(path, chunk_bytes=chunk_bytes, parallel=parallel) == expected


def test_compressed_capture_cut_short_keeps_what_came_before(tmp_path: Path) -> None:
    """A .gz cut in the middle: the packets before the cut, and the damage named."""
    conv = _conversation()
    data = gzip.compress(pcap_bytes(conv.frames), compresslevel=1)
    path = write(tmp_path / "cut.pcap.gz", data[: len(data) * 2 // 3])
    r = read_capture(path)
    assert r.damage is not None
    assert "gzip stream is cut short" in r.damage.message
    assert 0 < len(r.packets) < len(conv.frames)
    result = analyze_capture(path)
    assert result.truncated_at is not None
    assert any("gzip stream" in w for w in result.warnings)


def test_damaged_zstd_is_damage_not_a_traceback(tmp_path: Path) -> None:
    frames = _conversation().frames
    data = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(pcap_bytes(frames)))
    data[len(data) // 2] ^= 0xFF
    try:
        r = read_capture(write(tmp_path / "bad.pcap.zst", bytes(data)))
    except CaptureFormatError as exc:  # damage before the first record: nothing to keep
        assert "zstd stream is damaged" in exc.message
    else:
        assert r.damage is not None and "zstd stream is damaged" in r.damage.message


def _vxlan(frame: bytes) -> bytes:
    outer = (_ETH / IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=51000, dport=4789)
             / VXLAN(vni=42) / Raw(frame))
    return bytes(outer)


def _geneve(frame: bytes) -> bytes:
    # Version 0, 2 words of options (one 4-byte TLV), protocol: transparent Ethernet bridging.
    header = bytes((0x02, 0x00)) + struct.pack(">H", 0x6558) + bytes((0, 0, 7, 0))
    option = struct.pack(">HBB", 0x0102, 0x80, 1) + b"\xaa\xbb\xcc\xdd"
    outer = (_ETH / IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=51000, dport=6081)
             / Raw(header + option + frame))
    return bytes(outer)


def _vxlan_over_ipv6_in_geneve(frame: bytes) -> bytes:
    inner = (_ETH / IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(sport=1, dport=4789)
             / VXLAN(vni=1) / Raw(frame))
    return _geneve(bytes(inner))


def _vlans(depth: int) -> Any:
    def wrap(frame: bytes) -> bytes:
        tags = b"".join(struct.pack(">HH", 0x88A8 if k == 0 else 0x8100, 100 + k)
                        for k in range(depth))
        return frame[:12] + tags + frame[12:]
    return wrap


@pytest.mark.parametrize(
    "wrap",
    [_vxlan, _geneve, _vxlan_over_ipv6_in_geneve, _vlans(1), _vlans(3), _vlans(6),
     lambda f: _vxlan(_vlans(3)(f))],
    ids=["vxlan", "geneve-with-options", "vxlan-in-geneve", "vlan-1", "vlan-3", "vlan-6",
         "vxlan-with-inner-vlans"],
)
def test_encapsulated_frames_read_like_plain_ones(
    tmp_path: Path, plain: tuple[Conversation, list[dict[str, Any]]], wrap: Any
) -> None:
    conv, expected = plain
    frames = [(ts, wrap(frame)) for ts, frame in conv.frames]
    path = write(tmp_path / "wrapped.pcap", pcap_bytes(frames))
    assert _analysis(path) == expected
    r = read_capture(path)
    assert r.stats.non_tcp == 0 and r.stats.non_ip == 0 and r.stats.short == 0


def test_plain_udp_and_headers_only_tunnels_are_not_unwrapped(tmp_path: Path) -> None:
    """DNS is UDP, not a tunnel; a VXLAN packet cut before its inner header is not TCP."""
    dns = bytes(_ETH / IP() / UDP(sport=5353, dport=53) / Raw(b"\x00" * 40))
    conv = _conversation()
    cut = _vxlan(conv.frames[0][1])[:14 + 20 + 8 + 8 + 6]
    path = write(tmp_path / "udp.pcap", pcap_bytes([(1, dns), (2, cut), *conv.frames]))
    r = read_capture(path)
    assert r.stats.non_tcp == 2
    assert r.stats.tunnelled == 0
    assert len(r.packets) == len(conv.frames)


def test_ipv6_fragments_are_skipped_like_ipv4_ones(tmp_path: Path) -> None:
    """First and later fragments are counted, not decoded; an atomic fragment is a packet."""
    conv = Conversation(ipv6=True, client=("2001:db8::1", 40000), server=("2001:db8::2", 443))
    conv.handshake()
    ip = IPv6(src="2001:db8::1", dst="2001:db8::2")
    tcp = TCP(sport=40000, dport=443, flags="PA", seq=conv.nxt["c"], ack=conv.nxt["s"])
    first = ip / IPv6ExtHdrFragment(id=7, m=1, offset=0) / tcp / Raw(b"\x00" * 64)
    later = ip / IPv6ExtHdrFragment(id=7, m=0, offset=9, nh=6) / Raw(b"\x00" * 64)
    atomic = ip / IPv6ExtHdrFragment(id=8, m=0, offset=0) / tcp / Raw(b"\x00" * 10)
    t = conv.frames[-1][0]
    frames = [*conv.frames, *((t + k, ETH6_HEADER + bytes(p))
                              for k, p in enumerate((first, later, atomic), 1))]
    r = read_capture(write(tmp_path / "frag6.pcap", pcap_bytes(frames)))
    assert r.stats.fragments == 2
    assert len(r.packets) == 4
    assert int(r.packets["payload_len"][-1]) == 10


def test_nanosecond_field_out_of_range_is_reported(tmp_path: Path) -> None:
    """A nanosecond pcap whose sub-second field reaches 1e9: kept, and named in a warning."""
    conv = _conversation()
    data = bytearray(pcap_bytes(conv.frames, nano=True))
    off = 24
    for index in range(len(conv.frames)):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        if index in (3, 5):
            sec, frac = struct.unpack_from("<II", data, off)
            struct.pack_into("<II", data, off, sec - 1, frac + 1_000_000_000)
        off += 16 + incl
    path = write(tmp_path / "ns.pcap", bytes(data))
    result = analyze_capture(path)
    (warning,) = [w for w in result.warnings if "sub-second" in w]
    assert "2 record(s)" in warning and "frames 4, 6" in warning
    assert _analysis(path) == _analysis(conv.pcap(tmp_path / "plain.pcap", nano=True))


def test_microsecond_field_out_of_range_is_reported(tmp_path: Path) -> None:
    conv = _conversation()
    data = bytearray(pcap_bytes(conv.frames))
    sec = struct.unpack_from("<I", data, 24)[0]
    struct.pack_into("<II", data, 24, sec, 1_500_000)
    result = analyze_capture(write(tmp_path / "us.pcap", bytes(data)))
    assert any("sub-second" in w and "frame 1)" in w for w in result.warnings)


def test_pcapng_interfaces_with_ns_resolution_in_gzip(tmp_path: Path) -> None:
    """Two interfaces, ns and default resolution, inside gzip, read in small chunks."""
    conv = _conversation()
    ng = PcapngSection(interfaces=[Interface(1, 9), Interface(1, None)],
                       packets=[(i % 2, ts, frame, "epb")
                                for i, (ts, frame) in enumerate(conv.frames)])
    path = write(tmp_path / "two.pcapng.gz", gzip.compress(pcapng_bytes([ng])))
    r = read_capture(path, chunk_bytes=200)
    assert r.damage is None
    assert len(r.packets) == len(conv.frames)
