"""The pure half of the I/O packages: their records and the parsers and rules that build them.

``gitnetdiag.model.X`` holds what package ``X`` (``host``, ``lab``, ``load``, ``storage``)
records or parses that needs no program, no socket and no network: frozen result types
written to JSON, and the parsers of command output and configuration text. The renderers
and the pipeline read these; the I/O package itself runs the commands that fill them.
"""
