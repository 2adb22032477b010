"""Server-side evidence: listen backlogs, kernel counters, kernel log, sysctls, proxy configs.

Pure parsers (``listeners``, ``netstat``, ``sysctl``, ``kernlog``, ``configlint``)
turn recorded command output into values; ``access`` runs commands locally or
over SSH; ``collect`` is the thin layer that feeds one into the other and
builds a :class:`~gitnetdiag.model.host.report.HostReport`; ``adapter`` maps a JSON
report onto the diagnosis engine's :class:`~gitnetdiag.diagnosis.observations.HostEvidence`.
"""
