"""The exporter's HTTP side: ``/metrics``, ``/probe?target=NAME`` and a small index."""

from __future__ import annotations

import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from gitnetdiag.errors import NetworkError
from gitnetdiag.watch.config import WatchConfig
from gitnetdiag.watch.metrics import WatchMetrics, render_probe
from gitnetdiag.watch.scheduler import Scheduler

log = logging.getLogger("gitnetdiag.watch")

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The classic text format: what generate_latest writes for our names, and what every
Prometheus 2 (Debian's included) reads; newer clients would announce version 1.0.0."""


def index_page(config: WatchConfig) -> str:
    lines = ["gitnetdiag watch", "", "/metrics   every target's latest cycle and the exporter",
             "/probe?target=NAME   one cycle now, that cycle's metrics", "", "targets:"]
    for t in config.targets:
        every = f"every {t.interval_s:g} s" if t.interval_s > 0 else "on /probe only"
        lines.append(f"  {t.name}: {', '.join(t.protocols)} ({t.direction}), {every}")
    return "\n".join(lines) + "\n"


def make_server(config: WatchConfig, scheduler: Scheduler, metrics: WatchMetrics,
                host: str | None = None, port: int | None = None) -> ThreadingHTTPServer:
    """An HTTP server bound to the configured address (not yet serving)."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "gitnetdiag-watch"

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _text(self, status: int, text: str) -> None:
            self._send(status, text.encode(), "text/plain; charset=utf-8")

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/metrics":
                self._send(200, metrics.render(), METRICS_CONTENT_TYPE)
            elif url.path == "/probe":
                name = (parse_qs(url.query).get("target") or [""])[0]
                target = config.target(name)
                if target is None:
                    known = ", ".join(t.name for t in config.targets)
                    self._text(400, f"unknown target {name!r}; configured: {known}\n")
                    return
                self._send(200, render_probe(scheduler.probe(target)), METRICS_CONTENT_TYPE)
            elif url.path == "/":
                self._text(200, index_page(config))
            else:
                self._text(404, "not found: try /metrics or /probe?target=NAME\n")

        def log_message(self, format: str, *args: object) -> None:
            log.debug("http: " + format, *args)

    address = (host or config.listen_host, config.listen_port if port is None else port)
    try:
        return ThreadingHTTPServer(address, Handler)
    except OSError as exc:
        raise NetworkError(
            f"cannot listen on {address[0]}:{address[1]}: {exc.strerror}",
            hint="pick a free address with listen: in the config or --listen",
            reference="listen-failed",
        ) from exc
