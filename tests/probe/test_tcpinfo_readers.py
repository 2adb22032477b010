"""TCP_INFO readers: ``ss -tin`` lines and the kernel's struct on a real socket."""

from __future__ import annotations

import socket
import threading

from gitnetdiag.probe.tcpinfo import parse_ss_info, parse_ss_output, read_tcp_info

SS_OUTPUT = (
    'ESTAB 0      65160  198.18.1.2:40412 198.18.2.2:8443 users:(("git-remote-http",'
    'pid=4242,fd=5))\n'
    "\t cubic wscale:10,7 rto:252 rtt:51.2/0.4 ato:40 mss:1448 pmtu:1500 rcvmss:536 "
    "advmss:1448 cwnd:48 ssthresh:33 bytes_sent:3521337 bytes_retrans:43440 "
    "bytes_acked:3414505 segs_out:2434 send 10.9Mbps pacing_rate 13.0Mbps "
    "delivery_rate 8.8Mbps delivered:2359 busy:2900ms rwnd_limited:2400ms(82.8%) "
    "unacked:45 retrans:0/30 rcv_space:14480 minrtt:50.1 snd_wnd:65536\n"
    "ESTAB 0 0 198.18.1.2:40414 198.18.2.2:8443\n"
    "\t cubic rtt:50.5/1 mss:1448 bytes_sent:100 bytes_acked:101 busy:48ms\n"
)


def test_an_ss_line_gives_the_kernel_counters_in_tcp_info_units() -> None:
    [upload, other] = parse_ss_output(SS_OUTPUT)
    assert upload.pids == frozenset({4242}) and upload.peer == "198.18.2.2:8443"
    c = upload.counters
    assert c["busy_time_us"] == 2_900_000 and c["rwnd_limited_us"] == 2_400_000
    assert c["bytes_retrans"] == 43440 and c["total_retrans"] == 30
    assert c["rtt_us"] == 51_200 and c["min_rtt_us"] == 50_100
    assert c["delivery_rate_bytes_per_s"] == 8.8e6 / 8 and c["snd_wnd_bytes"] == 65536
    assert c["unacked"] == 45 and c["snd_mss"] == 1448
    # The receiver's segment sizes: the largest received (estimate) and the advertised MSS.
    assert c["rcv_mss"] == 536 and c["advmss"] == 1448
    # ss leaves zero counters out: they are zero, not unknown.
    assert other.pids == frozenset()
    assert other.counters["rwnd_limited_us"] == 0 and other.counters["bytes_retrans"] == 0


def test_a_receivers_line_gives_its_out_of_order_segments() -> None:
    """The receiving side of a clone: data segments in and those that came out of order
    (``ss`` prints ``rcv_ooopack`` only when it is not zero: absent is not invented)."""
    line = ("\t cubic rtt:50.4/0.2 mss:1448 bytes_received:2000000 segs_in:1500 "
            "data_segs_in:1382 rcv_rtt:51 rcv_space:117000 rcv_ssthresh:117612 "
            "rcv_ooopack:267 minrtt:50.3 snd_wnd:65536")
    c = parse_ss_info(line)
    assert c["data_segs_in"] == 1382 and c["rcv_ooopack"] == 267
    assert "rcv_ooopack" not in parse_ss_info(line.replace(" rcv_ooopack:267", ""))


def test_a_line_without_busy_time_does_not_invent_limit_counters() -> None:
    assert "rwnd_limited_us" not in parse_ss_info("\t cubic rtt:1/1 mss:1448")


def test_getsockopt_tcp_info_of_an_own_socket_counts_the_bytes_it_sent() -> None:
    """The struct layout is right when bytes_acked matches what the peer read."""
    server = socket.create_server(("127.0.0.1", 0))
    received = bytearray()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            while chunk := conn.recv(65536):
                received.extend(chunk)

    thread = threading.Thread(target=serve)
    thread.start()
    client = socket.create_connection(server.getsockname())
    client.sendall(b"x" * 300_000)
    client.shutdown(socket.SHUT_WR)
    thread.join(timeout=10)
    sample = read_tcp_info(client, 1.0)
    client.close()
    server.close()
    assert sample is not None and sample.source == "getsockopt TCP_INFO"
    c = sample.counters
    assert len(received) == 300_000
    # bytes_acked counts the SYN and the FIN too, and nothing twice. bytes_sent counts every
    # segment the stack sent, again when it goes again: a loaded fresh-clone run's loopback
    # gave 314,875 for 300,000 read; segments dropped in the namespace's own OUTPUT chain,
    # 309,211-367,584 with bytes_retrans 0 (counted before the device took them).
    assert 300_000 <= c["bytes_acked"] <= 300_002
    assert c["bytes_sent"] - c["bytes_retrans"] >= 300_000, (c["bytes_sent"], c["bytes_retrans"])
    assert c["snd_mss"] > 0 and c["rtt_us"] > 0 and "busy_time_us" in c
    assert c["advmss"] >= c["rcv_mss"] > 0
