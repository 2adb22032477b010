"""Prometheus metrics of the exporter: names, and samples -> metric families.

Gauges describe the latest cycle of each target and are rebuilt from its
:class:`ProbeSample` at every scrape (:func:`sample_families`, pure), so a
series whose label changes (an error kind, a verdict) never lingers with an
old value. Histograms and counters accumulate in the registry across cycles.

Every name has the ``gitnetdiag_`` prefix, base units and a unit suffix.
Labels: ``target`` (the configured name, never a URL), ``direction`` (``push``, ``fetch``:
on every metric that describes a transfer), ``protocol`` (h1, h2, ssh, git),
``error_kind``, ``verdict``, ``culprit``, ``window``, ``run``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gitnetdiag import __version__
from gitnetdiag.watch.sample import VERDICTS, DirectionSample, ProbeSample

# The _created series double every counter and histogram for no use in alerts or panels.
disable_created_metrics()  # type: ignore[no-untyped-call]

DURATION_BUCKETS_S = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 60.0, 120.0, 300.0, 600.0)
RATE_BUCKETS_BYTES_PER_S = tuple(float(2**16 * 4**k) for k in range(9))
"""64 KiB/s to 4 GiB/s, x4 apart: an HTTP/2 window capped at 64 KiB per RTT lands
buckets below an unbounded push."""

GAUGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "gitnetdiag_probe_success": (
        "1 if every transfer (push or clone) over the protocol completed in the last cycle, "
        "else 0", ("target", "direction", "protocol", "error_kind")),
    "gitnetdiag_probe_duration_seconds": (
        "Wall time of the last cycle (transfers, clean-up, analysis)", ("target",)),
    "gitnetdiag_last_probe_timestamp_seconds": (
        "Unix time the last cycle started", ("target",)),
    "gitnetdiag_last_transfer_duration_seconds": (
        "Median push or clone duration of the last cycle", ("target", "direction", "protocol")),
    "gitnetdiag_last_transfer_rate_bytes_per_second": (
        "Median push or clone rate of the last cycle", ("target", "direction", "protocol")),
    "gitnetdiag_h2_window_bytes": (
        "The server's HTTP/2 flow-control windows: initial stream window, peak connection "
        "credit", ("target", "window")),
    "gitnetdiag_ssh_channel_window_bytes": (
        "The server's initial SSH channel window", ("target",)),
    "gitnetdiag_flow_control_stall_seconds": (
        "Seconds a flow-control window stood at zero during the last native push",
        ("target", "direction", "protocol", "window")),
    "gitnetdiag_rtt_seconds": ("Round-trip time of the path in the last cycle", ("target",)),
    "gitnetdiag_verdict": (
        "1 for the verdict of the last diagnosis, 0 for the others",
        ("target", "direction", "verdict")),
    "gitnetdiag_culprit_score": (
        "Confidence 0..1 of each culprit in the last diagnosis (0: did not fire)",
        ("target", "direction", "culprit")),
    "gitnetdiag_culprit_cost_seconds": (
        "Estimated seconds a fired culprit cost on the last measured push or clone",
        ("target", "direction", "culprit")),
    "gitnetdiag_run_info": (
        "The run directory of the last cycle (gitnetdiag report RUN)",
        ("target", "direction", "run")),
}
"""Gauges rebuilt from the latest sample: name -> (help, labels)."""

HISTOGRAMS = {
    "gitnetdiag_transfer_duration_seconds":
        "Push or clone duration per cycle, direction and protocol",
    "gitnetdiag_transfer_rate_bytes_per_second":
        "Push or clone rate per cycle, direction and protocol",
}
COUNTERS = {
    "gitnetdiag_probes_total": "Cycles run, by result (success: every transfer completed)",
    "gitnetdiag_cleanup_failures_total":
        "Throwaway branches a cycle could not delete (left on the server), by protocol",
    "gitnetdiag_exporter_cycle_failures_total":
        "Cycles that produced no diagnosis, by kind (deadline, worker crash, lab down)",
}
EXPORTER_GAUGES = {
    "gitnetdiag_exporter_probes_in_flight": "Cycles running now",
    "gitnetdiag_exporter_retained_runs": "Run directories kept per target",
    "gitnetdiag_exporter_build_info": "The exporter's version",
}


def metric_names() -> frozenset[str]:
    """Every series name the exporter can emit (histogram series included)."""
    names = set(GAUGES) | set(COUNTERS) | set(EXPORTER_GAUGES)
    for name in HISTOGRAMS:
        names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return frozenset(names)


def _gauge(name: str) -> GaugeMetricFamily:
    help_text, labels = GAUGES[name]
    return GaugeMetricFamily(name, help_text, labels=list(labels))


def sample_families(samples: Iterable[ProbeSample]) -> list[Metric]:
    """The gauges of the latest cycle of each target in ``samples``."""
    families = {name: _gauge(name) for name in GAUGES}

    def add(name: str, labels: tuple[str, ...], value: float | None) -> None:
        if value is not None:
            families[name].add_metric(list(labels), float(value))

    for s in samples:
        t = s.target
        for d in s.directions:
            _direction_gauges(add, t, d)
        add("gitnetdiag_probe_duration_seconds", (t,), s.duration_s)
        add("gitnetdiag_last_probe_timestamp_seconds", (t,), s.started_unix_s)
        add("gitnetdiag_h2_window_bytes", (t, "stream"), s.h2_stream_window_bytes)
        add("gitnetdiag_h2_window_bytes", (t, "connection"), s.h2_connection_window_bytes)
        add("gitnetdiag_ssh_channel_window_bytes", (t,), s.ssh_channel_window_bytes)
        for stall in s.stalls:
            add("gitnetdiag_flow_control_stall_seconds",
                (t, "push", stall.protocol, stall.window), stall.seconds)
        add("gitnetdiag_rtt_seconds", (t,), s.rtt_s)
    return [family for family in families.values() if family.samples]


def _direction_gauges(add: Callable[[str, tuple[str, ...], float | None], None], t: str,
                      d: DirectionSample) -> None:
    """One direction's gauges of target ``t``: per protocol, the verdict, the culprits."""
    for p in d.protocols:
        add("gitnetdiag_probe_success", (t, d.direction, p.protocol, p.error_kind),
            float(p.success))
        add("gitnetdiag_last_transfer_duration_seconds", (t, d.direction, p.protocol),
            p.duration_s)
        add("gitnetdiag_last_transfer_rate_bytes_per_second", (t, d.direction, p.protocol),
            p.rate_bytes_per_s)
    states = VERDICTS if d.verdict in VERDICTS else (*VERDICTS, d.verdict)
    for state in states:
        add("gitnetdiag_verdict", (t, d.direction, state), 1.0 if state == d.verdict else 0.0)
    for culprit, score in sorted(d.culprit_scores.items()):
        add("gitnetdiag_culprit_score", (t, d.direction, culprit), score)
    for culprit, cost in sorted(d.culprit_costs_s.items()):
        add("gitnetdiag_culprit_cost_seconds", (t, d.direction, culprit), cost)
    if d.run_dir:
        add("gitnetdiag_run_info", (t, d.direction, d.run_dir.rstrip("/").rsplit("/", 1)[-1]),
            1.0)


class LatestSamples(Collector):
    """The latest sample of each target, as gauges at every scrape."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._samples: dict[str, ProbeSample] = {}

    def put(self, sample: ProbeSample) -> None:
        with self._lock:
            self._samples[sample.target] = sample

    def get(self, target: str) -> ProbeSample | None:
        with self._lock:
            return self._samples.get(target)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            samples = list(self._samples.values())
        yield from sample_families(samples)


class WatchMetrics:
    """The exporter's registry: latest-cycle gauges, cumulative histograms, health."""

    def __init__(self, targets: Iterable[str]) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.latest = LatestSamples()
        self.registry.register(self.latest)
        ProcessCollector(registry=self.registry)
        labels = ["target", "direction", "protocol"]
        self.transfer_duration = Histogram(
            "gitnetdiag_transfer_duration_seconds",
            HISTOGRAMS["gitnetdiag_transfer_duration_seconds"], labels,
            buckets=DURATION_BUCKETS_S, registry=self.registry)
        self.transfer_rate = Histogram(
            "gitnetdiag_transfer_rate_bytes_per_second",
            HISTOGRAMS["gitnetdiag_transfer_rate_bytes_per_second"], labels,
            buckets=RATE_BUCKETS_BYTES_PER_S, registry=self.registry)
        self.probes = Counter("gitnetdiag_probes", COUNTERS["gitnetdiag_probes_total"],
                              ["target", "result"], registry=self.registry)
        self.cleanup_failures = Counter(
            "gitnetdiag_cleanup_failures", COUNTERS["gitnetdiag_cleanup_failures_total"],
            ["target", "protocol"], registry=self.registry)
        self.cycle_failures = Counter(
            "gitnetdiag_exporter_cycle_failures",
            COUNTERS["gitnetdiag_exporter_cycle_failures_total"], ["target", "kind"],
            registry=self.registry)
        self.in_flight = Gauge("gitnetdiag_exporter_probes_in_flight",
                               EXPORTER_GAUGES["gitnetdiag_exporter_probes_in_flight"],
                               registry=self.registry)
        self.retained = Gauge("gitnetdiag_exporter_retained_runs",
                              EXPORTER_GAUGES["gitnetdiag_exporter_retained_runs"], ["target"],
                              registry=self.registry)
        Gauge("gitnetdiag_exporter_build_info", EXPORTER_GAUGES["gitnetdiag_exporter_build_info"],
              ["version"], registry=self.registry).labels(__version__).set(1)
        for target in targets:
            # Zero series from the start, so rate() and increase() see the first cycle.
            for result in ("success", "failure"):
                self.probes.labels(target, result)

    def record(self, sample: ProbeSample, *, cycle_failure: str | None = None) -> None:
        """Account a finished cycle."""
        for d in sample.directions:
            for p in d.protocols:
                labels = (sample.target, d.direction, p.protocol)
                if p.success and p.duration_s is not None:
                    self.transfer_duration.labels(*labels).observe(p.duration_s)
                if p.success and p.rate_bytes_per_s is not None:
                    self.transfer_rate.labels(*labels).observe(p.rate_bytes_per_s)
        self.probes.labels(sample.target, "success" if sample.success else "failure").inc()
        for protocol in sample.cleanup_failures:
            self.cleanup_failures.labels(sample.target, protocol).inc()
        if cycle_failure is not None:
            self.cycle_failures.labels(sample.target, cycle_failure).inc()
        self.latest.put(sample)

    def render(self) -> bytes:
        return generate_latest(self.registry)


def render_probe(sample: ProbeSample) -> bytes:
    """The answer to ``/probe?target=``: that one cycle's gauges only (blackbox style)."""
    registry = CollectorRegistry(auto_describe=False)
    latest = LatestSamples()
    latest.put(sample)
    registry.register(latest)
    return generate_latest(registry)
