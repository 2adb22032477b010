"""What a running lab looks like to its users (probes, tests, ``lab status``).

``lab up`` writes a :class:`LabState` as JSON to ``<state dir>/state.json``;
every other part of gitnetdiag reads it with :func:`load_state`.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gitnetdiag.errors import LabError

STATE_ROOT = Path(os.environ.get("GITNETDIAG_LAB_ROOT", "/run/gitnetdiag-lab"))
DEFAULT_INSTANCE = "default"

CLIENT_IP = "198.18.1.2"
ROUTER_CLIENT_SIDE_IP = "198.18.1.1"
ROUTER_SERVER_SIDE_IP = "198.18.2.1"
SERVER_IP = "198.18.2.2"

PORT_HTTPS_DIRECT = 443
PORT_HTTPS_EDGE = 8443
PORT_HTTP_BACKEND = 8080
PORT_SSH = 22
PORT_GIT = 9418


def namespace_prefix(instance: str) -> str:
    """``gnd-`` for the default instance, ``gnd-<instance>-`` otherwise."""
    return "gnd-" if instance == DEFAULT_INSTANCE else f"gnd-{instance}-"


def state_dir(instance: str) -> Path:
    """Directory holding one lab instance's files (configs, keys, repos, pids)."""
    return STATE_ROOT / instance


@dataclass(frozen=True, kw_only=True)
class LabEndpoints:
    """URLs of the lab's git remote, one per way in."""

    https_edge: str
    """HTTPS through the TLS edge (HAProxy, nginx, Caddy, h2o or Traffic Server; ALPN h2,
    http/1.1) to Apache's plain port."""
    https_direct: str
    """HTTPS straight to Apache with mod_http2 (ALPN h2, http/1.1)."""
    ssh: str
    """ssh:// URL for OpenSSH sshd with a git-shell user."""
    git: str
    """git:// URL for the git daemon service."""


@dataclass(frozen=True, kw_only=True)
class LabState:
    """A running lab instance."""

    instance: str
    """Instance name; namespaces are ``namespace_prefix(instance) + client|router|server``."""
    client_ns: str
    """Network namespace of the client (run git / probes here)."""
    router_ns: str
    """Network namespace of the router (delay, loss, rate, firewall)."""
    server_ns: str
    """Network namespace of the server (Apache, HAProxy, sshd, git daemon)."""
    client_ip: str
    server_ip: str
    rtt_ms: float
    """Round-trip delay the router adds."""
    loss: float
    """Random drop probability per packet in the router (0..1), each direction."""
    rate: str | None
    """Rate limit of the path (tc syntax such as ``100mbit``), or None."""
    faults: list[str]
    """Active named faults (``healthy`` when none)."""
    endpoints: LabEndpoints
    ca_file: str
    """PEM file of the lab's CA; clients verify the server certificate with it."""
    ssh_key: str
    """Private key (OpenSSH format) accepted for the git-shell user."""
    ssh_known_hosts: str
    """known_hosts file holding the lab sshd's host key."""
    ssh_user: str
    repo_path: str
    """Path (in the shared file system) of the bare repository all endpoints serve."""
    edge_h2_window: int
    """The edge's HTTP/2 receive window as configured (65535: its default, no line)."""
    apache_h2_window: int
    """Apache ``H2WindowSize``."""
    hook_delay_s: float
    """Seconds the pre-receive hook sleeps (0 when the slow-hook fault is off)."""
    auth_delay_s: float
    """Seconds the ref advertisement is delayed (0 when slow-auth is off)."""
    reset_port: int | None
    """Port the router answers with TCP resets (firewall-reset fault), or None."""
    pids: dict[str, int] = field(default_factory=dict)
    """Process ids of the lab's programs by role."""
    state_dir: str = ""
    edge: str = "haproxy"
    """The TLS edge on the edge port (haproxy, nginx, caddy, h2o, trafficserver)."""
    edge_buffering: bool = False
    """The edge buffers whole request bodies before forwarding (``edge-buffering``)."""
    http_credential_store: str = ""
    """Under the ``auth`` fault: git ``credential-store`` file (0600) holding the lab's
    user and token for the HTTPS URLs; empty when smart HTTP is open."""
    reset_after_bytes: int | None = None
    """With ``reset_port``: connections are cut after this many client bytes (None: refused)."""
    fixed: list[str] = field(default_factory=list)
    """Faults whose fix was applied (``lab fix``, ``lab up --fixed``); no longer in ``faults``."""

    storage_cgroup: str = ""
    """Under ``slow-storage``: the blkio cgroup the servers run in (its throttle limits the
    device under the repositories); a storage check of the repositories runs in it too."""
    client_path: str = ""
    """Under ``client-pack-cpu`` (and ``client-index-cpu``, ``client-h2-window``): a
    directory to put first on ``PATH`` in the client namespace; its ``git`` runs in a cgroup
    with a small CPU quota, or with an LD_PRELOAD shim holding libcurl's HTTP/2 window small."""
    client_env: dict[str, str] = field(default_factory=dict)
    """Variables the lab client's environment gets (``--lab`` sets them, as a user's shell
    profile does): ``https_proxy`` under the forward-proxy faults."""
    ssh_config: str = ""
    """Under ``ssh-jump-host``: the ssh config file (``ssh -F``) the lab's probe uses, whose
    ``ProxyJump`` sends SSH through the jump host; empty otherwise."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LabState:
        fields = dict(data)
        fields["endpoints"] = LabEndpoints(**fields["endpoints"])
        return cls(**fields)

    def ssh_command(self) -> str:
        """A ``GIT_SSH_COMMAND`` that authenticates with the lab key and verifies the host key."""
        return (
            f"ssh -i {self.ssh_key} -o IdentitiesOnly=yes -o BatchMode=yes "
            f"-o UserKnownHostsFile={self.ssh_known_hosts} -o StrictHostKeyChecking=yes"
        )


def load_state(instance: str = DEFAULT_INSTANCE) -> LabState:
    """Read a running lab's state or raise LabError with a hint."""
    path = state_dir(instance) / "state.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise LabError(
            f"no lab instance '{instance}' is up",
            hint="start it with: gitnetdiag lab up",
            reference="lab-not-up",
        ) from exc
    except (OSError, ValueError) as exc:
        raise LabError(
            f"cannot read {path}: {exc}", hint="run: gitnetdiag lab down, then lab up"
        ) from exc
    return LabState.from_dict(data)


def save_state(state: LabState) -> None:
    path = Path(state.state_dir) / "state.json"
    path.write_text(json.dumps(state.to_dict(), indent=2) + "\n")
