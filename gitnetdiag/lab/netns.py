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


CLONE_NEWNET = 0x40000000
"""``setns(2)``'s flag for a network namespace (``<sched.h>``)."""


def join_namespace(netns: str) -> bool:
    """Move this process into ``netns`` in place (``setns(2)``, root): True when it did.

    Only while the process has one thread (a network namespace is per thread; threads and
    children started afterwards inherit it). Saves the interpreter's second start-up that
    :func:`reexec_in_namespace` costs (0.8 s of a ``--lab`` diagnosis, issue 47). What
    ``ip netns exec`` adds besides is not needed here: the lab puts nothing in
    ``/etc/netns``, and nothing of the client reads ``/sys/class/net`` (``/proc/sys/net``,
    ``ss`` and ``tcpdump -i any`` follow the calling thread's namespace). False (nothing
    changed): the caller re-executes instead."""
    import ctypes
    import threading

    if threading.active_count() != 1:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/run/netns/{netns}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return int(libc.setns(fd, CLONE_NEWNET)) == 0 and in_namespace(netns)
    finally:
        os.close(fd)


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

    Commands given ``--lab`` call this first: outside the namespace it enters it in place
    (:func:`join_namespace`), else re-executes the same command line there (needs root)
    and does not return; inside it returns the state, so the command can fill in the
    lab's URLs and keys.
    """
    import sys

    from gitnetdiag.proc import require_root

    state = load_state(instance)
    apply_client_env(state)
    if not in_namespace(state.client_ns):
        require_root(f"gitnetdiag {command} --lab")
        if not os.path.exists(f"/run/netns/{state.client_ns}"):
            raise LabError(f"network namespace {state.client_ns} does not exist",
                           hint="run: gitnetdiag lab up")
        if join_namespace(state.client_ns):
            os.environ["GITNETDIAG_IN_LAB_NS"] = state.client_ns
            return state
        reexec_in_namespace(state.client_ns, [sys.executable, "-m", "gitnetdiag", *sys.argv[1:]])
    return state
