"""Issue 11's acceptance for authentication: a lab that wants credentials, as real hosts do.

Smart HTTP demands Basic auth (edge and direct); the token reaches git, and the
native HTTP/2 probe, only through the user's credential helper
(``credential.helper = store --file=F`` in the test's own global git config).
The SSH key is only in a private ssh-agent: no ``--ssh-key`` is passed.
``diagnose`` must still rank the edge's small HTTP/2 window first with the
native probe's evidence, and the token must appear nowhere: not in any file of
the run directory (binary ones too), not in the reports, not on the terminal.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitnetdiag.analysis.nativeledger import h2_ledgers
from gitnetdiag.model.lab.state import LabState
from gitnetdiag.rundir.native import h2_record
from tests.conftest import LabFactory

pytestmark = pytest.mark.lab

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def agent_socket(tmp_path: Path) -> Iterator[Path]:
    """A private ssh-agent, ended after the test."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield sock
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)


def lab_token(state: LabState) -> str:
    """The lab's generated token, read from its credential-store file."""
    line = Path(state.http_credential_store).read_text().splitlines()[0]
    return line.split("://", 1)[1].rsplit("@", 1)[0].split(":", 1)[1]


def user_environment(state: LabState, tmp_path: Path, agent: Path) -> dict[str, str]:
    """What a user's shell would hold: a credential helper in the global git config,
    the SSH key in the agent. Nothing lab-specific beyond the CA bundle option."""
    store = tmp_path / "git-credentials"
    shutil.copyfile(state.http_credential_store, store)
    store.chmod(0o600)
    config = tmp_path / "gitconfig"
    config.write_text(f"[credential]\n\thelper = store --file={store}\n")
    subprocess.run(["ssh-add", "-q", state.ssh_key], check=True, timeout=30,
                   env={**os.environ, "SSH_AUTH_SOCK": str(agent)})
    env = dict(os.environ)
    for name in ("GIT_CONFIG_COUNT", "GIT_ASKPASS", "SSH_ASKPASS"):
        env.pop(name, None)
    env.update(GIT_CONFIG_GLOBAL=str(config), SSH_AUTH_SOCK=str(agent), GIT_TERMINAL_PROMPT="0")
    return env


def files_holding(directory: Path, secrets: list[bytes]) -> list[str]:
    return sorted(
        str(path.relative_to(directory))
        for path in directory.rglob("*")
        if path.is_file() and any(secret in path.read_bytes() for secret in secrets)
    )


def test_auth_lab_small_edge_window_ranks_first_and_no_token_leaks(
    shared_lab: LabFactory, tmp_path: Path, agent_socket: Path
) -> None:
    state = shared_lab("h2-small-window", "auth")
    token = lab_token(state)
    secrets = [token.encode(), base64.b64encode(f"probe:{token}".encode())]
    env = user_environment(state, tmp_path, agent_socket)
    out = tmp_path / "run"
    started = time.monotonic()
    proc = subprocess.run(
        ["ip", "netns", "exec", state.client_ns, sys.executable, "-m", "gitnetdiag", "diagnose",
         "--http", state.endpoints.https_edge, "--ssh", state.endpoints.ssh,
         "--ca-file", state.ca_file, "--ssh-known-hosts", state.ssh_known_hosts,
         "--protocols", "h1,h2,ssh", "--size", "4MiB", "--timeout", "40",
         "--format", "json", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env, cwd=REPO_ROOT,
    )
    elapsed_s = time.monotonic() - started
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)

    # The native HTTP/2 probe got through the auth with the helper's credential.
    # native-h2.json holds raw events (schema 2): the stalls are replayed from them.
    native = h2_record(json.loads((out / "native-h2.json").read_text()), "native-h2.json")
    assert native.auth == "credential-helper"
    assert native.server_settings().get("INITIAL_WINDOW_SIZE", 65_535) == 65_535
    replayed = h2_ledgers(native)
    assert replayed.stream.stall_count > 0
    assert native.ref_deleted is True
    # The native SSH probe used the agent's key (no --ssh-key was given).
    assert (out / "native-ssh.json").is_file(), proc.stderr[-2000:]
    assert json.loads((out / "native-ssh.json").read_text())["ref_deleted"] is True

    ids = [culprit["id"] for culprit in report["culprits"]]
    assert ids and ids[0] == "h2-flow-control-window", ids
    top = report["culprits"][0]
    evidence = json.dumps(top["evidence"])
    assert "native HTTP/2 probe" in evidence and "65535" in evidence, evidence
    print(f"auth lab: diagnose took {elapsed_s:.1f} s, top culprit {ids[0]} "
          f"score {top.get('score')}, native window "
          f"{native.server_settings().get('INITIAL_WINDOW_SIZE', 65_535)}, "
          f"native upload {replayed.upload_s:.2f} s, {replayed.stream.stall_count} stalls")

    assert token not in proc.stdout and token not in proc.stderr
    assert files_holding(out, secrets) == []


def _h2native(state: LabState, url: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", state.client_ns, sys.executable, "-m",
         "gitnetdiag.commands.native", "h2", "--url", url, "--ca-file", state.ca_file,
         "--size-bytes", "200000", "--no-series"],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO_ROOT,
    )


@pytest.mark.lab_lane("idle")  # 401s, a refused token, no secret printed: no rate
def test_auth_lab_both_ways_in_demand_the_credential(
    shared_lab: LabFactory, tmp_path: Path
) -> None:
    """Edge and direct both answer 401 without a credential, one line naming the fix;
    a wrong token is refused without being printed; the right one pushes."""
    state = shared_lab("h2-small-window", "auth")
    token = lab_token(state)
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
    nothing = {**base, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for url in (state.endpoints.https_edge, state.endpoints.https_direct):
        proc = _h2native(state, url, nothing)
        assert proc.returncode != 0
        assert proc.stderr.strip().splitlines() == [
            f"auth-failed: {url} wants authentication (GET info/refs answered HTTP 401) and "
            f"git has no credential for it (hint: check the credential helper / token for "
            f"{url} (git credential fill), or http.extraHeader)"
        ]

    wrong = tmp_path / "wrong-credentials"
    wrong.write_text(Path(state.http_credential_store).read_text().replace(token, "not-it-42"))
    config = tmp_path / "wrong.gitconfig"
    config.write_text(f"[credential]\n\thelper = store --file={wrong}\n")
    proc = _h2native(state, state.endpoints.https_edge,
                     {**nothing, "GIT_CONFIG_GLOBAL": str(config)})
    assert proc.returncode != 0
    assert "refused the credential from credential-helper" in proc.stderr
    assert "not-it-42" not in proc.stdout + proc.stderr

    config.write_text(f"[credential]\n\thelper = store --file={state.http_credential_store}\n")
    proc = _h2native(state, state.endpoints.https_direct,
                     {**nothing, "GIT_CONFIG_GLOBAL": str(config)})
    ledger = json.loads(proc.stdout.splitlines()[-1])
    assert ledger.get("auth") == "credential-helper", ledger
    assert ledger["server_initial_window_bytes"] == state.apache_h2_window
    assert ledger["ref_deleted"] is True
    assert token not in proc.stdout + proc.stderr
