"""The lab as a remote: its URLs, CA and keys, as ``probe``, ``diagnose``, ``load`` and
``watch`` take them.

One rule for every command: what the user gave wins; the lab fills in the rest. With
``insecure`` the lab's CA is not filled in (certificates are not verified, so no CA is
meant to be used).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from enum import StrEnum

from gitnetdiag.model.lab.state import LabState


class LabHttp(StrEnum):
    """Which HTTPS way into the lab a run uses."""

    EDGE = "edge"
    """Through the TLS edge (HAProxy by default) to Apache's plain port."""
    DIRECT = "direct"
    """Straight to Apache with mod_http2."""


@dataclass(frozen=True, kw_only=True)
class LabRemote:
    """The lab's remotes and credentials, the user's own choices applied."""

    https: str
    """The HTTPS URL of the chosen way in (``https_edge`` or ``https_direct``)."""
    ssh: str
    """The ssh:// URL of the lab's sshd."""
    git: str
    """The git:// URL of the lab's git daemon."""
    ca_file: str | None
    """The CA bundle to verify HTTPS with: the user's, else the lab's; None with insecure."""
    ssh_key: str
    """The SSH private key: the user's, else the lab's."""
    ssh_known_hosts: str
    """The known_hosts file: the user's, else the lab's."""
    instance: str
    """The lab instance's name."""
    lab_http: LabHttp
    """The HTTPS way in."""
    faults: tuple[str, ...]
    """The lab's active faults."""
    rtt_ms: float
    """The round-trip delay the lab's router adds."""
    ssh_config: str = ""
    """The ssh config file the lab's SSH runs with (``ssh -F``: its jump host), "" for none."""

    def recorded(self, *, with_way_in: bool = True) -> dict[str, object]:
        """What a run records about the lab (the manifest's or load report's extras)."""
        facts: dict[str, object] = {"lab_instance": self.instance}
        if with_way_in:
            facts["lab_http"] = self.lab_http.value
        return facts | {"lab_faults": list(self.faults), "lab_rtt_ms": self.rtt_ms}


UserPath = str | os.PathLike[str] | None
"""A file the user named (a string from a config, a Path from the command line), or None."""


def lab_remote(state: LabState, *, lab_http: LabHttp = LabHttp.EDGE, ca_file: UserPath = None,
               insecure: bool = False, ssh_key: UserPath = None,
               ssh_known_hosts: UserPath = None) -> LabRemote:
    """The lab of ``state`` as a remote, the user's ``ca_file``/``ssh_key``/``ssh_known_hosts``
    kept where given; with ``insecure`` and no ``ca_file`` no CA at all."""
    endpoints = state.endpoints
    return LabRemote(
        https=endpoints.https_edge if lab_http is LabHttp.EDGE else endpoints.https_direct,
        ssh=endpoints.ssh, git=endpoints.git,
        ca_file=os.fspath(ca_file) if ca_file else None if insecure else state.ca_file,
        ssh_key=os.fspath(ssh_key) if ssh_key else state.ssh_key,
        ssh_known_hosts=os.fspath(ssh_known_hosts) if ssh_known_hosts else state.ssh_known_hosts,
        instance=state.instance, lab_http=lab_http, faults=tuple(state.faults),
        rtt_ms=state.rtt_ms, ssh_config=state.ssh_config)


SSH_CONNECT_TIMEOUT_S = 10
"""ssh's ``ConnectTimeout`` for the probe's git runs: far above any RTT, far below 2 min."""


def ssh_command(key: str | None, known_hosts: str | None, config: str | None = None) -> str:
    """The ``GIT_SSH_COMMAND`` of a probe: batch mode, a bounded connect, the key alone,
    strict known_hosts (``config``: an ssh config file read instead of ``~/.ssh/config``, the
    lab's jump host). ``ConnectTimeout`` bounds each of git's ssh connects (without it a
    port that stops answering after the path check holds a push for the kernel's SYN
    retries, about 2 min)."""
    parts = ["ssh", *(["-F", config] if config else []), "-o", "BatchMode=yes",
             "-o", f"ConnectTimeout={SSH_CONNECT_TIMEOUT_S}"]
    if key:
        parts += ["-i", key, "-o", "IdentitiesOnly=yes"]
    if known_hosts:
        parts += ["-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes"]
    return " ".join(shlex.quote(p) for p in parts)
