"""``proxy-refused-tunnel``: the forward proxy git tunnels through refused the CONNECT.

With ``https_proxy`` / ``http.proxy`` set, git's first request is ``CONNECT host:port`` to
the proxy; a proxy that refuses it (403 for a port outside its CONNECT ports, e.g. Squid's
``SSL_ports``, tinyproxy's ``ConnectPort``; 407 when it wants credentials) ends every HTTPS
transfer before a byte reaches the server, and curl says ``CONNECT tunnel failed, response
403`` (older curl: ``Received HTTP code 403 from proxy after CONNECT``). tinyproxy 1.11.1
answers a CONNECT to a port it does not allow ``403 Access violation``, "The CONNECT method
not allowed with the port you tried to use." The fix is the proxy's, in its own terms.
"""

from __future__ import annotations

import re

from gitnetdiag.diagnosis.culprits._common import Hit, Tally, failure_cost_s, label
from gitnetdiag.diagnosis.measures import failed_pushes
from gitnetdiag.diagnosis.model import Evidence
from gitnetdiag.diagnosis.observations import Observations
from gitnetdiag.diagnosis.proxies import PROXIES, path_hops

REFUSED_CONNECT = re.compile(
    r"CONNECT tunnel failed, response (\d{3})|Received HTTP code (\d{3}) from proxy after CONNECT")
KINDS = ("http-status", "other", "auth", "refused", "server-error")


def proxy_refused_tunnel(obs: Observations) -> Hit | None:
    hops = {hop.protocol: hop for hop in path_hops(obs.run.first_hops)
            if hop.kind == "http-proxy"}
    refused: list[tuple[str, str, str]] = []  # (protocol, status, git's words)
    for name in hops:
        p = obs.protocols.get(name)
        for push in failed_pushes(p) if p is not None else ():
            if (match := REFUSED_CONNECT.search(push.error_message)) is not None:
                refused.append((name, match.group(1) or match.group(2), push.error_message))
                break
    if not refused:
        return None
    tally = Tally("proxy-refused-tunnel")
    name, status, words = refused[0]
    hop = hops[name]
    tally.add("connect-refused", *(Evidence(
        what=f"{label(n)}: the proxy {hops[n].proxy} answered CONNECT", text=f"{s}: {w}",
        source="git's stderr") for n, s, w in refused))
    tally.note(Evidence(what=f"the proxy {hop.proxy} of itself", text=hop.said or "-",
                        basis=f"from {hop.source}", source="plain request to the proxy"))
    cost = max(failure_cost_s(obs, n, KINDS)[0] for n, _, _ in refused)
    product = PROXIES.get(hop.product)
    if status == "407":
        fix = (f"give git the proxy's credentials: `http.proxy` / `https_proxy` as "
               f"`http://user:password@{hop.proxy}` (or `http.proxyAuthMethod`), or ask the "
               "proxy's owner for access")
    else:
        ports = (f"{product.name}: {product.knobs['connect_ports']} "
                 f"({product.sources['connect_ports']})" if product else
                 "the proxy's list of ports CONNECT may reach (unknown product: "
                 f"{hop.said or 'it did not name itself'})")
        fix = (f"let the proxy {hop.proxy} tunnel to the git server's port, in its terms: "
               f"{ports}; or set `no_proxy` for the git host if it is reachable directly")
    return tally.hit(
        cost_s=cost, cost_protocol=name,
        summary=(f"{', '.join(label(n) for n, _, _ in refused)} transfers never reached the "
                 f"server: the forward proxy {hop.proxy} ({hop.said or 'unknown product'}) "
                 f"refused the CONNECT tunnel with {status} (git: {words.strip()})."),
        fix=fix[0].upper() + fix[1:] + ".")
