"""Adapters for external tools: the only place their command lines and processes live.

The pure side (:mod:`gitnetdiag.analysis`) parses what these adapters return.
"""
