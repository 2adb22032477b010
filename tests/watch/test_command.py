"""`gitnetdiag watch` end to end on loopback, no lab: errors, --once, serving and stopping."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.ports import closed_port, free_port


def gitnetdiag(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitnetdiag", *args], capture_output=True,
                          text=True, timeout=timeout_s)


def test_bad_config_is_one_line_with_the_key(tmp_path: Path) -> None:
    config = tmp_path / "watch.yaml"
    config.write_text("targets:\n  - name: a\n    lab: x\n    interval: soon\n")
    proc = gitnetdiag("watch", "--config", str(config))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error [usage]: targets[0].interval: cannot read the duration 'soon' "
        "(hint: write it like 30s, 15m or 1h)"]
    missing = gitnetdiag("watch", "--config", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 3 and "Traceback" not in missing.stderr


def test_once_against_a_closed_port_reports_refused(tmp_path: Path) -> None:
    """A real cycle (generated repo, git push) to a port nobody listens on: refused, exit 1,
    and the token in the URL appears nowhere in the output or the labels."""
    port = closed_port()
    config = tmp_path / "watch.yaml"
    config.write_text(
        f"runs_dir: {tmp_path / 'runs'}\ntargets:\n  - name: closed\n"
        f"    urls: {{h1: 'https://ci:s3cret@127.0.0.1:{port}/r.git'}}\n"
        "    size: 64KiB\n    timeout: 20s\n    capture: false\n    native: false\n")
    proc = gitnetdiag("watch", "--config", str(config), "--once")
    assert proc.returncode == 1, proc.stderr
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(proc.stdout) for s in f.samples}
    key = ("gitnetdiag_probe_success", (("direction", "push"), ("error_kind", "refused"),
                                         ("protocol", "h1"), ("target", "closed")))
    assert samples[key] == 0.0, proc.stdout
    assert "s3cret" not in proc.stdout + proc.stderr
    runs = [p for p in (tmp_path / "runs" / "closed").iterdir() if p.is_dir()]
    assert len(runs) == 1 and (runs[0] / "manifest.json").is_file()
    assert "s3cret" not in (runs[0] / "manifest.json").read_text()


def test_once_fetch_target_against_a_closed_port_reports_refused(tmp_path: Path) -> None:
    """A read-only target's real cycle (git clone, no repository generated, no push): the
    refused clone is labelled direction="fetch", its run directory holds fetch.json, the
    reports and no push manifest, and the token appears nowhere."""
    port = closed_port()
    config = tmp_path / "watch.yaml"
    config.write_text(
        f"runs_dir: {tmp_path / 'runs'}\ntargets:\n  - name: mirror\n"
        f"    urls: {{h1: 'https://ci:s3cret@127.0.0.1:{port}/r.git'}}\n"
        "    direction: fetch\n    timeout: 20s\n    capture: false\n    native: false\n")
    proc = gitnetdiag("watch", "--config", str(config), "--once")
    assert proc.returncode == 1, proc.stderr
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(proc.stdout) for s in f.samples}
    success = {labels: v for (name, labels), v in samples.items()
               if name == "gitnetdiag_probe_success"}
    assert success == {(("direction", "fetch"), ("error_kind", "refused"), ("protocol", "h1"),
                        ("target", "mirror")): 0.0}, proc.stdout + proc.stderr
    assert not any(dict(labels).get("direction") == "push" for _, labels in samples)
    assert "s3cret" not in proc.stdout + proc.stderr
    runs = [p for p in (tmp_path / "runs" / "mirror").iterdir() if p.is_dir()]
    assert len(runs) == 1 and (runs[0] / "fetch.json").is_file()
    assert not (runs[0] / "manifest.json").exists()
    # The one set of renderers writes the clone's reports as a push cycle's, token-free.
    for name in ("fetch.json", "report.md", "report.html", "report.json"):
        assert "s3cret" not in (runs[0] / name).read_text(), name
    assert "Failed to connect" in (runs[0] / "report.md").read_text()


def test_serves_metrics_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()  # the exporter listens on it
    config = tmp_path / "watch.yaml"
    config.write_text(f"listen: 127.0.0.1:{port}\nruns_dir: {tmp_path / 'runs'}\n"
                      "targets:\n  - name: idle\n    urls: {h1: 'https://127.0.0.1:1/r.git'}\n"
                      "    interval: 0\n")
    proc = subprocess.Popen([sys.executable, "-m", "gitnetdiag", "watch", "--config",
                             str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline, body = time.monotonic() + 30, ""
        while time.monotonic() < deadline and not body:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                            timeout=5) as answer:
                    body = answer.read().decode()
            except OSError:
                time.sleep(0.2)
        assert 'gitnetdiag_probes_total{result="success",target="idle"} 0.0' in body
        assert "gitnetdiag_exporter_build_info" in body and "process_resident_memory_bytes" in body
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "serving http://127.0.0.1" in stderr and "Traceback" not in stderr
