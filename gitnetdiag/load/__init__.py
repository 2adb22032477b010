"""``gitnetdiag load``: a capacity test of a git remote (clone, fetch, push, ls-remote).

    model        frozen records: one operation, one ramp step, the whole run (JSON)
    stats        pure: percentiles, box-plot figures, mix picking, option parsing, counters
    operations   I/O: the git operations in a scratch directory, throwaway branches only
    hostcounters I/O: kernel counter snapshots of the server (local or a namespace)
    scheduler    I/O: the ramp, one thread per concurrent slot, live progress
    diagnose     pure: a load report as the diagnosis engine's observations
    locustfile   the same operations as a Locust ``User`` (imported only by Locust)
    locust_collect  fetch a Locust master's results into a load report

The renderers (terminal table, Markdown, HTML with the box plot, JSON) live in
:mod:`gitnetdiag.report.load`.

Locust (and gevent's monkey patching) is only ever imported by ``locustfile``.
"""
