"""A path that forgets idle connections: ``path-idle-timeout``.

A stateful middlebox (NAT gateway, firewall, load balancer) drops its state of a TCP
connection after N s without a packet and then discards what follows, with no RST and no
FIN. A push whose server works silently for longer (a hook, index-pack) sends its pack and
waits for an answer that never comes; a clone whose server prepares its pack silently for
longer (counting and compressing objects, a pack-objects hook, with no
``uploadpack.keepAlive`` packets shorter than N) asks for its pack and waits for a pack that
never comes. From git's side that looks like a slow server. The
idle probe (:class:`~gitnetdiag.diagnosis.observations.IdlePathProbe`) tells them apart on
connections of the tool's own to the same port: keepalives answered after a short silence
and unanswered after a longer one, while a new connection works, say the path forgot the
connection; N lies between the two silences. A server that is merely busy answers every
keepalive (its kernel does), and a server that is down refuses the new connection.

Facts about managed products' idle timeouts come from ``data/path_idle_timeouts.toml``.
"""

from __future__ import annotations

from gitnetdiag.diagnosis.culprits._common import Hit, failure_cost_s, label, observed
from gitnetdiag.diagnosis.culprits.weights import WEIGHTS
from gitnetdiag.diagnosis.idletimeouts import MIDDLEBOXES, Middlebox
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import IdlePathProbe, Observations, ProtocolObservation
from gitnetdiag.diagnosis.units import fmt_s
from gitnetdiag.outcomes import FailureKind

SILENT_KINDS = frozenset({FailureKind.HUNG.value, FailureKind.TIMEOUT.value})
"""Push failures a dropped answer gives: git waits until it (or the probe) gives up."""
MATCH_MARGIN = 0.2
"""A product's idle timeout matches a bracket widened by this share on each side."""
RECEIVE_KEEPALIVE = "https://git-scm.com/docs/git-config#Documentation/git-config.txt-receivekeepAlive"
UPLOADPACK_KEEPALIVE = ("https://git-scm.com/docs/git-config#Documentation/"
                        "git-config.txt-uploadpackkeepAlive")
SSH_ALIVE = "https://man.openbsd.org/ssh_config#ServerAliveInterval"


def dropped_by_path(probe: IdlePathProbe | None) -> bool:
    """The idle probe saw the path forget a silent connection: a keepalive unanswered while
    a new connection to the same port worked."""
    return (probe is not None and probe.unanswered_from_s is not None
            and probe.new_connection_ok is True
            and (probe.answered_up_to_s is None
                 or probe.answered_up_to_s < probe.unanswered_from_s))


def _silent_protocol(obs: Observations, name: str, p: ProtocolObservation) -> float:
    """Seconds lost per push to silent failures the probe explains; 0 when none."""
    probe = p.idle_path
    if not dropped_by_path(probe) or probe is None:
        return 0.0
    if probe.silence_s < (probe.answered_up_to_s or 0.0):
        return 0.0  # the push was not silent long enough for the path to forget it
    cost, failed, _total = failure_cost_s(obs, name, SILENT_KINDS)
    return cost if failed else 0.0


def matching_middleboxes(low_s: float, high_s: float) -> list[Middlebox]:
    """Known products whose idle timeout lies in the bracket (widened by MATCH_MARGIN)."""
    return [m for m in MIDDLEBOXES.values()
            if low_s * (1 - MATCH_MARGIN) <= m.idle_timeout_s <= high_s * (1 + MATCH_MARGIN)]


def _product_line(m: Middlebox) -> str:
    how = (f"configurable: {m.setting}" if m.configurable
           else "fixed by the provider: keepalives are the only fix")
    return f"{m.name}: {m.idle_timeout_s} s ({how}; {m.source})"


def _middlebox_text(low_s: float, high_s: float) -> str:
    matches = matching_middleboxes(low_s, high_s)
    if matches:
        return ("Known middleboxes that forget idle connections after about that long: "
                + "; ".join(_product_line(m) for m in matches) + ".")
    known = ", ".join(f"{m.name} {m.idle_timeout_s} s" for m in MIDDLEBOXES.values())
    return ("No known managed product forgets connections after that long (" + known
            + "): look for a firewall or NAT on the path with a short idle timeout, and "
            "raise it above the server's longest silent phase.")


def _evidence(name: str, probe: IdlePathProbe, clone: bool) -> list[Evidence]:
    high = probe.unanswered_from_s
    assert high is not None
    what = (f"{label(name)} clone: silence after its pack request until given up" if clone
            else f"{label(name)} push: silence after its pack until given up")
    items = [
        Evidence(what=what, value=probe.silence_s, unit="s",
                 threshold=probe.answered_up_to_s or 0.0, comparison=">",
                 source=f"the {label(name)} {'clone' if clone else 'push'}'s monitor"),
        Evidence(what="keepalive unanswered after this silence", value=high, unit="s",
                 text=f"{probe.unanswered_probes} keepalive probe(s) unanswered "
                 "(TCP_INFO tcpi_probes), no RST or FIN", source=probe.source),
    ]
    if probe.answered_up_to_s is not None:
        items.append(Evidence(what="keepalive answered after this silence",
                              value=probe.answered_up_to_s, unit="s", source=probe.source))
    if probe.new_connection_s is not None:
        items.append(Evidence(what="new connection to the same port: handshake",
                              value=probe.new_connection_s, unit="s",
                              text="completed while the silent ones were forgotten",
                              source=probe.source))
    return items


def joint_bracket(brackets: list[tuple[float, float]]) -> tuple[float, float]:
    """The path's timeout as every port's probe brackets it (answered up to, unanswered
    from): where they overlap, the overlap (one point when one port's answered end is
    another's unanswered one); where they do not (each probe's own noise), their span."""
    low, high = max(b[0] for b in brackets), min(b[1] for b in brackets)
    if low > high:
        return min(b[0] for b in brackets), max(b[1] for b in brackets)
    return low, high


def _fix(low: float, high: float, clone: bool) -> str:
    """Keepalives more often than the path's timeout, the server's first for the direction
    that failed; or a longer timeout on the middlebox (the known products' values)."""
    keep = max(1, int((low or high) / 2))
    every = fmt_s(low or high)
    ssh = f"for SSH `ServerAliveInterval {keep}` in the client's ssh config ({SSH_ALIVE})"
    tcp = ("other long-lived connections: TCP keepalive below it "
           "(`net.ipv4.tcp_keepalive_time`)")
    if clone:
        keepalives = (
            f"on the git server `git config uploadpack.keepAlive {keep}`: upload-pack then "
            "sends an empty keepalive packet after that many seconds of pack-objects silence "
            "while it prepares the pack (git's default is 5 s; 0 turns them off; "
            f"{UPLOADPACK_KEEPALIVE}); from the client, {ssh}; {tcp}")
    else:
        keepalives = (
            f"on the git server `git config receive.keepAlive {keep}` (pushes; "
            f"{RECEIVE_KEEPALIVE}) and `git config uploadpack.keepAlive {keep}` (clones; "
            f"{UPLOADPACK_KEEPALIVE}); {ssh}; {tcp}")
    return (f"Keep the connection talking more often than every {every}: {keepalives}. Or "
            "raise the middlebox's idle timeout above the server's longest silent phase. "
            f"{_middlebox_text(low or high, high)}")


def path_idle_timeout(obs: Observations) -> Hit | None:
    clone = obs.run.transfer == "download"
    failing: list[str] = []
    evidence: list[Evidence] = []
    worst_s, worst_protocol = 0.0, None
    brackets: list[tuple[float, float]] = []
    for name, p in observed(obs):
        cost = _silent_protocol(obs, name, p)
        probe = p.idle_path
        if cost <= 0 or probe is None or probe.unanswered_from_s is None:
            continue
        failing.append(name)
        evidence += _evidence(name, probe, clone)
        low, high = probe.answered_up_to_s or 0.0, probe.unanswered_from_s
        brackets.append((low, high))
        if cost > worst_s:
            worst_s, worst_protocol = cost, name
    if not brackets:
        return None
    low, high = joint_bracket(brackets)
    which = " and ".join(label(n) for n in failing)
    between = (f"about {fmt_s(high)}" if low and low >= high
               else f"{fmt_s(low)} to {fmt_s(high)}" if low else f"at most {fmt_s(high)}")
    strength = "bracketed" if low else "unanswered-only"
    what = (f"{which} clones hang after the pack was asked for: the path forgets a "
            f"connection after {between} of silence and drops what follows (no RST or FIN), "
            "so the pack the server sends after its silent preparation never arrives"
            if clone else
            f"{which} pushes hang after the pack was sent: the path forgets a connection "
            f"after {between} of silence and drops what follows (no RST or FIN), so the "
            "server's answer after its silent work never arrives")
    return Hit(
        score=WEIGHTS["path-idle-timeout"][strength], cost_s=worst_s,
        cost_protocol=worst_protocol,
        summary=f"{what}; keepalives on the tool's own silent connections went unanswered "
        "while a new connection to the same port worked.",
        evidence=tuple(evidence), fix=_fix(low, high, clone))


def idle_path_hint(obs: Observations) -> str | None:
    """What to say of a stall nothing ranked explains when the idle probe saw the path
    forget silent connections (the server must not be blamed then); None otherwise."""
    for name, p in observed(obs):
        probe = p.idle_path
        if dropped_by_path(probe) and probe is not None:
            return (f"the idle probe of {label(name)}'s port saw keepalives unanswered after "
                    f"{fmt_s(probe.unanswered_from_s or 0.0)} of silence while a new "
                    "connection worked: the path forgets idle connections, not the server "
                    "being slow; see path-idle-timeout in docs/culprits.md")
    return None


def idle_kept_hint(obs: Observations) -> str | None:
    """What to say of such a stall when the idle probe's keepalives were answered after as
    long a silence as the push (or clone) waited (the path kept the connection); None
    otherwise."""
    for name, p in observed(obs):
        probe = p.idle_path
        kept = probe.answered_up_to_s if probe is not None else None
        if (probe is not None and kept is not None and probe.unanswered_from_s is None
                and kept >= probe.silence_s):
            clone = obs.run.transfer == "download"
            work = ("a slow pack preparation, pack-objects" if clone
                    else "a slow pre-receive hook, receive-pack")
            bound = "--stall-timeout" if clone else "--timeout"
            return (f"the idle probe of {label(name)}'s port had keepalives answered after "
                    f"{fmt_s(kept)} of silence, as long as the {'clone' if clone else 'push'} "
                    "waited: the path keeps idle connections, so the server most likely "
                    f"still works ({work}): run with a {bound} above the server's time, and "
                    "add 'gitnetdiag host' evidence with --host-report")
    return None
