"""The path-MTU black holes' router rules and their fix (pure: :mod:`gitnetdiag.lab.manager`
runs the rules, :mod:`gitnetdiag.lab.fix` rebuilds them).

- ``pmtu-blackhole`` (towards the server) and ``pmtu-blackhole-client`` (towards the
  client): the router's FORWARD chain drops every TCP packet of
  :data:`~gitnetdiag.lab.spec.PMTU_BLACKHOLE_BYTES` and more that way and sends no ICMP
  "fragmentation needed", as a narrower link whose ICMP is filtered does.
- Their fix is what ``path-mtu-blackhole`` names (``clamp-mss-to-pmtu``): the MSS of every
  SYN the router forwards clamped to the narrow link's MTU, in the router's ``mangle``
  FORWARD chain. The lab's narrow link is a drop rule, not an interface, so the router's
  own route MTU (1500) does not know it; ``--set-mss`` to that MTU less 40 B of IPv4 and
  TCP headers (:data:`MSS_CLAMP_BYTES`) is the clamp ``--clamp-mss-to-pmtu`` sets where the
  narrow link starts. The black hole stays: a fixed path still drops what is too large,
  nothing that large is sent any more.

A fixed fault leaves ``LabSpec.faults`` for ``LabSpec.fixed`` and the spec rebuilt from the
state no longer sets its length field, so both rules are read from the faults and the fixed
faults alike (:func:`blackhole_bytes`).
"""

from __future__ import annotations

from gitnetdiag.lab.httpfaults import FaultSettings
from gitnetdiag.model.lab.state import SERVER_IP

BLACKHOLE_BYTES = 1200
"""IP length from which the router drops packets under either black hole (the same value
as :data:`gitnetdiag.lab.spec.PMTU_BLACKHOLE_BYTES`, which is this)."""
NARROW_MTU_BYTES = BLACKHOLE_BYTES - 1
"""The narrow link's MTU: the largest IP packet that passes."""
MSS_CLAMP_BYTES = NARROW_MTU_BYTES - 40
"""The MSS the fix writes into every forwarded SYN: the MTU less 20 B of IPv4 and 20 B of
TCP header (RFC 879; options such as timestamps come out of the MSS, so a segment with
them is smaller still)."""

BLACKHOLE_FAULTS = {"pmtu-blackhole": "-d", "pmtu-blackhole-client": "-s"}
"""Each fault, and the side of the server address its dropped packets match (``-d``: to
the server, the push's data; ``-s``: from it, the clone's)."""

PMTU_FIXED_SETTINGS: dict[str, dict[str, object]] = {fault: {} for fault in BLACKHOLE_FAULTS}
"""No :class:`~gitnetdiag.lab.spec.LabSpec` field changes: the fault's name moves from
``faults`` to ``fixed`` and :func:`mangle_rules` reads the clamp from there."""


def blackhole_bytes(spec: FaultSettings, fault: str) -> int | None:
    """The drop length of ``fault``'s black hole when the lab has it, fixed or not."""
    return BLACKHOLE_BYTES if fault in (*spec.faults, *spec.fixed) else None


def forward_rules(spec: FaultSettings) -> list[tuple[str, ...]]:
    """The filter table's FORWARD rules (after ``-A FORWARD``) of the lab's black holes."""
    return [("-p", "tcp", side, SERVER_IP, "-m", "length", "--length",
             f"{BLACKHOLE_BYTES}:65535", "-j", "DROP")
            for fault, side in BLACKHOLE_FAULTS.items() if blackhole_bytes(spec, fault)]


def mangle_rules(spec: FaultSettings) -> list[tuple[str, ...]]:
    """The mangle table's FORWARD rules (after ``-t mangle -A FORWARD``) of a fixed black
    hole: the MSS clamp, one rule for both directions' SYNs (the SYN-ACK's MSS bounds what
    the client sends, the SYN's what the server sends)."""
    if not any(fault in spec.fixed for fault in BLACKHOLE_FAULTS):
        return []
    return [("-p", "tcp", "--tcp-flags", "SYN,RST", "SYN", "-j", "TCPMSS",
             "--set-mss", str(MSS_CLAMP_BYTES))]


def fixed_now(before: FaultSettings, after: FaultSettings) -> list[str]:
    """The black holes ``after`` fixes that ``before`` did not."""
    return [f for f in BLACKHOLE_FAULTS if f in after.fixed and f not in before.fixed]


def fix_notes(before: FaultSettings, after: FaultSettings) -> list[str]:
    """What ``lab fix`` says it changed, one line per fixed black hole."""
    return [f"router mangle FORWARD: every SYN's MSS clamped to {MSS_CLAMP_BYTES} B (the "
            f"{NARROW_MTU_BYTES} B MTU of {fault}'s narrow link less 40 B of headers, "
            "TCPMSS --set-mss); the narrow link stays" for fault in fixed_now(before, after)]
