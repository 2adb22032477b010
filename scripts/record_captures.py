"""Record the offline example runs under captures/: one lab run per fault.

For each fault this brings up a lab instance (root), runs `gitnetdiag diagnose`
against it with small pushes, keeps the run directory (headers-only captures,
manifest, native ledgers, observations) under captures/<fault>/, and writes
captures/<fault>/expected.json with the ranked culprit ids it produced.

    .venv/bin/python scripts/record_captures.py [FAULT ...]
    .venv/bin/python scripts/record_captures.py --refresh [FAULT ...]   (no lab: re-diagnose)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from gitnetdiag.lab.spec import FAULT_PROBE_ARGS

ROOT = Path(__file__).resolve().parents[1]
GND = str(ROOT / ".venv" / "bin" / "gitnetdiag")

KEEP_SUFFIXES = (".pcap", ".json", ".txt", ".tsv")
"""Kept: captures, records, git's stderr and curl traces, decrypted HTTP/2 frame fields
(``--full``). Never kept: key logs and pcapng files with secrets injected."""
HEADERS_ONLY = 128
"""Snap length whole-packet captures (``--full``) are cut to when kept."""


def record(fault: str) -> dict[str, object]:
    name = "rec" + str(abs(hash(fault)) % 10_000)
    dest = ROOT / "captures" / fault
    tmp = Path("/tmp") / f"gitnetdiag-record-{fault}"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run([GND, "lab", "down", "--name", name], capture_output=True)
    subprocess.run([GND, "lab", "up", "--name", name, "--fault", fault], check=True,
                   capture_output=True)
    try:
        proc = subprocess.run(
            [GND, "diagnose", "--lab", "--lab-instance", name, "--size", "3MiB",
             "--timeout", "120", "--out", str(tmp), "--format", "json", *FAULT_PROBE_ARGS[fault]],
            capture_output=True, text=True, timeout=900)
    finally:
        subprocess.run([GND, "lab", "down", "--name", name], capture_output=True)
    report = json.loads(proc.stdout)
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for path in sorted(tmp.iterdir()):
        if path.suffix in KEEP_SUFFIXES and not path.name.startswith("report"):
            if path.suffix == ".pcap":  # --full keeps whole packets: headers are enough
                subprocess.run(["editcap", "-s", str(HEADERS_ONLY), str(path),
                                str(dest / path.name)], check=True, capture_output=True)
            else:
                shutil.copy2(path, dest / path.name)
    expected = {
        "fault": fault,
        "verdict": report["verdict"],
        "culprits": [c["id"] for c in report["culprits"]],
    }
    (dest / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    return expected


def refresh(fault: str) -> dict[str, object]:
    """Recompute expected.json from the stored run (after a change to the engine), no lab."""
    from gitnetdiag.pipeline import diagnose_run

    dest = ROOT / "captures" / fault
    diagnosis, _ = diagnose_run(dest)
    expected = {
        "fault": fault,
        "verdict": diagnosis.verdict,
        "culprits": [f.id for f in diagnosis.findings],
    }
    (dest / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    return expected


def main(argv: list[str]) -> int:
    offline = "--refresh" in argv
    faults = [a for a in argv if not a.startswith("--")] or list(FAULT_PROBE_ARGS)
    for fault in faults:
        print(json.dumps(refresh(fault) if offline else record(fault)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
