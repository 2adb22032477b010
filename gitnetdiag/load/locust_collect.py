"""Results of a distributed Locust run, turned into the same :class:`LoadReport`.

The master (running :mod:`gitnetdiag.load.locustfile`) serves a JSON payload
at :data:`RESULTS_PATH`: every operation record its workers shipped, and
Locust's own request counts. :func:`report_from_payload` is pure;
:func:`fetch_payload` is the only I/O (plain HTTP GET to the master's web UI).
This module never imports Locust.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gitnetdiag.errors import InputError, NetworkError
from gitnetdiag.load.stats import summarize_step
from gitnetdiag.model.load.records import LoadReport, OpRecord
from gitnetdiag.redaction import redact_text, redact_url

RESULTS_PATH = "/gitnetdiag/results"
FINAL_REPORT_WAIT_S = 4.0
"""Workers report every 3 s: after the stop, wait this long for their last records."""
POLL_S = 1.0


@dataclass(frozen=True, kw_only=True)
class LocustResults:
    """What the master serves at :data:`RESULTS_PATH` (:meth:`payload`: one place defines
    its JSON shape)."""

    state: str
    """Locust's runner state (``running``, ``stopped``, ...)."""
    records: list[dict[str, Any]]
    """Every operation record the workers shipped."""
    target: str
    """The first remote (redacted)."""
    protocol: str
    ops: list[str]
    mix: list[int]
    timeout_s: float
    started_epoch: float | None
    stopped_epoch: float | None
    users: int
    """The most users the run had."""
    workers: int
    locust_counts: dict[str, int]
    """Locust's request count per operation."""
    locust_failures: dict[str, int]
    """Locust's failure count per operation."""
    targets: list[str] | None = None
    """All the remotes (redacted); a record's ``target`` indexes them."""

    def payload(self) -> dict[str, Any]:
        return {
            "targets": self.targets or [self.target],
            "format": "gitnetdiag-locust-results/1", "state": self.state,
            "records": self.records, "target": self.target, "protocol": self.protocol,
            "ops": self.ops, "mix": self.mix, "timeout_s": self.timeout_s,
            "started_epoch": self.started_epoch, "stopped_epoch": self.stopped_epoch,
            "users": self.users, "workers": self.workers, "locust_counts": self.locust_counts,
            "locust_failures": self.locust_failures,
        }


_RESULTS_HINT = "give the results of a master running gitnetdiag's locustfile"

_PAYLOAD_TYPES: dict[str, tuple[type, ...]] = {
    "records": (list,), "protocol": (str,), "ops": (list,), "mix": (list,),
    "timeout_s": (int, float), "locust_counts": (dict,), "locust_failures": (dict,),
    "workers": (int,),
}
_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "op": (str,), "slot": (int,), "start_epoch": (int, float), "wall_s": (int, float),
    "ok": (bool,),
}


def _bad_results(what: str) -> InputError:
    return InputError(f"Locust results: {what}", hint=_RESULTS_HINT,
                      reference="bad-locust-results")


def _check_fields(data: dict[str, Any], types: dict[str, tuple[type, ...]], where: str) -> None:
    for key, allowed in types.items():
        if key not in data:
            raise _bad_results(f"{where}missing key {key!r}")
        value = data[key]
        if (isinstance(value, bool) and bool not in allowed) or not isinstance(value, allowed):
            raise _bad_results(f"{where}{key} is {type(value).__name__}, expected "
                               + " or ".join(t.__name__ for t in allowed))


def check_payload(payload: Any) -> dict[str, Any]:
    """The payload, when it has the shape :meth:`LocustResults.payload` gives; else one
    InputError."""
    if not isinstance(payload, dict):
        raise _bad_results(f"expected a JSON object, got {type(payload).__name__}")
    if payload.get("format") != "gitnetdiag-locust-results/1":
        raise InputError("not a gitnetdiag Locust results payload",
                         hint="collect from a master running gitnetdiag's locustfile")
    if "target" not in payload and not payload.get("targets"):
        raise _bad_results("missing key 'target'")
    _check_fields(payload, _PAYLOAD_TYPES, "")
    optional = {key: payload[key] for key in ("started_epoch", "stopped_epoch", "users")
                if payload.get(key) is not None}
    _check_fields(optional, {key: (int, float) for key in optional}, "")
    for index, record in enumerate(payload["records"]):
        if not isinstance(record, dict):
            raise _bad_results(f"records[{index}] is {type(record).__name__}, expected dict")
        _check_fields(record, _RECORD_TYPES, f"records[{index}]: ")
    return payload


def report_from_payload(payload: dict[str, Any]) -> LoadReport:
    """One step (the run's user count) from the master's records."""
    check_payload(payload)
    started = payload.get("started_epoch") or 0.0
    stopped = payload.get("stopped_epoch") or time.time()
    records = [
        OpRecord(op=r["op"], step=0, slot=int(r["slot"]),
                 start_s=float(r["start_epoch"]) - started, wall_s=float(r["wall_s"]),
                 ok=bool(r["ok"]), kind=r.get("kind"), message=redact_text(r.get("message", "")),
                 bytes_moved=int(r.get("bytes_moved", 0)), target=int(r.get("target", 0)))
        for r in payload["records"]
    ]
    targets = tuple(payload.get("targets") or [payload["target"]])
    step = summarize_step(records, index=0, concurrency=int(payload.get("users", 0)),
                          elapsed_s=max(stopped - started, 0.0), targets=targets)
    return LoadReport(
        target=targets[0], targets=targets, protocol=payload["protocol"],
        ops=tuple(payload["ops"]),
        mix=tuple(payload["mix"]), step_duration_s=step.elapsed_s,
        timeout_s=float(payload["timeout_s"]),
        started=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(started)),
        source="locust", steps=(step,),
        extra={"locust_counts": payload["locust_counts"],
               "locust_failures": payload["locust_failures"],
               "workers": payload["workers"],
               "ops_by_worker": _by_worker(payload["records"])},
    )


def _by_worker(records: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in records:
        counts[str(r.get("worker", "?"))] = counts.get(str(r.get("worker", "?")), 0) + 1
    return counts


def master_url(master: str) -> str:
    """``HOST``, ``HOST:PORT`` or a full URL -> the results URL (default port 8089)."""
    base = master if "://" in master else f"http://{master}"
    scheme_host = base.split("://", 1)[1]
    if ":" not in scheme_host.split("/", 1)[0]:
        base = base.rstrip("/") + ":8089"
    return base.rstrip("/") + RESULTS_PATH


def _get(url: str, timeout_s: float) -> dict[str, Any]:
    shown = redact_url(url)  # a master behind a proxy may carry a token
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            data: dict[str, Any] = json.loads(response.read())
            return data
    except urllib.error.HTTPError as exc:
        raise NetworkError(
            f"{shown}: HTTP {exc.code}",
            hint="is the master running gitnetdiag's locustfile with its web UI (--autostart)?",
            reference="locust-master",
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise NetworkError(
            f"cannot reach the Locust master at {shown}: "
            f"{redact_text(str(getattr(exc, 'reason', exc)))}",
            hint="give --locust-master HOST[:PORT] of the master's web UI (default port 8089)",
            reference="locust-master",
        ) from exc
    except ValueError as exc:
        raise InputError(f"{shown} did not answer JSON", hint="is that a Locust master?") from exc


def fetch_payload(
    master: str,
    *,
    wait_s: float = 0.0,
    on_poll: Callable[[dict[str, Any]], None] | None = None,
    request_timeout_s: float = 10.0,
) -> dict[str, Any]:
    """The master's results; with ``wait_s`` > 0, wait (that long at most) for the run to end
    and the workers' last reports to arrive."""
    url = master_url(master)
    deadline = time.monotonic() + wait_s
    previous: int | None = None
    settled_payload: dict[str, Any] | None = None
    while True:
        try:
            payload = check_payload(_get(url, request_timeout_s))
        except NetworkError:
            if settled_payload is not None:
                # It quit (--autoquit) after the workers' last reports were due: what it
                # served then is final, only the confirming poll is missing.
                return settled_payload
            # The master may still be starting: keep trying while there is time to wait.
            if time.monotonic() >= deadline:
                raise
            time.sleep(POLL_S)
            continue
        if on_poll is not None:
            on_poll(payload)
        stopped = payload.get("stopped_epoch")
        settled = (payload.get("state") == "stopped" and stopped is not None
                   and time.time() - float(stopped) >= FINAL_REPORT_WAIT_S)
        if settled and previous == len(payload["records"]):
            return payload
        if settled:
            settled_payload = payload
        if wait_s <= 0 or time.monotonic() >= deadline:
            return payload
        previous = len(payload["records"]) if settled else None
        time.sleep(POLL_S)
