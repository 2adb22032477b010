"""``gitnetdiag watch``: the probes on a schedule, as a Prometheus exporter.

    watch.yaml --config--> WatchConfig (targets)
        Scheduler: per target, every interval (or on /probe?target=NAME)
            subprocess ``python -m gitnetdiag.watch.cycle`` (in the lab's client
            namespace when the target is a lab): per direction, run_probe ->
            diagnose_run (push) and run_fetch_probe -> diagnose_clones (fetch) ->
            ProbeSample (JSON on stdout); the run directories stay, pruned by retention
        metrics.WatchCollector: the latest ProbeSample per target -> gauges,
            plus cumulative histograms and counters -> /metrics

Each cycle runs in its own process: the capture analysis allocates numpy
arrays of whole captures, and a fresh process returns all of it to the system,
so the exporter's memory stays flat however long it runs; a lab target's probe
must also run in another network namespace than the HTTP server Prometheus
scrapes.
"""
