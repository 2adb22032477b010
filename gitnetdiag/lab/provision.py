"""What a lab instance's servers need on disk, made before they start (the I/O side of the
lab): the CA and server certificate (``openssl``), the SSH client and host keys
(``ssh-keygen``), the service user every instance shares, and the bare repository with its
fault's config, hook and seeded history (``git``). :mod:`gitnetdiag.lab.manager` calls these
in :func:`~gitnetdiag.lab.manager.up` and removes the user in
:func:`~gitnetdiag.lab.manager.down`."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from gitnetdiag.lab import config, fetchlab, httpfaults, idlefaults
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.servers import SERVICE_USER
from gitnetdiag.lab.spec import FETCH_HISTORY_BYTES, FETCH_SIMILAR_BLOBS, LabSpec
from gitnetdiag.model.lab.state import SERVER_IP, STATE_ROOT
from gitnetdiag.proc import run


def make_pki(paths: LabPaths) -> None:
    paths.pki.mkdir(parents=True, exist_ok=True)
    ca_key = paths.pki / "ca.key"
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    run(["openssl", "req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(paths.ca_cert),
         "-days", "30", "-subj", "/CN=gitnetdiag lab CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    csr = paths.pki / "server.csr"
    run(["openssl", "req", *ec, "-keyout", str(paths.server_key), "-out", str(csr),
         "-subj", "/CN=gnd-server"])
    ext = paths.pki / "server.ext"
    ext.write_text(
        f"subjectAltName=IP:{SERVER_IP},DNS:gnd-server\n"
        "extendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
    )
    run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(paths.ca_cert),
         "-CAkey", str(ca_key), "-CAcreateserial", "-out", str(paths.server_cert),
         "-days", "30", "-extfile", str(ext)])
    paths.server_pem.write_text(paths.server_cert.read_text() + paths.server_key.read_text())
    for secret in (ca_key, paths.server_key, paths.server_pem):
        secret.chmod(0o600)


def make_ssh_keys(paths: LabPaths) -> None:
    paths.ssh.mkdir(parents=True, exist_ok=True)
    for key, comment in ((paths.client_key, "gitnetdiag-lab-client"),
                         (paths.host_key, "gitnetdiag-lab-host")):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(key)])
    paths.authorized_keys.write_text(Path(f"{paths.client_key}.pub").read_text())
    host_pub = Path(f"{paths.host_key}.pub").read_text().split()
    paths.known_hosts.write_text(f"{SERVER_IP} {host_pub[0]} {host_pub[1]}\n")


def ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        pass
    home = STATE_ROOT / "home"
    home.mkdir(parents=True, exist_ok=True)
    run(["useradd", "--system", "--user-group", "--home-dir", str(home), "--no-create-home",
         "--shell", "/usr/bin/git-shell", SERVICE_USER], timeout_s=20)
    # A locked account ("!") is refused by sshd even for keys when PAM is off.
    run(["usermod", "-p", "*", SERVICE_USER], timeout_s=20)
    (STATE_ROOT / "user-created").write_text(SERVICE_USER + "\n")
    account = pwd.getpwnam(SERVICE_USER)
    os.chown(home, account.pw_uid, account.pw_gid)
    return account


def remove_user_if_ours() -> None:
    marker = STATE_ROOT / "user-created"
    if marker.exists():
        run(["userdel", SERVICE_USER], timeout_s=20, check=False)
        marker.unlink()


def make_repo(paths: LabPaths, spec: LabSpec, account: pwd.struct_passwd) -> None:
    repo = str(paths.repo)
    git = ("git", "-c", "safe.directory=*", f"--git-dir={repo}")
    run(["git", "init", "-q", "--bare", "-b", "main", repo])
    run([*git, "config", "http.receivepack", "true"])
    run([*git, "config", "receive.denyDeletes", "false"])
    for key, value in httpfaults.repo_config(spec):
        run([*git, "config", key, value])
    tree = run([*git, "hash-object", "-t", "tree", "-w", "/dev/null"]).stdout.strip()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_AUTHOR_NAME": "gitnetdiag lab", "GIT_AUTHOR_EMAIL": "lab@gitnetdiag.invalid",
        "GIT_COMMITTER_NAME": "gitnetdiag lab", "GIT_COMMITTER_EMAIL": "lab@gitnetdiag.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    commit = run([*git, "commit-tree", tree, "-m", "lab: initial commit"], env=env).stdout.strip()
    run([*git, "update-ref", "refs/heads/main", commit])
    if spec.slow_disk_iops is not None:  # receive-pack syncs what it stores: slow-storage bites
        run([*git, "config", "core.fsync", "committed"])
    if spec.hook_delay_s > 0:
        hook = paths.repo / "hooks" / "pre-receive"
        hook.write_text(idlefaults.pre_receive_hook(spec.hook_delay_s)
                        if idlefaults.drops_idle_state(spec)
                        else config.pre_receive_hook(spec.hook_delay_s))
        hook.chmod(0o755)
    if spec.fetch_history is not None:
        fetchlab.seed_history(paths.repo, spec.fetch_history, count=FETCH_SIMILAR_BLOBS,
                              size_bytes=FETCH_HISTORY_BYTES, scratch=paths.root / "seed")
    if spec.repository_packed:  # lab up --fixed of slow-pack-generation
        fetchlab.repack(paths.repo)
    run(["chown", "-R", f"{account.pw_uid}:{account.pw_gid}", str(paths.srv)])
