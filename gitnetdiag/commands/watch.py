"""``gitnetdiag watch``: the probes on a schedule, served as Prometheus metrics."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType

import typer

from gitnetdiag.errors import ExitCode
from gitnetdiag.watch.config import WatchConfig, load_config, parse_listen


def _setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")


def _check_privileges(config: WatchConfig) -> None:
    from gitnetdiag.proc import require_root

    if any(t.lab is not None for t in config.targets):
        require_root("gitnetdiag watch with a lab target (it probes in the lab's namespace)")


def watch_command(
    config_path: Path = typer.Option(..., "--config", "-c", help="The watch.yaml to run."),
    listen: str | None = typer.Option(
        None, "--listen", help="Address to serve on, HOST:PORT (overrides listen:)."),
    once: bool = typer.Option(
        False, "--once", help="Run one cycle per target, print the metrics, exit "
        "(1 when a push or clone failed)."),
) -> None:
    """Probe each configured target on its interval and serve /metrics for Prometheus.

    Every cycle pushes to throwaway branches that are deleted (as 'gitnetdiag
    diagnose' does), or with direction: fetch only clones (read-only, as
    'diagnose --direction fetch'), or both; keeps its run directory (newest
    keep_runs per target) and updates the metrics; /probe?target=NAME runs one
    cycle on demand and answers with its metrics (the blackbox exporter's pattern).
    """
    from gitnetdiag.watch.metrics import WatchMetrics
    from gitnetdiag.watch.scheduler import Scheduler, SubprocessCycle
    from gitnetdiag.watch.server import make_server

    config = load_config(config_path)
    host = port = None
    if listen is not None:
        host, port = parse_listen(listen)
    _check_privileges(config)
    _setup_logging()
    metrics = WatchMetrics(t.name for t in config.targets)
    scheduler = Scheduler(config, metrics, SubprocessCycle())
    if once:
        samples = [scheduler.probe(target) for target in config.targets]
        typer.echo(metrics.render().decode(), nl=False)
        if not all(s.success for s in samples):
            raise typer.Exit(int(ExitCode.FAILURE))
        return
    server = make_server(config, scheduler, metrics, host, port)
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    bound_host, bound_port = server.server_address[:2]
    logging.getLogger("gitnetdiag.watch").info(
        "watch: serving http://%s:%s/metrics for %d target(s)", bound_host, bound_port,
        len(config.targets))
    serving = threading.Thread(target=server.serve_forever, name="watch-http", daemon=True)
    serving.start()
    scheduler.start()
    try:
        while not stopping.wait(1.0):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        logging.getLogger("gitnetdiag.watch").info("watch: stopping, running cycles clean up")
        scheduler.stop()
        server.shutdown()
        server.server_close()


def register(app: typer.Typer) -> None:
    app.command("watch", epilog=(
        "Examples:\n\n"
        "  gitnetdiag watch --config /etc/gitnetdiag/watch.yaml\n\n"
        "  gitnetdiag watch --config watch.yaml --listen 127.0.0.1:9718\n\n"
        "  gitnetdiag watch --config watch.yaml --once      one cycle per target, then exit\n\n"
        "  curl 'http://127.0.0.1:9718/probe?target=edge'   one cycle now (blackbox style)"
    ))(watch_command)

