"""Entering the lab's client namespace: what ``--lab`` does before a probe or a load test."""

from __future__ import annotations

import os
from dataclasses import dataclass

from gitnetdiag.errors import LabError
from gitnetdiag.model.lab.state import LabState, load_state, namespace_prefix


@dataclass(frozen=True)
class Namespaces:
    """The three network namespaces of one lab instance."""

    client: str
    router: str
    server: str

    @classmethod
    def of(cls, instance: str) -> Namespaces:
        p = namespace_prefix(instance)
        return cls(client=f"{p}client", router=f"{p}router", server=f"{p}server")

    def all(self) -> tuple[str, str, str]:
        return (self.client, self.router, self.server)


def in_namespace(netns: str) -> bool:
    """True when this process already runs in the named network namespace."""
    try:
        return os.stat(f"/run/netns/{netns}").st_ino == os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return False


def reexec_in_namespace(netns: str, argv: list[str]) -> None:
    """Replace this process by ``argv`` run inside ``netns`` (no return).

    Used by commands given ``--lab``: the probe must run where the lab's
    client is, so that its packets cross the router's delay and faults.
    """
    if not os.path.exists(f"/run/netns/{netns}"):
        raise LabError(f"network namespace {netns} does not exist", hint="run: gitnetdiag lab up")
    os.environ["GITNETDIAG_IN_LAB_NS"] = netns
    os.execvp("ip", ["ip", "netns", "exec", netns, *argv])


def apply_client_env(state: LabState) -> None:
    """This process's environment as the lab client's (``probe``, ``diagnose``, ``load`` and
    ``watch`` cycles alike): its ``PATH`` first (the client's own git under
    ``client-pack-cpu``, as a user's PATH gives it) and its variables (the forward proxy's
    ``https_proxy``, as the user's shell sets it)."""
    if state.client_path and not os.environ.get("PATH", "").startswith(state.client_path + ":"):
        os.environ["PATH"] = f"{state.client_path}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    os.environ.update(state.client_env)


def enter_lab_client(instance: str, command: str) -> LabState:
    """The lab's state, with this process running in its client namespace.

    Commands given ``--lab`` call this first: outside the namespace it re-executes
    the same command line there (needs root) and does not return; inside it
    returns the state, so the command can fill in the lab's URLs and keys.
    """
    import sys

    from gitnetdiag.proc import require_root

    state = load_state(instance)
    apply_client_env(state)
    if not in_namespace(state.client_ns):
        require_root(f"gitnetdiag {command} --lab")
        reexec_in_namespace(state.client_ns, [sys.executable, "-m", "gitnetdiag", *sys.argv[1:]])
    return state
