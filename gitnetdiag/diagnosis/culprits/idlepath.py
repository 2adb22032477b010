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

The positive controls ask the application behind the port too
(:class:`~gitnetdiag.diagnosis.observations.ControlAnswer`): an HTTP/2 PING on a native
HTTP/2 connection, OpenSSH's keepalive request on a native SSH connection. One unanswered
after a silence while a new connection works is the path forgetting that connection as
well; one answered after a silence longer than every unanswered one by more than
:data:`KEPT_MARGIN` says the path kept the connection (the keepalives alone went
unanswered: a middlebox that drops keepalive probes), so the path is not blamed; one
answered after as long a silence as the transfer waited says the server still works.

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
KEPT_MARGIN = 0.1
"""An application keepalive answered after a silence this share longer than the shortest
unanswered one says the path kept the connection (timers' noise stays below it)."""
CONTROL_NAMES = {"h2-ping": "HTTP/2 PING", "ssh-keepalive": "SSH keepalive (keepalive@openssh.com)"}
CONTROL_ANSWERS = {"h2-ping": "PING ACK", "ssh-keepalive": "reply from sshd"}


def control_bracket(probe: IdlePathProbe, kind: str) -> tuple[float | None, float | None]:
    """(longest silence after which a control of ``kind`` was answered, shortest after
    which one was not); either None when none was."""
    answered = [c.silence_s for c in probe.controls if c.kind == kind and c.answered]
    unanswered = [c.silence_s for c in probe.controls if c.kind == kind and not c.answered]
    return max(answered, default=None), min(unanswered, default=None)


def _brackets(probe: IdlePathProbe) -> list[tuple[float, float]]:
    """(answered up to, unanswered from) of the keepalives and of each kind of control that
    saw a silence go unanswered."""
    found = []
    if probe.unanswered_from_s is not None:
        found.append((probe.answered_up_to_s or 0.0, probe.unanswered_from_s))
    for kind in sorted({c.kind for c in probe.controls}):
        low, high = control_bracket(probe, kind)
        if high is not None:
            found.append((low or 0.0, high))
    return found


def kept_by_path(probe: IdlePathProbe) -> float | None:
    """The longest silence after which an application keepalive was answered; None when
    none was."""
    return max((c.silence_s for c in probe.controls if c.answered), default=None)


def path_bracket(probe: IdlePathProbe | None) -> tuple[float, float] | None:
    """The path's idle timeout as the keepalives and the controls bracket it (where they
    overlap, the overlap), when the probe saw the path forget a silent connection: a
    keepalive or a control unanswered (each after a longer silence than any answered one
    of its kind), no control answered after a clearly longer silence, and a new
    connection to the same port worked; None otherwise."""
    if probe is None or probe.new_connection_ok is not True:
        return None
    brackets = [(low, high) for low, high in _brackets(probe) if low < high]
    if not brackets:
        return None
    forgot = min(high for _, high in brackets)
    kept = kept_by_path(probe)
    if kept is not None and kept >= forgot * (1 + KEPT_MARGIN):
        return None
    return joint_bracket(brackets)


def dropped_by_path(probe: IdlePathProbe | None) -> bool:
    """The idle probe saw the path forget a silent connection (:func:`path_bracket`)."""
    return path_bracket(probe) is not None


def _silent_protocol(obs: Observations, name: str, p: ProtocolObservation) -> float:
    """Seconds lost per push to silent failures the probe explains; 0 when none."""
    probe = p.idle_path
    bracket = path_bracket(probe)
    if bracket is None or probe is None:
        return 0.0
    if probe.silence_s < bracket[0]:
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


def _control_evidence(probe: IdlePathProbe) -> list[Evidence]:
    """Per kind of control: the longest silence answered (and its round trip), the
    shortest unanswered."""
    items = []
    for kind in sorted({c.kind for c in probe.controls}):
        name, answer = CONTROL_NAMES.get(kind, kind), CONTROL_ANSWERS.get(kind, "an answer")
        low, high = control_bracket(probe, kind)
        if low is not None:
            first = next(c for c in probe.controls if c.kind == kind and c.silence_s == low)
            items.append(Evidence(
                what=f"{name} answered after this silence", value=low, unit="s",
                text=f"{answer} came", source=f"{probe.source}, a connection of the tool's"))
            if first.round_trip_ms is not None:
                items.append(Evidence(what=f"{name} round trip", value=first.round_trip_ms / 1e3,
                                      unit="s", source=probe.source))
        if high is not None:
            wait = next(c.wait_s for c in probe.controls if c.kind == kind
                        and c.silence_s == high)
            items.append(Evidence(
                what=f"{name} unanswered after this silence", value=high, unit="s",
                text=f"no {answer} within {fmt_s(wait)}", source=probe.source))
    return items


def _evidence(name: str, probe: IdlePathProbe, clone: bool) -> list[Evidence]:
    what = (f"{label(name)} clone: silence after its pack request until given up" if clone
            else f"{label(name)} push: silence after its pack until given up")
    items = [
        Evidence(what=what, value=probe.silence_s, unit="s",
                 threshold=probe.answered_up_to_s or 0.0, comparison=">",
                 source=f"the {label(name)} {'clone' if clone else 'push'}'s monitor"),
    ]
    if probe.unanswered_from_s is not None:
        items.append(Evidence(what="keepalive unanswered after this silence",
                              value=probe.unanswered_from_s, unit="s",
                              text=f"{probe.unanswered_probes} keepalive probe(s) unanswered "
                              "(TCP_INFO tcpi_probes), no RST or FIN", source=probe.source))
    if probe.answered_up_to_s is not None:
        items.append(Evidence(what="keepalive answered after this silence",
                              value=probe.answered_up_to_s, unit="s", source=probe.source))
    if probe.new_connection_s is not None:
        items.append(Evidence(what="new connection to the same port: handshake",
                              value=probe.new_connection_s, unit="s",
                              text="completed while the silent ones were forgotten",
                              source=probe.source))
    return items + _control_evidence(probe)


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
        bracket = path_bracket(probe)
        if cost <= 0 or probe is None or bracket is None:
            continue
        failing.append(name)
        evidence += _evidence(name, probe, clone)
        brackets.append(bracket)
        if cost > worst_s:
            worst_s, worst_protocol = cost, name
    if not brackets:
        return None
    low, high = joint_bracket(brackets)
    which = " and ".join(label(n) for n in failing)
    between = (f"about {fmt_s(high)}" if low and low >= high
               else f"{fmt_s(low)} to {fmt_s(high)}" if low else f"at most {fmt_s(high)}")
    strength = "bracketed" if low else "unanswered-only"
    controls = _controls_clause(obs, failing)
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
        f"{controls}while a new connection to the same port worked.",
        evidence=tuple(evidence), fix=_fix(low, high, clone))


def _controls_clause(obs: Observations, names: list[str]) -> str:
    """What the application keepalives said, for the summary ("" without any)."""
    parts = []
    for name in names:
        probe = obs.protocols[name].idle_path
        for kind in sorted({c.kind for c in probe.controls} if probe else ()):
            assert probe is not None
            low, high = control_bracket(probe, kind)
            said = (f"answered after {fmt_s(low)}" if low is not None else "")
            said += (" and " if said and high is not None else "") + (
                f"not after {fmt_s(high)}" if high is not None else "")
            parts.append(f"an {CONTROL_NAMES.get(kind, kind)} of {label(name)} was {said}")
    return f"and the application's own ({'; '.join(parts)}) " if parts else ""


def idle_path_hint(obs: Observations) -> str | None:
    """What to say of a stall nothing ranked explains when the idle probe saw the path
    forget silent connections (the server must not be blamed then); None otherwise."""
    for name, p in observed(obs):
        bracket = path_bracket(p.idle_path)
        if bracket is not None:
            return (f"the idle probe of {label(name)}'s port saw keepalives unanswered after "
                    f"{fmt_s(bracket[1])} of silence while a new "
                    "connection worked: the path forgets idle connections, not the server "
                    "being slow; see path-idle-timeout in docs/culprits.md")
    return None


def idle_kept_hint(obs: Observations) -> str | None:
    """What to say of such a stall when the idle probe's keepalives (or its application
    keepalives) were answered after as long a silence as the push (or clone) waited and
    none said the path forgot (the path kept the connection); None otherwise."""
    for name, p in observed(obs):
        probe = p.idle_path
        if probe is None or dropped_by_path(probe) or probe.unanswered_from_s is not None:
            continue
        app = kept_by_path(probe)
        kept = max((k for k in (probe.answered_up_to_s, app) if k is not None), default=None)
        if kept is None or kept < probe.silence_s:
            continue
        clone = obs.run.transfer == "download"
        work = ("a slow pack preparation, pack-objects" if clone
                else "a slow pre-receive hook, receive-pack")
        bound = "--stall-timeout" if clone else "--timeout"
        alive = "; ".join(f"an {CONTROL_NAMES.get(kind, kind)} answered after {fmt_s(low)}"
                          for kind in sorted({c.kind for c in probe.controls})
                          if (low := control_bracket(probe, kind)[0]) is not None
                          and low >= probe.silence_s)
        return (f"the idle probe of {label(name)}'s port had keepalives answered after "
                f"{fmt_s(kept)} of silence" + (f" ({alive}: the server's own software "
                                               "answered)" if alive else "")
                + f", as long as the {'clone' if clone else 'push'} waited: the path keeps "
                "idle connections, so the server most likely "
                f"still works ({work}): run with a {bound} above the server's time, and "
                "add 'gitnetdiag host' evidence with --host-report")
    return None
