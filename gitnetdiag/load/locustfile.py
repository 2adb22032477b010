"""gitnetdiag's git operations as a Locust ``User``, for load from many generators.

Run it (see docs/load.md)::

    LF=$(python -c 'import gitnetdiag.load.locustfile as m; print(m.__file__)')
    locust -f $LF --master --autostart --autoquit 30 -u 32 -r 32 -t 60s --expect-workers 2 \\
        --git-url git://server/a.git git://server/b.git --git-protocol git \\
        --git-ops clone,fetch,push
    locust -f $LF --worker --master-host 10.0.0.1      # on each generator

The master checks its ``--git-*`` options (one or more URLs of one protocol
family) and sends them to the workers, which spread the operations over the
URLs like ``gitnetdiag load`` does: round robin per operation type. Set
``GITNETDIAG_LOCUST_WORKER_LOG=DIR`` on a worker to have it log every operation
it made (an independent count to check the collected results against);
then ``gitnetdiag load --locust-master 10.0.0.1:8089`` collects the results.

Each operation fires Locust's ``request`` event (type ``git``, name = the
operation, response time and length, an exception on failure), so Locust's
own UI and CSVs show it too. When the run time is up, a worker lets its
operations in flight finish (at most ``--git-timeout``) unless Locust's
``--stop-timeout`` says otherwise: a push killed mid-way leaves a throwaway
branch whose fate the clean-up must then wait for. Workers also ship every operation record to the
master with their stats reports; the master serves them, with Locust's own
per-operation counts, at ``/gitnetdiag/results`` and can write them to
``--git-results FILE`` when it quits.

This module imports Locust (and so gevent, which monkey-patches the standard
library): only Locust itself may import it, never gitnetdiag's CLI.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from locust import User, constant, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from gitnetdiag.errors import UsageError
from gitnetdiag.load.locust_collect import RESULTS_PATH, LocustResults
from gitnetdiag.load.operations import Workspace
from gitnetdiag.load.stats import MixPicker, TargetPicker, parse_mix, parse_ops, parse_urls
from gitnetdiag.probe.gitpush import Transport
from gitnetdiag.redaction import redact_url
from gitnetdiag.vocabulary import TransportKind

RECORDS_KEY = "gitnetdiag_records"
WORKER_LOG_ENV = "GITNETDIAG_LOCUST_WORKER_LOG"
"""A directory: each worker appends every operation it made there as JSON lines."""


class GitOperationFailed(Exception):
    """A failed git operation, as Locust records it (``kind: git's last line``)."""


class _NodeState:
    """Per-process state: the workspace of a worker, the collected records of a master."""

    def __init__(self) -> None:
        self.workspaces: tuple[Workspace, ...] = ()
        self.picker: MixPicker | None = None
        self.targets: TargetPicker | None = None
        self.unsent: list[dict[str, Any]] = []
        self.collected: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.started_epoch: float | None = None
        self.stopped_epoch: float | None = None
        self.max_users = 0
        self.worker_log: Path | None = None
        self.slots = itertools.count()
        self.own_stop_timeout = False
        """Whether the running test's stop_timeout is ours (--stop-timeout was not given)."""


_state = _NodeState()


def _add_options(parser: Any) -> None:
    group = parser.add_argument_group("gitnetdiag")
    group.add_argument("--git-url", nargs="+", default=[],
                       help="one or more git remote URLs of one protocol")
    group.add_argument("--git-protocol", default="git", help="h1, h2, ssh or git")
    group.add_argument("--git-ops", default="clone,fetch,push",
                       help="operations: clone,fetch,push,ls-remote")
    group.add_argument("--git-mix", default="", help="weights like 40:35:25")
    group.add_argument("--git-timeout", type=float, default=300.0, help="per git command, s")
    group.add_argument("--git-ca-file", default="", help="CA bundle for HTTPS")
    group.add_argument("--git-ssh-command", default="", help="GIT_SSH_COMMAND for ssh://")
    group.add_argument("--git-push-bytes", type=int, default=64 * 1024,
                       help="size of each push's new file")
    group.add_argument("--git-results", default="", help="master: write the results here")


def _options(environment: Any) -> Any:
    return environment.parsed_options


def _given_urls(opts: Any) -> list[str]:
    """``--git-url``: a list from the command line, or one string (the web UI's form)."""
    value = opts.git_url
    items = [value] if isinstance(value, str) else list(value or [])
    return [url for item in items for url in str(item).split()]


def _urls(opts: Any) -> tuple[str, ...]:
    return parse_urls(_given_urls(opts), opts.git_protocol)


def _on_init(environment: Any, **_: Any) -> None:
    opts = _options(environment)
    if not isinstance(environment.runner, WorkerRunner) and opts is not None and opts.git_url:
        # Workers take the master's options when a test starts: check them here, once (an
        # empty list may still be filled in on the web UI's form).
        try:
            _urls(opts)
        except UsageError as exc:
            print(f"gitnetdiag locustfile: --git-url: {exc.one_line()}", file=sys.stderr)
            raise SystemExit(2) from exc
    web_ui = getattr(environment, "web_ui", None)
    if isinstance(environment.runner, MasterRunner) and web_ui is not None:
        def _results() -> Any:
            from flask import jsonify

            return jsonify(_payload(environment))

        web_ui.app.add_url_rule(RESULTS_PATH, "gitnetdiag_results", _results)


def _payload(environment: Any) -> dict[str, Any]:
    opts = _options(environment)
    runner = environment.runner
    counts = {}
    failures = {}
    for (name, method), entry in runner.stats.entries.items():
        if method == "git":
            counts[name] = entry.num_requests
            failures[name] = entry.num_failures
    with _state.lock:
        records = list(_state.collected)
    ops = parse_ops(opts.git_ops)
    urls = [redact_url(url) for url in _given_urls(opts)] or [""]
    return LocustResults(
        state=str(runner.state), records=records, target=urls[0], targets=urls,
        protocol=opts.git_protocol, ops=[str(op) for op in ops],
        mix=list(parse_mix(opts.git_mix or None, len(ops))), timeout_s=opts.git_timeout,
        started_epoch=_state.started_epoch, stopped_epoch=_state.stopped_epoch,
        users=max(_state.max_users, int(runner.user_count)),
        workers=int(getattr(runner, "worker_count", 0)),
        locust_counts=counts, locust_failures=failures,
    ).payload()


def _on_test_start(environment: Any, **_: Any) -> None:
    opts = _options(environment)
    _state.started_epoch = time.time()
    _state.stopped_epoch = None
    _state.max_users = 0
    if isinstance(environment.runner, MasterRunner):
        with _state.lock:
            _state.collected.clear()
        return
    if not environment.stop_timeout:
        # Let the operations in flight finish (each is bounded by --git-timeout): a push
        # killed after its pack was sent leaves a branch that may still land, and the
        # clean-up then waits for it, holding this worker in "stopping" for half a minute.
        # Only while the users stop: a worker also sleeps stop_timeout after it stopped,
        # deaf to the master's quit (see _on_test_stop).
        _state.own_stop_timeout = True
        environment.stop_timeout = float(opts.git_timeout)
    ops = [str(op) for op in parse_ops(opts.git_ops)]
    workspaces = tuple(
        Workspace(Transport(protocol=TransportKind(opts.git_protocol), url=url,
                            ca_file=opts.git_ca_file or None,
                            ssh_command=opts.git_ssh_command or None),
                  timeout_s=opts.git_timeout, push_bytes=opts.git_push_bytes)
        for url in _urls(opts)
    )
    try:
        for workspace in workspaces:
            workspace.prepare(ops)
    except BaseException:
        for workspace in workspaces:
            workspace.close()
        raise
    _state.picker = MixPicker(ops, parse_mix(opts.git_mix or None, len(ops)))
    _state.targets = TargetPicker(len(workspaces))
    _state.workspaces = workspaces
    # Workers take the master's --git-* options, so a per-worker setting is an env variable.
    log_dir = os.environ.get(WORKER_LOG_ENV)
    if log_dir:
        directory = Path(log_dir)
        directory.mkdir(parents=True, exist_ok=True)
        _state.worker_log = directory / f"worker-{os.getpid()}.jsonl"


def _on_spawning_complete(user_count: int, **_: Any) -> None:
    _state.max_users = max(_state.max_users, int(user_count))


def _on_test_stop(environment: Any, **_: Any) -> None:
    _state.stopped_epoch = time.time()
    if _state.own_stop_timeout:
        _state.own_stop_timeout = False
        environment.stop_timeout = 0.0
    workspaces, _state.workspaces = _state.workspaces, ()
    for workspace in workspaces:
        workspace.close()


def _on_quitting(environment: Any, **_: Any) -> None:
    _on_test_stop(environment)
    opts = _options(environment)
    if isinstance(environment.runner, MasterRunner) and opts.git_results:
        Path(opts.git_results).write_text(json.dumps(_payload(environment), indent=2) + "\n")


def _on_report_to_master(client_id: str, data: dict[str, Any], **_: Any) -> None:
    with _state.lock:
        data[RECORDS_KEY], _state.unsent = _state.unsent, []


def _on_worker_report(client_id: str, data: dict[str, Any], **_: Any) -> None:
    records = data.get(RECORDS_KEY, [])
    with _state.lock:
        _state.collected.extend({**r, "worker": client_id} for r in records)


class GitUser(User):
    """One concurrent git client: runs the mix's operations back to back."""

    wait_time = constant(0)

    def on_start(self) -> None:
        self.slot = next(_state.slots)

    @task
    def git_operation(self) -> None:
        workspaces, picker, targets = _state.workspaces, _state.picker, _state.targets
        if not workspaces or picker is None or targets is None:
            raise StopUser()
        op = picker.next()
        target = targets.next(op)
        started = time.time()
        outcome = workspaces[target].run(op, self.slot)
        record = {"op": op, "slot": self.slot, "start_epoch": started, "wall_s": outcome.wall_s,
                  "ok": outcome.ok, "kind": outcome.kind, "message": outcome.message,
                  "bytes_moved": outcome.bytes_moved, "target": target}
        with _state.lock:
            _state.unsent.append(record)
        if _state.worker_log is not None:
            with _state.worker_log.open("a") as log:
                log.write(json.dumps(record) + "\n")
        self.environment.events.request.fire(
            request_type="git", name=op, response_time=outcome.wall_s * 1000.0,
            response_length=outcome.bytes_moved,
            exception=None if outcome.ok else GitOperationFailed(
                f"{outcome.kind}: {outcome.message}"),
            context={"slot": self.slot, "target": target},
        )


# Locust's EventHook is untyped; listeners are registered through an Any view of it.
_events: Any = events

_events.init_command_line_parser.add_listener(_add_options)
_events.init.add_listener(_on_init)
_events.test_start.add_listener(_on_test_start)
_events.spawning_complete.add_listener(_on_spawning_complete)
_events.test_stop.add_listener(_on_test_stop)
_events.quitting.add_listener(_on_quitting)
_events.report_to_master.add_listener(_on_report_to_master)
_events.worker_report.add_listener(_on_worker_report)
