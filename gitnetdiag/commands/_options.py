"""Options that several commands share, each defined once as a typer ``Annotated`` alias.

A command function takes them as ``lab: Lab = False``; the default stays at the
parameter (typer reads it there), the name, the checks and the help come from here.
Typer needs every option as a parameter of the command function: that is why the
command functions have many parameters, and the one reason they may.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from gitnetdiag.probe.labremote import LabHttp

DEFAULT_TIMEOUT_S = 300.0
"""Default --timeout of each git run."""


class ReportFormat(StrEnum):
    """--format of the diagnosis."""

    TERMINAL = "terminal"
    MD = "md"
    HTML = "html"
    JSON = "json"


Lab = Annotated[bool, typer.Option(
    "--lab", help="Use the local lab as the remote (runs in its client ns).")]
LabInstance = Annotated[str, typer.Option("--lab-instance", help="Lab instance name.")]
LabWayIn = Annotated[LabHttp, typer.Option(
    "--lab-http", help="Lab HTTPS way in: edge (HAProxy) or direct (Apache).")]
CaFile = Annotated[Path | None, typer.Option("--ca-file", help="CA bundle for HTTPS.")]
Insecure = Annotated[bool, typer.Option("--insecure", help="Do not verify HTTPS certificates.")]
FetchServerNetns = Annotated[str | None, typer.Option(
    "--host-netns", metavar="NS",
    help="The server runs in this network namespace here (root): a fetch reads its sockets' "
    "TCP_INFO there (send-buffer and window limits).")]
FetchServerLocal = Annotated[bool, typer.Option(
    "--host-local", help="The server runs on this host: a fetch reads its sockets' TCP_INFO.")]
SshKey = Annotated[Path | None, typer.Option("--ssh-key", help="SSH private key.")]
SshKnownHosts = Annotated[Path | None, typer.Option(
    "--ssh-known-hosts", help="known_hosts file for the SSH remote.")]
GitTimeout = Annotated[float, typer.Option(
    "--timeout", min=1.0, help="Timeout of each git run, seconds.")]
CleanupWait = Annotated[float, typer.Option(
    "--cleanup-wait", min=0.0,
    help="Seconds the clean-up of a push cut short (timeout, Ctrl-C) waits for the "
    "server to finish applying it (a slow pre-receive hook) before deleting the "
    "throwaway branch; past it the branch is reported 'unconfirmed' with its remove "
    "command.")]
RunDir = Annotated[Path | None, typer.Option(
    "--out", help="Run directory (default: runs/<time> for probe and diagnose, none for "
    "load).")]
JsonSummary = Annotated[Path | None, typer.Option(
    "--json", help="Write the results as JSON here ('-' = stdout, the tables then go "
    "to stderr).")]
JsonResults = Annotated[str | None, typer.Option(
    "--json", metavar="OUT", help="Also write the results as JSON to OUT ('-' = stdout).")]
ReportOut = Annotated[Path | None, typer.Option(
    "--out", "-o", help="Write here instead of stdout ('-' = stdout).")]
LabName = Annotated[str, typer.Option(
    "--name", help="Lab instance name (1-8 lowercase letters/digits); several instances can "
    "coexist.")]
LabJson = Annotated[bool, typer.Option("--json", help="Print the lab state as JSON.")]

RemoteArg = Annotated[str | None, typer.Argument(
    metavar="REMOTE",
    help="A remote of the checkout you run in (origin, the default there when no URL "
    "option is given) or a URL: its URL as git resolves it (pushurl, insteadOf), the "
    "other transport derived from it (HTTPS <-> SSH) and probed when its port answers. "
    "--http/--ssh/--git override.", show_default=False)]
"""``diagnose [REMOTE]``."""

BundleFile = Annotated[Path | None, typer.Option(
    "--bundle", metavar="FILE",
    help="With the diagnosis: also write FILE, one .tgz to attach to a ticket (the reports, "
    "the records 'gitnetdiag report' re-renders offline, headers-only captures, an index; no "
    "TLS keys unless --full; at most 20 MiB).")]
"""``--bundle FILE`` of ``diagnose``."""

FetchSeed = Annotated[str | None, typer.Option(
    "--fetch-seed", metavar="SIZE",
    help="With --direction fetch|both, for a repository too small to measure or empty: "
    "push SIZE of generated data to a throwaway branch, fetch that branch, delete it. "
    "Without it a fetch writes nothing on the server.")]
"""``--fetch-seed SIZE`` of ``probe``/``diagnose``."""
