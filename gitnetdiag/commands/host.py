"""``gitnetdiag host``: server-side evidence (listen queues, counters, kernel log, configs).

One library call, :func:`gitnetdiag.host.collect.collect_report`; this module
parses options, renders the report (:func:`gitnetdiag.report.host.render_host_report`)
and writes JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from gitnetdiag.errors import InputError, UsageError
from gitnetdiag.host.access import HostAccess, LocalAccess, SshAccess
from gitnetdiag.host.collect import collect_report
from gitnetdiag.inputfile import read_json_input, unusable_reason
from gitnetdiag.model.host.report import SCHEMA
from gitnetdiag.report.host import render_host_report

HELP = """Collect the server's own evidence: listen backlogs, queue overflows, kernel log, configs.

Run it ON the git server (or with --ssh user@host from elsewhere; nothing is
installed there). It reads:

  listening sockets (ss -ltnp): port, process, configured backlog (Send-Q),
  accept queue (Recv-Q, peak over --during); a backlog <= 16 is flagged;
  kernel counters (/proc/net/netstat, /proc/net/snmp) as deltas over --during:
  ListenOverflows, ListenDrops, TCPReqQFullDrop, TCPReqQFullDoCookies,
  SyncookiesSent, TCPTimeouts, RetransSegs ...;
  kernel log lines (dmesg): "Possible SYN flooding", firewall drops, conntrack full;
  sysctls: somaxconn, tcp_max_syn_backlog, tcp_syncookies, tcp_rmem/wmem, ...;
  configs: /etc/haproxy/haproxy.cfg, /etc/nginx, /etc/apache2, /etc/h2o,
  /etc/ssh/sshd_config and every --config FILE: HTTP/2 windows and sshd
  MaxStartups, each with the bytes per round trip it allows.

Whatever cannot be read (not root, no ss, kernel log restricted) is listed, not fatal.

[bold]Examples[/bold]

  gitnetdiag host --during 20 --json host.json
      while clients clone/push: 20 s of counter deltas and kernel log

  gitnetdiag host --ssh admin@git.example.com --during 30 --json -
      the same over SSH, JSON on stdout

  gitnetdiag host --json before.json; <load test>; gitnetdiag host --since before.json
      deltas between two snapshots

  gitnetdiag diagnose --host-report host.json ...
      rank the culprits with this evidence
"""


def _since_baseline(path: Path) -> tuple[dict[str, int], float | None]:
    """Counter totals and kernel-log mark of an earlier report."""
    def bad(message: str) -> InputError:
        return InputError(f"cannot read --since report: {message}",
                          hint="pass a JSON report written by `gitnetdiag host --json`")

    try:
        data: Any = read_json_input(path, error=bad)
    except FileNotFoundError as exc:
        raise bad(f"{path} does not exist") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise InputError(
            f"--since {path} is not a {SCHEMA} report",
            hint="pass a JSON report written by `gitnetdiag host --json`",
        )
    totals = data.get("counter_totals")
    if not isinstance(totals, dict) or not totals:
        raise InputError(
            f"--since {path} has no counter_totals",
            hint="that report could not read the counters; take a new snapshot",
        )
    mark = data.get("kernel_log_mark_s")
    return {str(k): int(v) for k, v in totals.items()}, float(mark) if mark is not None else None


def host_command(
    during: float = typer.Option(
        0.0, "--during", help="Seconds to watch counters and the kernel log."
    ),
    json_out: str | None = typer.Option(
        None, "--json", help="Write the JSON report here ('-': stdout)."
    ),
    config: list[str] = typer.Option(
        [], "--config", help="Extra config file to lint (repeatable)."
    ),
    standard_configs: bool = typer.Option(
        True,
        "--standard-configs/--no-standard-configs",
        help="Also lint configs in their standard places (/etc/haproxy, /etc/nginx, ...).",
    ),
    since: Path | None = typer.Option(
        None, "--since", help="Earlier report: counters as deltas since it."
    ),
    ssh: str | None = typer.Option(None, "--ssh", help="Collect on user@host[:port] over SSH."),
    ssh_key: str | None = typer.Option(None, "--ssh-key", help="Private key for --ssh."),
    ssh_known_hosts: str | None = typer.Option(
        None,
        "--ssh-known-hosts",
        help="known_hosts file for --ssh (unknown host keys are refused).",
    ),
) -> None:
    if during < 0 or during > 3600:
        raise UsageError(f"--during {during:g} is out of range", hint="use 0 to 3600 seconds")
    if ssh is None:
        for path in config:
            reason = unusable_reason(Path(path))
            if reason is not None:
                raise UsageError(
                    f"--config {path}: no such file" if reason == "does not exist"
                    else f"--config {path} {reason}",
                    hint="give the path of a config file")
    totals, log_mark = _since_baseline(since) if since is not None else (None, None)
    access: HostAccess
    remote: SshAccess | None = None
    if ssh is not None:
        remote = SshAccess(ssh, key_file=ssh_key, known_hosts=ssh_known_hosts)
        access = remote
    else:
        access = LocalAccess()
    try:
        report = collect_report(
            access,
            during_s=during,
            config_paths=config,
            standard_configs=standard_configs,
            since_totals=totals,
            since_log_mark_s=log_mark,
        )
    finally:
        if remote is not None:
            remote.close()
    text = json.dumps(report.to_dict(), indent=2) + "\n"
    if json_out == "-":
        sys.stdout.write(text)
        return
    if json_out is not None:
        try:
            Path(json_out).write_text(text)
        except OSError as exc:
            raise UsageError(
                f"cannot write {json_out}: {exc.strerror}", hint="choose a writable path"
            ) from exc
    console = Console(highlight=False, soft_wrap=True)
    console.file.write(render_host_report(report, width=console.width, color=console.is_terminal))


def register(app: typer.Typer) -> None:
    """Add ``gitnetdiag host`` to the application."""
    app.command("host", help=HELP)(host_command)
