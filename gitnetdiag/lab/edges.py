"""Configuration of the lab's TLS edges, as text (pure).

Every edge terminates TLS on the edge port with ALPN ``h2,http/1.1`` and proxies
smart HTTP to Apache's plain HTTP/1.1 port on loopback, the way HAProxy does in
:func:`gitnetdiag.lab.config.haproxy_cfg`. Each runs from its Debian package,
in the server namespace, with its own files under the instance's state
directory; :mod:`gitnetdiag.lab.manager` writes them and starts the program
from :func:`edge_argv`.

What ``h2-small-window`` means per edge (the window a stock install runs with):

- nginx: no ``http2_body_preread_size`` / ``client_body_buffer_size`` lines
  (64 KiB preread, one buffer of 16 KiB refilled per read), request buffering off
  so the window alone binds;
- Caddy 2.6 and h2o 2.2: nothing to set; their window is built in (Go's HTTP/2
  server: 1 MiB per stream and per connection), so the config is the same with
  and without the fault.
- Apache Traffic Server 9: no ``proxy.config.http2.initial_window_size_in`` line
  (the protocol default, 65535 B); any other window is written there.

Traffic Server runs without its service: a private copy of its configuration
directory, a runroot YAML that points every directory it writes into the
instance's state, ``proxy.config.admin.user_id`` ``#-1`` (stay root, as the other
lab servers start), ``ssl_multicert.config`` with the lab's certificate and one
``remap.config`` rule to the backend.
"""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.spec import H2_DEFAULT_WINDOW, LabSpec
from gitnetdiag.model.lab.state import PORT_HTTP_BACKEND, PORT_HTTPS_EDGE

BACKEND = f"127.0.0.1:{PORT_HTTP_BACKEND}"


def edge_config_name(edge: str) -> str:
    """File name of the edge's configuration in the state directory."""
    return {"haproxy": "haproxy.cfg", "nginx": "nginx.conf", "caddy": "Caddyfile",
            "h2o": "h2o.conf", "trafficserver": "trafficserver-runroot.yaml"}[edge]


EDGE_PROGRAMS = {"haproxy": "haproxy", "nginx": "nginx", "caddy": "caddy", "h2o": "h2o",
                 "trafficserver": "traffic_server"}
"""The program each edge runs as."""

EDGE_WINDOW_SETTING = {"haproxy": "tune.h2.initial-window-size",
                       "nginx": "http2_body_preread_size",
                       "caddy": "HTTP/2 window (built in, unchanged)",
                       "h2o": "HTTP/2 window (built in, unchanged)",
                       "trafficserver": "proxy.config.http2.initial_window_size_in"}
"""The setting ``lab fix`` changes on each edge to raise its HTTP/2 window."""


def edge_argv(edge: str, config: Path) -> list[str]:
    """Command that runs the edge in the foreground with ``config``."""
    if edge == "haproxy":
        return ["haproxy", "-f", str(config), "-db"]
    if edge == "nginx":
        return ["nginx", "-c", str(config), "-g", "daemon off;"]
    if edge == "caddy":
        return ["caddy", "run", "--config", str(config), "--adapter", "caddyfile"]
    if edge == "trafficserver":
        return ["traffic_server", f"--run-root={config}"]
    return ["h2o", "-c", str(config)]


def edge_env(paths: LabPaths) -> dict[str, str]:
    """Extra environment of the edge: Caddy keeps its data and config under HOME/XDG dirs."""
    base = paths.run / "edge-home"
    return {"HOME": str(base), "XDG_DATA_HOME": str(base / "data"),
            "XDG_CONFIG_HOME": str(base / "config")}


def nginx_conf(paths: LabPaths, spec: LabSpec, *, server_ip: str, user: str) -> str:
    """nginx 1.22 as the TLS edge; HTTP/2 via ``listen ... http2``.

    ``proxy_request_buffering on`` (nginx's default) only under ``edge-buffering``;
    ``proxy_buffering`` left at its default (on) only under ``edge-response-buffering``;
    the window lines only when the window is not nginx's default.
    """
    run = paths.run
    window = (
        ""
        if spec.edge_h2_window == H2_DEFAULT_WINDOW
        else f"        http2_body_preread_size {spec.edge_h2_window};\n"
        f"        client_body_buffer_size {spec.edge_h2_window};\n"
    )
    buffering = "on" if spec.edge_buffering else "off"
    # Under edge-response-buffering no proxy_buffering line: nginx's default (on) applies,
    # as in a stock install.
    responses = "" if spec.edge_response_buffering else "            proxy_buffering off;\n"
    temp = paths.nginx_temp
    return f"""# gitnetdiag lab: nginx TLS edge
user {user};
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/nginx-error.log;
events {{ worker_connections 1024; }}
http {{
    access_log {run}/nginx-access.log;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    client_max_body_size 0;
    server {{
        listen {server_ip}:{PORT_HTTPS_EDGE} ssl http2;
        ssl_certificate {paths.server_cert};
        ssl_certificate_key {paths.server_key};
{window}        location / {{
            proxy_pass http://{BACKEND};
            proxy_http_version 1.1;
            proxy_request_buffering {buffering};
{responses}            proxy_read_timeout 600s;
            proxy_send_timeout 600s;
        }}
    }}
}}
"""


def caddyfile(paths: LabPaths, spec: LabSpec, *, server_ip: str) -> str:
    """Caddy 2.6 as the TLS edge: no admin endpoint, no automatic HTTPS, the lab's cert."""
    del spec  # Caddy 2.6 has no HTTP/2 window setting: the same file for every fault
    return f"""# gitnetdiag lab: Caddy TLS edge
{{
    admin off
    auto_https off
}}
https://{server_ip}:{PORT_HTTPS_EDGE} {{
    tls {paths.server_cert} {paths.server_key}
    reverse_proxy {BACKEND} {{
        flush_interval -1
    }}
}}
"""


def h2o_conf(paths: LabPaths, spec: LabSpec, *, server_ip: str, user: str) -> str:
    """h2o 2.2 as the TLS edge (its window is compiled in: the same file for every fault)."""
    del spec
    run = paths.run
    return f"""# gitnetdiag lab: h2o TLS edge
user: {user}
error-log: {run}/h2o-error.log
access-log: {run}/h2o-access.log
listen:
  host: {server_ip}
  port: {PORT_HTTPS_EDGE}
  ssl:
    certificate-file: {paths.server_cert}
    key-file: {paths.server_key}
    ocsp-update-interval: 0
hosts:
  default:
    paths:
      /:
        proxy.reverse.url: http://{BACKEND}/
        proxy.timeout.io: 600000
"""


def trafficserver_dirs(paths: LabPaths) -> dict[str, Path]:
    """Traffic Server's private directories under the instance's state."""
    base = paths.run / "trafficserver"
    return {"sysconfdir": base / "etc", "localstatedir": base / "var",
            "runtimedir": base / "run", "logdir": base / "log", "cachedir": base / "cache"}


def trafficserver_runroot(paths: LabPaths) -> str:
    """The runroot YAML ``traffic_server --run-root`` reads: the Debian package's programs,
    every directory it reads or writes private to this lab instance."""
    fixed = {"prefix": "/usr", "exec_prefix": "/usr", "bindir": "/usr/bin",
             "sbindir": "/usr/sbin", "datadir": "/usr/share/trafficserver",
             "includedir": "/usr/include", "libdir": "/usr/lib/trafficserver",
             "libexecdir": "/usr/lib/trafficserver/modules"}
    lines = [f"{k}: {v}" for k, v in fixed.items()]
    lines += [f"{k}: {v}" for k, v in trafficserver_dirs(paths).items()]
    return "# gitnetdiag lab: Traffic Server runroot\n" + "\n".join(lines) + "\n"


def trafficserver_files(paths: LabPaths, spec: LabSpec, *, server_ip: str) -> dict[str, str]:
    """Traffic Server 9's own files in its private sysconfdir (the rest are the package's):
    TLS on the edge port, no cache, no request buffering, one remap rule to the backend."""
    del server_ip  # it listens on every address of the server namespace
    window = ("" if spec.edge_h2_window == H2_DEFAULT_WINDOW else
              f"CONFIG proxy.config.http2.initial_window_size_in INT {spec.edge_h2_window}\n")
    dirs = trafficserver_dirs(paths)
    records = f"""# gitnetdiag lab: Traffic Server TLS edge
CONFIG proxy.config.admin.user_id STRING #-1
CONFIG proxy.config.http.server_ports STRING {PORT_HTTPS_EDGE}:ssl
CONFIG proxy.config.reverse_proxy.enabled INT 1
CONFIG proxy.config.url_remap.remap_required INT 1
CONFIG proxy.config.http.cache.http INT 0
CONFIG proxy.config.http.insert_response_via_str INT 0
CONFIG proxy.config.http.request_buffer_enabled INT 0
CONFIG proxy.config.http.transaction_no_activity_timeout_in INT 600
CONFIG proxy.config.http.transaction_no_activity_timeout_out INT 600
CONFIG proxy.config.ssl.server.cert.path STRING {paths.server_cert.parent}
CONFIG proxy.config.ssl.server.private_key.path STRING {paths.server_key.parent}
CONFIG proxy.config.log.logging_enabled INT 0
CONFIG proxy.config.crash_log_helper STRING /bin/true
{window}"""
    return {
        "records.config": records,
        "remap.config": f"map / http://{BACKEND}/\n",
        "ssl_multicert.config": f"dest_ip=* ssl_cert_name={paths.server_cert} "
                                f"ssl_key_name={paths.server_key}\n",
        "storage.config": f"{dirs['cachedir']} 16M\n",
        "ip_allow.yaml": "ip_allow:\n  - apply: in\n    ip_addrs: 0/0\n    action: allow\n"
                         "  - apply: in\n    ip_addrs: ::/0\n    action: allow\n"
                         "  - apply: out\n    ip_addrs: 0/0\n    action: allow\n",
        "plugin.config": "",
    }
