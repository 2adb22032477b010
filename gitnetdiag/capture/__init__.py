"""Reading packet captures (pcap, pcapng) into numpy packet tables.

The entry points are :class:`CaptureReader` (streaming, bounded memory) and
:func:`read_capture` (one shot).  Nothing here imports scapy.
"""

from gitnetdiag.capture.decodestats import DecodeStats
from gitnetdiag.capture.flows import Connection
from gitnetdiag.capture.reader import PACKET_DTYPE, CaptureRead, CaptureReader, read_capture

__all__ = [
    "PACKET_DTYPE",
    "CaptureRead",
    "CaptureReader",
    "Connection",
    "DecodeStats",
    "read_capture",
]
