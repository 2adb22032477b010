"""Named faults become concrete settings (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitnetdiag.errors import UsageError
from gitnetdiag.lab import config
from gitnetdiag.lab.clonefaults import CLONE_FAULT_CULPRIT
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.lab.httpfaults import HTTP_FAULT_CULPRIT
from gitnetdiag.lab.spec import (
    FAULT_CULPRIT,
    FAULT_FIX_NAMES,
    FAULT_FIXED_SETTINGS,
    FAULT_PROBE_ARGS,
    FAULTS,
    FETCH_FAULT_CULPRIT,
    FETCH_SHARED_FAULT_CULPRIT,
    FIXED_RMEM_MAX_BYTES,
    H2_DEFAULT_WINDOW,
    LARGE_WINDOW,
    build_spec,
    fixed_spec,
    parse_duration_ms,
    parse_loss,
    parse_rate,
)


def test_healthy_has_every_window_large() -> None:
    spec = build_spec(instance="default", faults=["healthy"])
    assert spec.faults == ("healthy",)
    assert spec.edge_h2_window == LARGE_WINDOW and spec.apache_h2_window == LARGE_WINDOW
    assert spec.server_rmem_max is None and spec.loss == 0.0 and spec.git_backlog > 128
    assert spec.reset_port is None and spec.hook_delay_s == 0 and spec.auth_delay_s == 0


def test_each_fault_sets_its_knob() -> None:
    assert build_spec(instance="a", faults=["h2-small-window"]).edge_h2_window == 65535
    assert build_spec(instance="a", faults=["tcp-rmem-clamp"]).server_rmem_max == 65536
    assert build_spec(instance="a", faults=["tiny-backlog"]).git_backlog == 5
    assert build_spec(instance="a", faults=["loss"]).loss == pytest.approx(0.02)
    assert build_spec(instance="a", faults=["loss"], loss=0.005).loss == pytest.approx(0.005)
    assert build_spec(instance="a", faults=["firewall-reset"]).reset_port == 22
    assert build_spec(instance="a", faults=["slow-hook"]).hook_delay_s > 0
    assert build_spec(instance="a", faults=["slow-auth"]).auth_delay_s > 0
    assert build_spec(instance="a", faults=["slow-storage"]).slow_disk_iops == 30
    assert build_spec(instance="a", faults=["client-pack-cpu"]).client_cpu_share == 0.05
    assert build_spec(instance="a", faults=["healthy"]).slow_disk_iops is None
    assert build_spec(instance="a", faults=["healthy"]).client_cpu_share is None
    assert build_spec(instance="a", faults=["h2-frame-settings"]).edge_bufsize == 8192
    assert build_spec(instance="a", faults=["healthy"]).edge_bufsize is None
    both = build_spec(instance="a", faults=["healthy", "loss", "slow-hook", "loss"])
    assert both.faults == ("loss", "slow-hook")


def test_unknown_fault_and_bad_names_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown fault 'h3'"):
        build_spec(instance="a", faults=["h3"])
    with pytest.raises(UsageError, match="instance name"):
        build_spec(instance="Bad-Name", faults=[])


@pytest.mark.parametrize(("text", "ms"), [("50ms", 50.0), ("0.2s", 200.0), ("75", 75.0)])
def test_parse_duration(text: str, ms: float) -> None:
    assert parse_duration_ms(text) == ms


def test_parse_loss_and_rate() -> None:
    assert parse_loss("2%") == pytest.approx(0.02)
    assert parse_loss("0.01") == pytest.approx(0.01)
    assert parse_rate("100Mbit") == "100mbit"
    for bad in ("lots", "150%"):
        with pytest.raises(UsageError):
            parse_loss(bad)
    with pytest.raises(UsageError):
        parse_rate("fast")


def test_haproxy_config_keeps_default_window_under_fault() -> None:
    paths = LabPaths(root=__import__("pathlib").Path("/x"))
    small = config.haproxy_cfg(paths, build_spec(instance="a", faults=["h2-small-window"]),
                               server_ip="198.18.2.2")
    large = config.haproxy_cfg(paths, build_spec(instance="a", faults=[]), server_ip="198.18.2.2")
    assert "tune.h2.initial-window-size" not in small
    assert f"tune.h2.initial-window-size {LARGE_WINDOW}" in large
    assert "alpn h2,http/1.1" in small
    assert H2_DEFAULT_WINDOW == 65535


def test_apache_and_sshd_configs_carry_the_settings() -> None:
    paths = LabPaths(root=__import__("pathlib").Path("/x"))
    spec = build_spec(instance="a", faults=["slow-auth"], apache_h2_window=1 << 20)
    apache = config.apache_conf(paths, spec, server_ip="198.18.2.2", user="gnd-git")
    assert "H2WindowSize 1048576" in apache and "Protocols h2 http/1.1" in apache
    assert "SetEnv GND_AUTH_DELAY_S 3" in apache
    sshd = config.sshd_config(paths, spec, server_ip="198.18.2.2", user="gnd-git")
    assert "AuthorizedKeysCommand /x/bin/slow-auth-keys %u" in sshd and "UsePAM no" in sshd
    assert "AuthorizedKeysFile none" in sshd
    healthy = config.sshd_config(paths, build_spec(instance="a", faults=[]),
                                 server_ip="198.18.2.2", user="gnd-git")
    assert "AuthorizedKeysCommand" not in healthy
    assert "AuthorizedKeysFile /x/ssh/authorized_keys" in healthy


def test_auth_protects_smart_http_on_every_virtual_host() -> None:
    spec = build_spec(instance="a", faults=["h2-small-window", "auth"])
    assert spec.http_auth and spec.edge_h2_window == H2_DEFAULT_WINDOW
    assert not build_spec(instance="a", faults=["h2-small-window"]).http_auth
    paths = LabPaths(root=Path("/lab"))
    text = config.apache_conf(paths, spec, server_ip="198.18.2.2", user="gnd-git")
    for module in ("auth_basic", "authn_core", "authn_file", "authz_user"):
        assert f"mod_{module}.so" in text
    # Server-wide Location: both the direct TLS vhost and the edge's backend port.
    location = text.split("<Location /git/>")[1].split("</Location>")[0]
    assert "Require valid-user" in location and f"AuthUserFile {paths.htpasswd}" in location
    assert text.index("<Location /git/>") < text.index("<VirtualHost")
    assert "<Location" not in config.apache_conf(
        paths, build_spec(instance="a", faults=[]), server_ip="198.18.2.2", user="gnd-git")


def test_reset_after_cuts_established_connections_only_with_the_fault() -> None:
    """``--reset-after`` turns the refused SYN into a mid-push cut; alone it is an error."""
    spec = build_spec(instance="a", faults=["firewall-reset"], reset_after_bytes=1 << 20)
    assert spec.reset_port == 22 and spec.reset_after_bytes == 1 << 20
    assert build_spec(instance="a", faults=["firewall-reset"]).reset_after_bytes is None
    with pytest.raises(UsageError, match="--reset-after needs --fault firewall-reset"):
        build_spec(instance="a", faults=["loss"], reset_after_bytes=1 << 20)


def test_transport_faults_set_their_knobs() -> None:
    """Issue 14's transport and path faults: each turns one setting of the lab."""
    healthy = build_spec(instance="a", faults=[])
    assert healthy.server_window_scaling and healthy.syn_drop_share == 0
    assert healthy.tcp_buffer_max is None and healthy.sshd_max_startups is None
    assert healthy.pmtu_blackhole_bytes is None and healthy.rate is None
    assert healthy.rtt_ms == 50.0
    assert not build_spec(instance="a", faults=["window-scaling-off"]).server_window_scaling
    assert build_spec(instance="a", faults=["syn-drop"]).syn_drop_share == pytest.approx(0.3)
    assert build_spec(instance="a", faults=["bandwidth-limit"]).rate == "10mbit"
    assert build_spec(instance="a", faults=["bandwidth-limit"], rate="50mbit").rate == "50mbit"
    window = build_spec(instance="a", faults=["ssh-channel-window"])
    assert window.rtt_ms == 300.0 and window.tcp_buffer_max == 64 << 20
    assert build_spec(instance="a", faults=["ssh-channel-window"], rtt_ms=200).rtt_ms == 200
    assert build_spec(instance="a", faults=["ssh-maxstartups"]).sshd_max_startups == "2:100:2"
    assert build_spec(instance="a", faults=["pmtu-blackhole"]).pmtu_blackhole_bytes == 1200
    assert build_spec(instance="a", faults=["pmtu-blackhole"]).pmtu_blackhole_client_bytes is None
    towards_client = build_spec(instance="a", faults=["pmtu-blackhole-client"])
    assert towards_client.pmtu_blackhole_client_bytes == 1200
    assert towards_client.pmtu_blackhole_bytes is None  # the push's direction stays open
    assert towards_client.fetch_history == "random"  # a pack to clone into the hole


def test_every_culprit_fault_has_probe_args_and_a_fix_name() -> None:
    for fault, culprit in {**FAULT_CULPRIT, **HTTP_FAULT_CULPRIT}.items():
        assert fault in FAULTS and fault in FAULT_PROBE_ARGS
        if culprit is not None:
            assert FAULT_FIX_NAMES[fault]


def test_sshd_config_carries_max_startups_only_under_its_fault() -> None:
    paths = LabPaths(root=Path("/x"))
    small = config.sshd_config(paths, build_spec(instance="a", faults=["ssh-maxstartups"]),
                               server_ip="198.18.2.2", user="gnd-git")
    assert "MaxStartups 2:100:2" in small.splitlines()
    healthy = config.sshd_config(paths, build_spec(instance="a", faults=[]),
                                 server_ip="198.18.2.2", user="gnd-git")
    assert "MaxStartups" not in healthy


def test_fixed_spec_applies_the_fix_each_culprit_names() -> None:
    """Each fix belongs to a fault with a culprit; applied, the setting is the healthy one."""
    # Issue 33's faults wait in HTTP_FAULT_CULPRIT until their detectors exist; issue 42's
    # clone faults are judged by their own lab test (CLONE_FAULT_CULPRIT).
    # pmtu-blackhole-client's culprit is a shared one (FETCH_SHARED_FAULT_CULPRIT).
    culprits = {**FAULT_CULPRIT, **HTTP_FAULT_CULPRIT, **FETCH_FAULT_CULPRIT,
                **CLONE_FAULT_CULPRIT, **FETCH_SHARED_FAULT_CULPRIT}
    assert set(FAULT_FIXED_SETTINGS) <= {f for f, c in culprits.items() if c is not None}
    assert {"h2-small-window", "tcp-rmem-clamp", "tiny-backlog", "loss", "firewall-reset",
            "slow-hook", "slow-auth", "window-scaling-off", "syn-drop"} <= set(FAULT_FIXED_SETTINGS)
    for fault in FAULT_FIXED_SETTINGS:
        fixed = fixed_spec(build_spec(instance="a", faults=[fault, "auth"]))
        assert fixed.faults == ("auth",) and fixed.fixed == (fault,)
    # edge-response-buffering needs the nginx edge, others HAProxy (tests/lab/test_hostfix.py)
    every = build_spec(instance="a", faults=[f for f in FAULT_FIXED_SETTINGS
                                             if f != "edge-response-buffering"])
    fixed = fixed_spec(every)
    assert fixed.edge_h2_window == LARGE_WINDOW and fixed.server_rmem_max == FIXED_RMEM_MAX_BYTES
    assert fixed.git_backlog > 128 and not fixed.real_git_daemon
    assert fixed.loss == 0.0 and fixed.reset_port is None
    assert fixed.hook_delay_s == 0.0 and fixed.auth_delay_s == 0.0
    assert fixed.server_window_scaling and fixed.syn_drop_share == 0.0
    assert fixed.faults == ("healthy",) and fixed.rtt_ms == every.rtt_ms


def test_fixed_spec_of_some_faults_and_the_suggested_window() -> None:
    spec = build_spec(instance="a", faults=["h2-small-window", "loss"])
    only_h2 = fixed_spec(spec, ["h2-small-window"], h2_window=1 << 20)
    assert only_h2.edge_h2_window == 1 << 20 and only_h2.loss == pytest.approx(0.02)
    assert only_h2.faults == ("loss",) and only_h2.fixed == ("h2-small-window",)
    with pytest.raises(UsageError, match="no fault 'slow-hook'"):
        fixed_spec(spec, ["slow-hook"])
    with pytest.raises(UsageError, match="'auth' has no fix"):
        fixed_spec(build_spec(instance="a", faults=["auth"]), ["auth"])
    with pytest.raises(UsageError, match="no fault with a fix"):
        fixed_spec(build_spec(instance="a", faults=["healthy"]))
