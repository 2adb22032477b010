"""The run's path checks as the diagnosis reads them: the ports found dead or refused, per
protocol."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gitnetdiag.diagnosis.observations import PROTOCOL_ORDER, DeadPath
from gitnetdiag.outcomes import DEAD_PATHS
from gitnetdiag.rundir.records import PathMeasurement, reached_through

READ: frozenset[str] = DEAD_PATHS | {"refused"}
"""The checks the diagnosis reads: the dead ports (``path-unreachable``) and the refused ones
(``firewall-reset``: a port that refuses every connect, the check's and git's)."""


def dead_paths(endpoints: Iterable[tuple[str, str]], paths: Sequence[PathMeasurement]
               ) -> tuple[DeadPath, ...]:
    """One :class:`DeadPath` per protocol whose endpoint's check found the port dead or
    refused (``endpoints``: each protocol run's ``(protocol, host:port)``; a proxied
    protocol's is its first hop's, :func:`~gitnetdiag.rundir.records.reached_through`)."""
    by_endpoint = {path.endpoint: path for path in paths}
    dead = []
    for protocol, endpoint in endpoints:
        path = by_endpoint.get(reached_through(protocol, endpoint, paths))
        if path is None or path.reach not in READ or protocol not in PROTOCOL_ORDER:
            continue
        dead.append(DeadPath(protocol=protocol, endpoint=path.endpoint,
                             reach=path.reach, syns_sent=path.syns_sent,
                             connects=path.check_connects,
                             waited_s=path.waited_s, error=path.error or ""))
    return tuple(sorted(dead, key=lambda d: PROTOCOL_ORDER.index(d.protocol)))
