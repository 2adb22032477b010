"""Configuration files of the lab's real servers, as text (pure).

Each function takes the paths and settings it needs and returns the file's
content; :mod:`gitnetdiag.lab.manager` writes and starts them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitnetdiag.lab import clonefaults, edgefaults, httpfaults, idlefaults
from gitnetdiag.lab.spec import BAD_MEMBER_STATUS, H2_DEFAULT_WINDOW, LabSpec
from gitnetdiag.model.lab.state import (
    PORT_HTTP_BACKEND,
    PORT_HTTPS_DIRECT,
    PORT_HTTPS_EDGE,
    PORT_SSH,
)

PORT_BAD_MEMBER = 8081
"""Loopback port of the bad pool member under ``edge-backend-errors``."""
HEALTH_CHECK_PATH = "/git/lab.git/HEAD"
"""What the edge's health check asks each member for under the fix (a file git serves)."""

APACHE_MODULES = (
    "mpm_event", "authz_core", "mime", "alias", "env",
    "setenvif", "cgid", "ssl", "socache_shmcb", "http2", "headers",
)
AUTH_MODULES = ("auth_basic", "authn_core", "authn_file", "authz_user")
"""Loaded under the ``auth`` fault: Basic auth in front of git-http-backend needs all four."""
HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"
HTTP_AUTH_USER = "probe"


@dataclass(frozen=True, kw_only=True)
class LabPaths:
    """Where one lab instance keeps its files."""

    root: Path
    """The instance's state directory."""

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def ca_cert(self) -> Path:
        return self.pki / "ca.pem"

    @property
    def server_cert(self) -> Path:
        return self.pki / "server.crt"

    @property
    def server_key(self) -> Path:
        return self.pki / "server.key"

    @property
    def server_pem(self) -> Path:
        """Certificate and key in one file, as HAProxy wants it."""
        return self.pki / "server.pem"

    @property
    def ssh(self) -> Path:
        return self.root / "ssh"

    @property
    def client_key(self) -> Path:
        return self.ssh / "client_ed25519"

    @property
    def host_key(self) -> Path:
        return self.ssh / "ssh_host_ed25519_key"

    @property
    def known_hosts(self) -> Path:
        return self.ssh / "known_hosts"

    @property
    def authorized_keys(self) -> Path:
        return self.ssh / "authorized_keys"

    @property
    def srv(self) -> Path:
        """Base path of the served repositories."""
        return self.root / "srv"

    @property
    def repo(self) -> Path:
        return self.srv / "lab.git"

    @property
    def home(self) -> Path:
        """HOME of the server processes."""
        return self.root / "home"

    @property
    def bin(self) -> Path:
        """Wrapper scripts (CGI, forced SSH command)."""
        return self.root / "bin"

    @property
    def htpasswd(self) -> Path:
        """Apache's user file under the ``auth`` fault (bcrypt hashes)."""
        return self.root / "auth" / "htpasswd"

    @property
    def credential_store(self) -> Path:
        """The lab credential in git's ``credential-store`` format (0600)."""
        return self.root / "auth" / "git-credentials"

    @property
    def run(self) -> Path:
        """Pid files, sockets, logs."""
        return self.root / "run"

    @property
    def nginx_temp(self) -> Path:
        """The nginx edge's temp paths (under ``edge-response-buffering`` a throttled
        device's mount point)."""
        return self.run / "nginx-temp"


def apache_conf(paths: LabPaths, spec: LabSpec, *, server_ip: str, user: str) -> str:
    """Apache 2.4: TLS with h2 on the direct port, plain HTTP/1.1 for the edge on loopback."""
    modules = APACHE_MODULES + (AUTH_MODULES if spec.http_auth else ())
    loads = "\n".join(
        f"LoadModule {m}_module /usr/lib/apache2/modules/mod_{m}.so" for m in modules
    )
    run = paths.run
    cgi = paths.bin / "git-http-backend.cgi"
    return f"""# gitnetdiag lab: Apache with mod_http2 and git-http-backend
{loads}
ServerRoot {paths.root}
ServerName gnd-server
PidFile {run}/apache2.pid
DefaultRuntimeDir {run}
Mutex file:{run} default
ScriptSock {run}/cgisock
User {user}
Group {user}
ErrorLog {run}/apache-error.log
LogFormat "%h %t \\"%r\\" %>s %I %O %{{ms}}T %H" gnd
CustomLog {run}/apache-access.log gnd
TypesConfig /etc/mime.types
Timeout 600
KeepAliveTimeout 60
LimitRequestBody 0
H2WindowSize {spec.apache_h2_window}
SetEnv GIT_PROJECT_ROOT {paths.srv}
SetEnv GIT_HTTP_EXPORT_ALL 1
SetEnv HOME {paths.home}
SetEnv GND_AUTH_DELAY_S {spec.auth_delay_s:g}
ScriptAlias /git/ {cgi}/
<Directory {paths.bin}>
    Options +ExecCGI
    Require all granted
</Directory>
{_basic_auth(paths) if spec.http_auth else ""}{httpfaults.apache_body_limit(spec)}
Listen {server_ip}:{PORT_HTTPS_DIRECT}
Listen 127.0.0.1:{PORT_HTTP_BACKEND}

# A ServerName in each virtual host: without one Apache looks the address up in DNS at
# start, and in the server namespace (no DNS) that waits 5 s for the resolver to give up.
<VirtualHost 127.0.0.1:{PORT_HTTP_BACKEND}>
    ServerName gnd-server
    Protocols http/1.1
</VirtualHost>

<VirtualHost {server_ip}:{PORT_HTTPS_DIRECT}>
    ServerName gnd-server
    Protocols h2 http/1.1
    SSLEngine on
    SSLCertificateFile {paths.server_cert}
    SSLCertificateKeyFile {paths.server_key}
</VirtualHost>
"""


def _basic_auth(paths: LabPaths) -> str:
    # Location is merged after Directory, so it overrides "Require all granted" for
    # every virtual host: the direct TLS port and the plain port behind the edge.
    return f"""<Location /git/>
    AuthType Basic
    AuthName "gitnetdiag lab"
    AuthBasicProvider file
    AuthUserFile {paths.htpasswd}
    Require valid-user
</Location>
"""


def haproxy_cfg(paths: LabPaths, spec: LabSpec, *, server_ip: str) -> str:
    """HAProxy TLS edge with ALPN h2 in front of Apache's plain HTTP/1.1 port.

    Under ``h2-small-window`` the window line is left out on purpose: the edge
    then runs with HAProxy's own default (65535), as a stock install does.
    """
    window = (
        ""
        if spec.edge_h2_window == H2_DEFAULT_WINDOW
        else f"    tune.h2.initial-window-size {spec.edge_h2_window}\n"
    )
    if spec.edge_bufsize is not None:
        window += f"    tune.bufsize {spec.edge_bufsize}\n"
    window += edgefaults.haproxy_global_lines(spec.edge_sndbuf_client)
    server_timeout_s = (clonefaults.edge_server_timeout_s(spec)
                        or httpfaults.edge_server_timeout_s(spec))
    return f"""# gitnetdiag lab: HAProxy TLS edge
global
    maxconn 4096
    pidfile {paths.run}/haproxy.pid
{window}
defaults
    mode http
    timeout connect 5s
    timeout client 600s
    timeout server {server_timeout_s}s
    timeout http-request 60s

frontend edge
    bind {server_ip}:{PORT_HTTPS_EDGE} ssl crt {paths.server_pem} alpn h2,http/1.1
{httpfaults.haproxy_request_rules(spec)}    default_backend apache

{_haproxy_pool(spec)}"""


def _haproxy_pool(spec: LabSpec) -> str:
    """The edge's backend: Apache alone, or (``edge-backend-errors``) Apache and a member
    that redirects every request to https, balanced round-robin, health-checked only
    under the fix."""
    dead = edgefaults.haproxy_backend(spec)
    if dead is not None:
        return dead
    if not spec.edge_bad_member:
        return f"backend apache\n    server apache 127.0.0.1:{PORT_HTTP_BACKEND}\n"
    check = " check inter 500ms fall 1 rise 1" if spec.edge_health_checks else ""
    checks = (f"    option httpchk GET {HEALTH_CHECK_PATH}\n    http-check expect status 200\n"
              if spec.edge_health_checks else "")
    return f"""backend apache
    balance roundrobin
{checks}    server apache 127.0.0.1:{PORT_HTTP_BACKEND}{check}
    server redirector 127.0.0.1:{PORT_BAD_MEMBER}{check}

listen redirector
    bind 127.0.0.1:{PORT_BAD_MEMBER}
    http-request redirect scheme https code {BAD_MEMBER_STATUS}
"""


def sshd_config(paths: LabPaths, spec: LabSpec, *, server_ip: str, user: str) -> str:
    """OpenSSH sshd for the git-shell user; key-only, no PAM."""
    # Under slow-auth the keys come from a slow lookup program, as with an LDAP or
    # SSO key service; the git-shell login shell rules out a ForceCommand wrapper.
    keys = (
        f"AuthorizedKeysFile none\nAuthorizedKeysCommand {paths.bin / 'slow-auth-keys'} %u\n"
        "AuthorizedKeysCommandUser nobody\n"
        if spec.auth_delay_s > 0
        else f"AuthorizedKeysFile {paths.authorized_keys}\n"
    )
    return f"""# gitnetdiag lab: sshd
Port {PORT_SSH}
ListenAddress {server_ip}
HostKey {paths.host_key}
PidFile {paths.run}/sshd.pid
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
{keys}StrictModes no
AllowUsers {user}
PermitRootLogin no
X11Forwarding no
AllowTcpForwarding no
PrintMotd no
{f"MaxStartups {spec.sshd_max_startups}" if spec.sshd_max_startups else ""}
{clonefaults.sshd_lines(spec, paths.bin)}{idlefaults.sshd_lines(spec, paths.bin)}"""


def http_backend_cgi(paths: LabPaths, before: str = "") -> str:
    """CGI wrapper: delays the ref advertisement under slow-auth, runs the shell lines
    ``before`` (a clone fault's slow pack preparation), then runs git-http-backend."""
    return f"""#!/bin/sh
# gitnetdiag lab: git-http-backend, with the slow-auth delay on ref advertisement
case "$QUERY_STRING" in
  *service=*) [ "${{GND_AUTH_DELAY_S:-0}}" != 0 ] && sleep "$GND_AUTH_DELAY_S" ;;
esac
{before}exec {HTTP_BACKEND}
"""


def slow_auth_keys(paths: LabPaths, delay_s: float) -> str:
    """sshd AuthorizedKeysCommand under slow-auth: a key lookup that takes seconds."""
    return f"""#!/bin/sh
# gitnetdiag lab: slow-auth fault, a slow key service
sleep {delay_s:g}
cat {paths.authorized_keys}
"""


def pre_receive_hook(delay_s: float) -> str:
    """pre-receive hook that sleeps (slow-hook fault)."""
    return f"""#!/bin/sh
# gitnetdiag lab: slow-hook fault
cat >/dev/null
sleep {delay_s:g}
"""
