"""Pure analysis: packet tables and parsed records in, measured values out."""

TCP_FIELDS = ("ts_ns", "frame", "dir", "flags", "seq", "ack", "win_raw", "payload_len",
              "opt_mss", "opt_wscale", "opt_sack_perm", "sack_count", "sack_right", "conn")
"""The packet-table fields :class:`gitnetdiag.analysis.tcp.TcpAnalyzer` reads: a forked
capture reader sends only these to :func:`~gitnetdiag.analysis.capture_analysis.
analyze_capture` (here, so that the command line names them before importing the
analysis)."""
