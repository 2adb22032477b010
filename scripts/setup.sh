#!/usr/bin/env bash
# Install everything gitnetdiag needs on a Debian machine, idempotently:
# Debian packages (apt-get, only the missing ones) and a virtual environment
# at .venv with the project in editable mode plus its dev tools.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBS=(git gcc apache2 haproxy openssh-server openssh-client tshark tcpdump iperf3
      iptables libnetfilter-queue-dev iproute2 openssl fio ethtool procps kmod apache2-utils
      prometheus nginx caddy h2o trafficserver tinyproxy
)

missing=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]} (hint: run as root so apt-get can install them)" >&2
    exit 4
  fi
  echo "setup: installing Debian packages: ${missing[*]}"
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  # Keep the packages' services (nginx, caddy, h2o, trafficserver, apache2 ...) from starting on the host:
  # the lab runs its own instances inside namespaces and nothing may listen outside them.
  made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
  [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d
fi
# Debian enables these services on install; the lab runs its own copies in namespaces
# (and the watch tests their own Prometheus).
for svc in apache2 haproxy ssh prometheus nginx caddy h2o trafficserver tinyproxy; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" >/dev/null 2>&1 || true
    systemctl disable "$svc" >/dev/null 2>&1 || true
  fi
done

PY=${PYTHON:-python3}
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if [ ! -f "$stamp" ]; then
  echo "setup: installing Python packages into .venv"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi
# Byte-compile the project's own modules: this machine's environment sets
# PYTHONDONTWRITEBYTECODE, so without the cache every `python -m gitnetdiag` (the tests
# spawn about 500, a diagnosis several) compiled them all again, 0.3 s of CPU each time
# (`report --help`: 0.71-0.89 s without, 0.48-0.57 s with, 2026-12-03). The interpreter
# reads a cache it did not write; an edited module's stale entry is recompiled in memory.
.venv/bin/python -m compileall -q -j 0 gitnetdiag tests benchmarks scripts >/dev/null || true
