"""One native push for the lab, JSON on stdout: ``python -m gitnetdiag.commands.native``.

    python -m gitnetdiag.commands.native h2  --url URL [--ca-file F] [--sweep] [--no-series]
    python -m gitnetdiag.commands.native ssh --url ssh://u@h/p [--key K] [--known-hosts F]

The probe (:mod:`gitnetdiag.probe.h2native`, :mod:`gitnetdiag.probe.sshnative`)
records the raw events; the summary printed here is replayed from them on the
pure side (:mod:`gitnetdiag.pipeline`). Runs inside a lab namespace
(``ip netns exec``); an error prints ``{"error": reference, ...}`` and exits
with the error's code.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.pipeline import h2_push_ledger, ssh_push_ledger, sweep_rows
from gitnetdiag.probe.h2native import H2ClientSide, h2_push_probe, h2_sweep
from gitnetdiag.probe.repo import generate_repo, new_probe_id, pack_for_commit
from gitnetdiag.probe.sshnative import ssh_push_probe
from gitnetdiag.serial import to_jsonable


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gitnetdiag.commands.native")
    protocols = parser.add_subparsers(dest="protocol", required=True)
    h2 = protocols.add_parser("h2", help="native HTTP/2 push (flow-control ledgers)")
    h2.add_argument("--url", required=True)
    h2.add_argument("--ca-file", help="default: as git (GIT_SSL_CAINFO, http.sslCAInfo)")
    h2.add_argument("--size-bytes", type=int, default=2_000_000)
    h2.add_argument("--seed", type=int, default=1)
    h2.add_argument("--keylog")
    h2.add_argument("--timeout-s", type=float, default=120.0)
    h2.add_argument("--sweep", action="store_true")
    h2.add_argument("--no-series", action="store_true", help="omit credit time series")
    ssh = protocols.add_parser("ssh", help="native SSH push (channel-window ledger)")
    ssh.add_argument("--url", required=True)
    ssh.add_argument("--key", help="default: ssh-agent, ~/.ssh/config, ~/.ssh/id_*")
    ssh.add_argument("--known-hosts", help="default: ~/.ssh/config, ~/.ssh/known_hosts")
    ssh.add_argument("--size-bytes", type=int, default=2_000_000)
    ssh.add_argument("--seed", type=int, default=2)
    ssh.add_argument("--timeout-s", type=float, default=120.0)
    ssh.add_argument("--no-series", action="store_true")
    return parser


def _h2(args: argparse.Namespace, pack: bytes, oid: str) -> dict[str, Any]:
    if args.sweep:
        records = h2_sweep(args.url, ca_file=args.ca_file, pack=pack, new_oid=oid,
                           probe_id_factory=new_probe_id, timeout_s=args.timeout_s)
        return {"sweep": to_jsonable(sweep_rows(records))}
    push = h2_push_probe(args.url, ca_file=args.ca_file, pack=pack, new_oid=oid,
                         probe_id=new_probe_id(),
                         client_side=H2ClientSide(keylog_file=args.keylog),
                         timeout_s=args.timeout_s)
    return h2_push_ledger(push.events).to_dict(series=not args.no_series)


def _ssh(args: argparse.Namespace, pack: bytes, oid: str) -> dict[str, Any]:
    push = ssh_push_probe(args.url, key_file=args.key, known_hosts=args.known_hosts, pack=pack,
                          new_oid=oid, probe_id=new_probe_id(), timeout_s=args.timeout_s)
    return ssh_push_ledger(push.events).to_dict(series=not args.no_series)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        with tempfile.TemporaryDirectory(prefix=f"gnd-{args.protocol}native-") as tmp:
            repo = generate_repo(Path(tmp) / "repo", args.size_bytes, args.seed)
            pack = pack_for_commit(repo.path, repo.head_oid)
            push = _h2 if args.protocol == "h2" else _ssh
            print(json.dumps(push(args, pack, repo.head_oid)))
    except GitnetdiagError as exc:
        print(json.dumps({"error": exc.reference, "message": exc.message, "hint": exc.hint}))
        print(exc.one_line(), file=sys.stderr)
        return int(exc.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
