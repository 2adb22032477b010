"""Probes: the measured pushes over HTTP/1.1, HTTP/2, SSH and git://, and their artifacts.

``repo`` makes the test repository, ``gitpush`` runs the real git CLI,
``capture`` wraps tcpdump, ``trace2`` and ``curltrace`` parsing live in
``trace2``, ``pathinfo`` measures the path, ``burst`` runs concurrent short
operations, ``rundir`` writes and reads the run directory and ``runner``
puts them together for ``gitnetdiag probe``.
"""
