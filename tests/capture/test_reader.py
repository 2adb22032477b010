"""The capture reader: formats, link types, IP variants, damage."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import (
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw
from scapy.utils import PcapNgWriter, wrpcap

from gitnetdiag.capture import read_capture
from gitnetdiag.errors import CaptureFormatError, InputError
from tests.capture.craft import (
    ETH_HEADER,
    Conversation,
    Interface,
    PcapngSection,
    pcap_bytes,
    pcapng_bytes,
    write,
)

T0 = 1_700_000_000_123_456_789


def syn_ip(**tcp: object) -> bytes:
    """IPv4 SYN with MSS 1400 and window scale 5."""
    options = [("MSS", 1400), ("NOP", None), ("WScale", 5), ("SAckOK", b"")]
    return bytes(IP(src="192.0.2.1", dst="192.0.2.2") /
                 TCP(sport=1111, dport=22, flags="S", seq=77, options=options, **tcp))


def data_ip(payload: int = 100) -> bytes:
    return bytes(IP(src="192.0.2.1", dst="192.0.2.2") /
                 TCP(sport=1111, dport=22, flags="PA", seq=78, ack=5) / Raw(b"y" * payload))


@pytest.mark.parametrize("nano", [False, True])
@pytest.mark.parametrize("big", [False, True])
def test_pcap_variants_give_same_fields(tmp_path: Path, nano: bool, big: bool) -> None:
    """Micro/nanosecond pcap in both byte orders decode to the same rows."""
    frames = [(T0, ETH_HEADER + syn_ip()), (T0 + 1_000, ETH_HEADER + data_ip())]
    path = write(tmp_path / "a.pcap", pcap_bytes(frames, nano=nano, big=big))
    r = read_capture(path)
    assert r.damage is None
    p = r.packets
    assert len(p) == 2
    expected_ts = T0 if nano else T0 // 1000 * 1000
    assert int(p["ts_ns"][0]) == expected_ts
    assert p["frame"].tolist() == [1, 2]
    assert int(p["opt_mss"][0]) == 1400
    assert int(p["opt_wscale"][0]) == 5
    assert int(p["opt_sack_perm"][0]) == 1
    assert int(p["seq"][0]) == 77
    assert int(p["payload_len"][1]) == 100
    assert int(p["opt_mss"][1]) == -1 and int(p["opt_wscale"][1]) == -1
    assert r.connections[0].a_addr == "192.0.2.1" and r.connections[0].b_port == 22


def _vlan(tag_type: int, vid: int) -> bytes:
    return struct.pack(">HH", tag_type, vid)


LINK_CASES = {
    "ethernet": (1, lambda ip: ETH_HEADER + ip),
    "vlan": (1, lambda ip: ETH_HEADER[:12] + _vlan(0x8100, 7) + b"\x08\x00" + ip),
    "qinq": (1, lambda ip: ETH_HEADER[:12] + _vlan(0x88A8, 3) + _vlan(0x8100, 7) + b"\x08\x00"
             + ip),
    "sll": (113, lambda ip: struct.pack(">HHH8sH", 0, 772, 6, b"\x00" * 8, 0x0800) + ip),
    "sll2": (276, lambda ip: struct.pack(">HHIHBB8s", 0x0800, 0, 1, 772, 0, 6, b"\x00" * 8)
             + ip),
    "raw101": (101, lambda ip: ip),
    "raw12": (12, lambda ip: ip),
    "raw14": (14, lambda ip: ip),
    "null_le": (0, lambda ip: struct.pack("<I", 2) + ip),
    "null_be": (0, lambda ip: struct.pack(">I", 2) + ip),
    "loop": (108, lambda ip: struct.pack(">I", 2) + ip),
}


@pytest.mark.parametrize("case", sorted(LINK_CASES))
def test_link_types(tmp_path: Path, case: str) -> None:
    """Every supported link type yields the SYN's options and the data length."""
    linktype, wrap = LINK_CASES[case]
    frames = [(T0, wrap(syn_ip())), (T0 + 5, wrap(data_ip(333)))]
    r = read_capture(write(tmp_path / "l.pcap", pcap_bytes(frames, linktype=linktype)))
    assert len(r.packets) == 2, r.stats
    assert int(r.packets["opt_wscale"][0]) == 5
    assert int(r.packets["payload_len"][1]) == 333


def test_null_ipv6_family(tmp_path: Path) -> None:
    """BSD loopback with AF_INET6 (30 on macOS) carries IPv6."""
    ip6 = bytes(IPv6(src="::1", dst="::1") / TCP(sport=5, dport=6, flags="S"))
    r = read_capture(write(tmp_path / "n.pcap",
                           pcap_bytes([(T0, struct.pack("<I", 30) + ip6)], linktype=0)))
    assert len(r.packets) == 1
    assert r.connections[0].ip_version == 6


def test_ipv6_extension_headers(tmp_path: Path) -> None:
    """A SYN behind hop-by-hop, routing and destination options still gives its options,
    and the payload length excludes the extension headers."""
    syn = (IPv6(src="2001:db8::1", dst="2001:db8::2") / IPv6ExtHdrHopByHop() /
           IPv6ExtHdrRouting() / IPv6ExtHdrDestOpt() /
           TCP(sport=4000, dport=443, flags="S", options=[("WScale", 9), ("MSS", 1220)]))
    data = (IPv6(src="2001:db8::1", dst="2001:db8::2") / IPv6ExtHdrHopByHop() /
            TCP(sport=4000, dport=443, flags="A", seq=1, ack=1) / Raw(b"z" * 500))
    atomic = (IPv6(src="2001:db8::1", dst="2001:db8::2") / IPv6ExtHdrFragment(offset=0, m=0) /
              TCP(sport=4000, dport=443, flags="A", seq=501, ack=1) / Raw(b"z" * 10))
    frames = [(T0 + i, b"\x02" * 12 + b"\x86\xdd" + bytes(p))
              for i, p in enumerate((syn, data, atomic))]
    r = read_capture(write(tmp_path / "v6.pcap", pcap_bytes(frames)))
    assert len(r.packets) == 3
    assert int(r.packets["opt_wscale"][0]) == 9
    assert int(r.packets["opt_mss"][0]) == 1220
    assert r.packets["payload_len"].tolist() == [0, 500, 10]
    assert r.connections[0].a_addr == "2001:db8::1"


def test_fragments_are_skipped(tmp_path: Path) -> None:
    """A first IPv4 fragment (MF set), a later one, and an IPv6 fragment are not segments."""
    tcp = TCP(sport=1, dport=2, flags="A") / Raw(b"q" * 64)
    first = IP(src="10.1.1.1", dst="10.1.1.2", flags="MF", frag=0) / tcp
    later = IP(src="10.1.1.1", dst="10.1.1.2", frag=3, proto=6) / Raw(b"r" * 40)
    v6 = IPv6(src="::1", dst="::2") / IPv6ExtHdrFragment(offset=0, m=1) / tcp
    ok = IP(src="10.1.1.1", dst="10.1.1.2") / tcp
    frames = [(T0, ETH_HEADER + bytes(first)), (T0 + 1, ETH_HEADER + bytes(later)),
              (T0 + 2, b"\x02" * 12 + b"\x86\xdd" + bytes(v6)), (T0 + 3, ETH_HEADER + bytes(ok))]
    r = read_capture(write(tmp_path / "f.pcap", pcap_bytes(frames)))
    assert r.stats.fragments == 3
    assert r.packets["frame"].tolist() == [4]


def test_headers_only_capture_takes_length_from_ip(tmp_path: Path) -> None:
    """With snaplen 96 the payload is not captured; its length comes from the IP header."""
    frames = [(T0, ETH_HEADER + data_ip(1400))]
    r = read_capture(write(tmp_path / "h.pcap", pcap_bytes(frames, snaplen=96)))
    assert int(r.packets["payload_len"][0]) == 1400


def test_frame_cut_inside_tcp_header_is_short(tmp_path: Path) -> None:
    """A frame cut in the TCP header is counted as short, not silently dropped."""
    frames = [(T0, ETH_HEADER + data_ip()), (T0 + 1, ETH_HEADER + data_ip())]
    blob = bytearray(pcap_bytes(frames[:1]))
    cut = (ETH_HEADER + data_ip())[: 14 + 20 + 10]
    blob += struct.pack("<IIII", T0 // 10**9, 0, len(cut), 1500) + cut
    r = read_capture(write(tmp_path / "s.pcap", bytes(blob)))
    assert len(r.packets) == 1
    assert r.stats.short == 1
    assert r.stats.records == 2


def test_frame_numbers_count_every_record(tmp_path: Path) -> None:
    """Frame numbers are Wireshark's: non-TCP frames count too."""
    arp = bytes(Ether(src="02:00:00:00:00:01", dst="ff:ff:ff:ff:ff:ff") / ARP())
    frames = [(T0, arp), (T0 + 1, ETH_HEADER + syn_ip()), (T0 + 2, arp),
              (T0 + 3, ETH_HEADER + data_ip())]
    r = read_capture(write(tmp_path / "n.pcap", pcap_bytes(frames)))
    assert r.packets["frame"].tolist() == [2, 4]
    assert r.stats.non_ip == 2


def test_pcapng_interfaces_resolutions_and_blocks(tmp_path: Path) -> None:
    """Several interfaces, each with its own link type and if_tsresol; SPB and DSB handled;
    a second, big-endian section."""
    sll2 = struct.pack(">HHIHBB8s", 0x0800, 0, 1, 772, 0, 6, b"\x00" * 8)
    s1 = PcapngSection(
        interfaces=[Interface(1, None), Interface(276, 9), Interface(101, 0x80 | 20)],
        packets=[
            (0, T0, ETH_HEADER + syn_ip(), "epb"),
            (1, T0 + 1_000_000, sll2 + data_ip(10), "epb"),
            (2, T0 + 2_000_000, data_ip(20), "epb"),
        ],
    )
    s2 = PcapngSection(interfaces=[Interface(1, 9)], big=True,
                       packets=[(0, T0 + 3_000_000, ETH_HEADER + data_ip(30), "epb"),
                                (0, 0, ETH_HEADER + data_ip(40), "spb")])
    r = read_capture(write(tmp_path / "m.pcapng", pcapng_bytes([s1, s2])))
    assert r.damage is None
    p = r.packets
    assert p["payload_len"].tolist() == [0, 10, 20, 30, 40]
    assert int(p["ts_ns"][0]) == T0 // 1000 * 1000
    assert int(p["ts_ns"][1]) == T0 + 1_000_000
    assert abs(int(p["ts_ns"][2]) - (T0 + 2_000_000)) < 1000  # 2**-20 s ticks
    assert int(p["ts_ns"][3]) == T0 + 3_000_000
    assert int(p["ts_ns"][4]) == int(p["ts_ns"][3])  # an SPB inherits the previous time
    assert p["frame"].tolist() == [1, 2, 3, 4, 5]


def test_scapy_pcapng_writer_is_read(tmp_path: Path) -> None:
    """Files written by scapy's own writers (pcap and pcapng) read the same."""
    pkts = [Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(flags="S", options=[("WScale", 2)]),
            Ether() / IP(src="10.0.0.2", dst="10.0.0.1") / TCP(flags="SA", sport=80, dport=20)]
    for i, pk in enumerate(pkts):
        pk.time = 1_700_000_000 + i / 10
    wrpcap(str(tmp_path / "x.pcap"), pkts)
    writer = PcapNgWriter(str(tmp_path / "x.pcapng"))
    for pk in pkts:
        writer.write(pk)
    writer.close()
    a = read_capture(tmp_path / "x.pcap")
    b = read_capture(tmp_path / "x.pcapng")
    assert len(a.packets) == len(b.packets) == 2
    assert a.packets["ts_ns"].tolist() == b.packets["ts_ns"].tolist()
    assert a.packets["dir"].tolist() == [0, 1]


def test_connection_direction_and_reuse(tmp_path: Path) -> None:
    """dir 0 is the SYN sender; a 4-tuple reused after FIN is a new connection with its own
    window scale; a retransmitted SYN is not."""
    conv = Conversation()
    conv.handshake(c_opts=[("WScale", 2)], s_opts=[("WScale", 3)])
    conv.segment("s", "PA", payload=10, dt_s=0.01)
    conv.segment("c", "FA", dt_s=0.01)
    conv.segment("s", "FA", dt_s=0.01)
    conv.segment("c", "A", dt_s=0.01)
    conv.isn = {"c": 50_000, "s": 70_000}
    conv.nxt = dict(conv.isn)
    conv.segment("c", "S", dt_s=1, options=[("WScale", 6)])
    conv.segment("c", "S", dt_s=1, seq=50_000, options=[("WScale", 6)])
    conv.segment("s", "SA", dt_s=0.01, options=[("WScale", 8)])
    r = read_capture(conv.pcap(tmp_path / "reuse.pcap"))
    assert len(r.connections) == 2
    assert r.packets["conn"].tolist() == [0] * 7 + [1] * 3
    assert r.packets["dir"].tolist() == [0, 1, 0, 1, 0, 1, 0, 0, 0, 1]


def test_first_packet_synack_makes_receiver_initiator(tmp_path: Path) -> None:
    """Capture started after the SYN: the SYN-ACK's receiver is still the initiator."""
    conv = Conversation()
    conv.segment("s", "SA", ack=1001)
    conv.segment("c", "A", dt_s=0.01)
    r = read_capture(conv.pcap(tmp_path / "sa.pcap"))
    assert r.connections[0].a_port == 40000
    assert r.packets["dir"].tolist() == [1, 0]


def test_chunking_does_not_change_anything(tmp_path: Path, parallel: bool) -> None:
    """Tiny chunks (records straddling every boundary) give the same table, in this
    process or read ahead by a forked child."""
    conv = Conversation()
    conv.handshake()
    for i in range(300):
        conv.segment("c", "A", dt_s=0.001, payload=100 + i)
        if i % 7 == 0:
            conv.segment("s", "A", dt_s=0.0005)
    path = conv.pcap(tmp_path / "c.pcap")
    whole = read_capture(path)
    small = read_capture(path, chunk_bytes=1000, parallel=parallel)
    assert np.array_equal(whole.packets, small.packets)
    assert whole.connections == small.connections
    assert whole.stats == small.stats


def test_truncated_file_keeps_packets_before_damage(tmp_path: Path, parallel: bool) -> None:
    """A file cut mid-record: packets before are kept, the damage offset is reported;
    strict mode raises with packets_read."""
    data = pcap_bytes([(T0 + i, ETH_HEADER + data_ip()) for i in range(5)])
    path = write(tmp_path / "t.pcap", data[:-30])
    r = read_capture(path, parallel=parallel)
    assert len(r.packets) == 4
    assert r.truncated_at is not None and 24 < r.truncated_at < len(data)
    assert r.warning is not None and "4 TCP segments" in r.warning
    with pytest.raises(CaptureFormatError) as info:
        read_capture(path, strict=True, parallel=parallel)
    assert info.value.packets_read == 4
    assert info.value.offset == r.truncated_at


def test_impossible_record_length_is_damage(tmp_path: Path, parallel: bool) -> None:
    data = bytearray(pcap_bytes([(T0 + i, ETH_HEADER + data_ip()) for i in range(3)],
                                snaplen=65535))
    second = 24 + 16 + len(ETH_HEADER + data_ip())
    data[second + 8 : second + 12] = struct.pack("<I", 0x7FFFFFFF)
    r = read_capture(write(tmp_path / "d.pcap", bytes(data)), parallel=parallel)
    assert len(r.packets) == 1
    assert r.truncated_at == second


def test_not_a_capture(tmp_path: Path, parallel: bool) -> None:
    with pytest.raises(CaptureFormatError, match="not a pcap or pcapng"):
        read_capture(write(tmp_path / "x.txt", b"hello world, this is text"), parallel=parallel)
    with pytest.raises(InputError, match="not found"):
        read_capture(tmp_path / "missing.pcap", parallel=parallel)


def test_pcapng_bad_trailing_length_is_damage(tmp_path: Path, parallel: bool) -> None:
    sec = PcapngSection(packets=[(0, T0 + i, ETH_HEADER + data_ip(), "epb") for i in range(3)])
    data = bytearray(pcapng_bytes([sec]))
    data[-4:] = struct.pack("<I", 12)
    r = read_capture(write(tmp_path / "b.pcapng", bytes(data)), parallel=parallel)
    assert len(r.packets) == 2
    assert r.damage is not None and "trailing length" in r.damage.message
