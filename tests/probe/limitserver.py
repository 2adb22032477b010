"""Real servers on loopback with a request-body limit, for the body probe's tests.

Apache 2.4 (mod_http2, mod_cgid, git-http-backend) with ``LimitRequestBody`` on a TLS port
(h2 and http/1.1) and a plain HTTP/1.1 port, and optionally an HAProxy TLS edge in front
of the plain port that answers 411 to a POST without ``Content-Length`` (what the lab's
``streamed-body-refused`` fault does). Apache refuses to run as root: its CGI runs as
``www-data``, so the server's directory is world-readable and the repository is
``www-data``'s. Needs root, ``apache2`` and (for the edge) ``haproxy``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tlsutil import make_tls_files

MODULES = ("mpm_event", "authz_core", "mime", "alias", "env", "cgid", "ssl",
           "socache_shmcb", "http2")
HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
SERVICE_USER = "www-data"
LENGTH_REQUIRED_RULE = ('http-request return status 411 content-type text/plain string '
                        '"Length Required" if METH_POST !{ req.hdr(content-length) -m found }')
"""The edge's answer to a POST without a ``Content-Length`` (as the lab's fault)."""


@dataclass(frozen=True)
class LimitServer:
    """A running server; ``url`` is the direct TLS URL, ``edge_url`` HAProxy's (or None)."""

    url: str
    edge_url: str | None
    ca_file: str
    repo: Path
    limit_bytes: int

    def state(self) -> tuple[str, tuple[str, ...]]:
        """Every ref with its object, and every file under ``objects/``: what a write
        would change."""
        refs = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(self.repo), "for-each-ref",
             "--format=%(refname) %(objectname)"],
            capture_output=True, text=True, check=True, timeout=30).stdout
        objects = tuple(sorted(str(p.relative_to(self.repo))
                               for p in (self.repo / "objects").rglob("*") if p.is_file()))
        return refs, objects


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text(errors='replace')[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"server not listening on {port}")


def _apache_conf(root: Path, cert: Path, key: Path, limit: int, tls: int, plain: int) -> str:
    loads = "\n".join(f"LoadModule {m}_module /usr/lib/apache2/modules/mod_{m}.so"
                      for m in MODULES)
    return f"""{loads}
ServerRoot {root}
ServerName localhost
PidFile {root}/run/apache2.pid
DefaultRuntimeDir {root}/run
Mutex file:{root}/run default
ScriptSock {root}/run/cgisock
User {SERVICE_USER}
Group {SERVICE_USER}
ErrorLog {root}/run/error.log
TypesConfig /etc/mime.types
LimitRequestBody {limit}
SetEnv GIT_PROJECT_ROOT {root}/srv
SetEnv GIT_HTTP_EXPORT_ALL 1
SetEnv HOME {root}/run
ScriptAlias /git/ {HTTP_BACKEND}/
<Directory /usr/lib/git-core>
    Require all granted
</Directory>
Listen 127.0.0.1:{tls}
Listen 127.0.0.1:{plain}
<VirtualHost 127.0.0.1:{plain}>
    ServerName localhost
    Protocols http/1.1
</VirtualHost>
<VirtualHost 127.0.0.1:{tls}>
    ServerName localhost
    Protocols h2 http/1.1
    SSLEngine on
    SSLCertificateFile {cert}
    SSLCertificateKeyFile {key}
</VirtualHost>
"""


def _haproxy_cfg(pem: Path, port: int, backend: int) -> str:
    return f"""global
    maxconn 100
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend edge
    bind 127.0.0.1:{port} ssl crt {pem} alpn h2,http/1.1
    {LENGTH_REQUIRED_RULE}
    default_backend apache
backend apache
    server apache 127.0.0.1:{backend}
"""


def _seed_repo(root: Path) -> Path:
    """A bare repository with one commit on ``main``, receive-pack open, www-data's."""
    repo = root / "srv" / "lab.git"
    work = root / "work"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", "--bare", str(repo)], check=True, timeout=30)
    subprocess.run(["git", "-C", str(repo), "config", "http.receivepack", "true"], check=True,
                   timeout=30)
    subprocess.run([*git, "init", "-q", str(work)], check=True, timeout=30)
    (work / "README").write_text("body probe test\n")
    subprocess.run([*git, "-C", str(work), "add", "README"], check=True, timeout=30)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "seed"], check=True, timeout=30)
    subprocess.run([*git, "-C", str(work), "push", "-q", str(repo), "HEAD:main"], check=True,
                   timeout=30)
    shutil.rmtree(work)
    subprocess.run(["chown", "-R", f"{SERVICE_USER}:{SERVICE_USER}", str(root / "srv"),
                    str(root / "run")], check=True, timeout=30)
    return repo


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=10)


def needs_servers(edge: bool = False) -> None:
    """Skip unless this machine can run them (root, apache2, haproxy for the edge)."""
    missing = [name for name in ("apache2", *(("haproxy",) if edge else ()))
               if shutil.which(name) is None]
    if os.geteuid() != 0 or missing:
        pytest.skip(f"needs root and {', '.join(missing) or 'root'}")


@contextlib.contextmanager
def limit_server(limit_bytes: int, *, edge: bool = False) -> Iterator[LimitServer]:
    """Apache with ``LimitRequestBody limit_bytes`` (and the HAProxy edge), stopped after."""
    needs_servers(edge)
    root = Path(tempfile.mkdtemp(prefix="gnd-bodylimit-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        root.chmod(0o755)
        (root / "run").mkdir()
        cert, key = make_tls_files(root)
        repo = _seed_repo(root)
        tls, plain = _free_port(), _free_port()
        conf = root / "apache2.conf"
        conf.write_text(_apache_conf(root, cert, key, limit_bytes, tls, plain))
        procs.append(_start(["apache2", "-f", str(conf), "-DFOREGROUND"], root / "apache.log"))
        _wait_listening(tls, procs[-1], root / "apache.log")
        edge_url = None
        if edge:
            pem = root / "edge.pem"
            pem.write_text(cert.read_text() + key.read_text())
            port = _free_port()
            cfg = root / "haproxy.cfg"
            cfg.write_text(_haproxy_cfg(pem, port, plain))
            procs.append(_start(["haproxy", "-db", "-f", str(cfg)], root / "haproxy.log"))
            _wait_listening(port, procs[-1], root / "haproxy.log")
            edge_url = f"https://127.0.0.1:{port}/git/lab.git"
        yield LimitServer(url=f"https://127.0.0.1:{tls}/git/lab.git", edge_url=edge_url,
                          ca_file=str(cert), repo=repo, limit_bytes=limit_bytes)
    finally:
        for proc in reversed(procs):
            _stop(proc)
        shutil.rmtree(root, ignore_errors=True)
