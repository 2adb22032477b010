"""Who answered, and the setting of that server (pure)."""

from __future__ import annotations

import pytest

from gitnetdiag.diagnosis.servers import (
    SERVERS,
    buffering_knob,
    identify,
    products_of_files,
    window_fix,
    window_knob,
)

# SETTINGS as the lab's edges sent them to the native HTTP/2 probe.
HAPROXY_26 = {"ENABLE_CONNECT_PROTOCOL": 1, "MAX_CONCURRENT_STREAMS": 100}
NGINX_122 = {"MAX_CONCURRENT_STREAMS": 128, "INITIAL_WINDOW_SIZE": 65536,
             "MAX_FRAME_SIZE": 16777215}
CADDY_26 = {"MAX_FRAME_SIZE": 1048576, "MAX_CONCURRENT_STREAMS": 250,
            "MAX_HEADER_LIST_SIZE": 1048896, "INITIAL_WINDOW_SIZE": 1048576}
APACHE_OR_H2O = {"MAX_CONCURRENT_STREAMS": 100, "INITIAL_WINDOW_SIZE": 16777216}


def test_haproxy_in_front_of_apache_is_haproxy() -> None:
    """HAProxy passes Apache's server header on; its SETTINGS name the HTTP/2 terminator."""
    who = identify(server_headers=("Apache/2.4.71 (Debian) OpenSSL/3.0.19",),
                   h2_settings=HAPROXY_26)
    assert who.server == "haproxy"
    assert any("behind it" in b for b in who.basis)


@pytest.mark.parametrize(("headers", "settings", "server", "product"), [
    (("nginx/1.22.1",), NGINX_122, "nginx", "nginx/1.22.1"),
    (("Caddy", "Apache/2.4.71 (Debian)"), CADDY_26, "caddy", "Caddy"),
    (("h2o/2.2.5",), APACHE_OR_H2O, "h2o", "h2o/2.2.5"),
    (("Apache/2.4.71 (Debian)",), APACHE_OR_H2O, "apache", "Apache/2.4.71 (Debian)"),
    ((), NGINX_122, "nginx", "nginx (its HTTP/2 module advertises the largest frame size, "
     "2^24-1)"),
])
def test_headers_and_settings_name_the_server(headers: tuple[str, ...], settings: dict[str, int],
                                              server: str, product: str) -> None:
    who = identify(server_headers=headers, h2_settings=settings)
    assert (who.server, who.product) == (server, product)
    assert who.basis


def test_config_files_are_the_last_resort() -> None:
    products = products_of_files(("/etc/apache2/apache2.conf", "/etc/nginx/nginx.conf"))
    assert products == ("apache", "nginx")
    who = identify(config_products=products, ssh_banner="SSH-2.0-OpenSSH_9.2p1")
    assert who.server == "nginx" and who.ssh_banner == "SSH-2.0-OpenSSH_9.2p1"
    assert identify().server is None


def test_window_fix_names_the_answering_server_first_with_the_value() -> None:
    fix = window_fix("nginx", 1 << 21)
    assert fix.startswith("On the server that answered, nginx: `http2_body_preread_size` 2097152")
    assert fix.index("http2_body_preread_size") < fix.index("tune.h2.initial-window-size")
    assert "`H2WindowSize` 2097152" in fix and "initial_stream_window_size" in fix
    unknown = window_fix(None, 1 << 20)
    assert unknown.startswith("HAProxy:")


def test_caddy_says_plainly_there_is_no_setting() -> None:
    fix = window_fix("caddy", 1 << 22)
    assert fix.startswith("On the server that answered, Caddy 2.6: there is no such setting")
    assert "MaxUploadBufferPerStream" in fix
    assert "Caddy" not in fix.split("Other servers:")[1]


@pytest.mark.parametrize("server", SERVERS)
def test_every_server_has_its_knobs(server: str) -> None:
    assert window_knob(server, 1 << 20)
    assert buffering_knob(server)
