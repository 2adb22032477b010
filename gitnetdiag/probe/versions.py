"""Versions of the programs and libraries that shape a push (git, libcurl, nghttp2, OpenSSH)."""

from __future__ import annotations

import platform
import re

from gitnetdiag.errors import GitnetdiagError
from gitnetdiag.proc import run
from gitnetdiag.rundir.records import ToolVersions

_TIMEOUT_S = 10.0


def _output(argv: list[str]) -> str | None:
    try:
        proc = run(argv, timeout_s=_TIMEOUT_S, check=False)
    except GitnetdiagError:
        return None
    if proc.returncode != 0:
        return None
    return (proc.stdout + "\n" + proc.stderr).strip()


def parse_git_version(text: str | None) -> str | None:
    """``git version 2.39.5`` -> ``2.39.5``."""
    match = re.search(r"git version (\S+)", text or "")
    return match.group(1) if match else None


def parse_curl_versions(text: str | None) -> tuple[str | None, str | None]:
    """(libcurl, OpenSSL) versions from ``curl --version`` or ``curl-config --version``."""
    text = text or ""
    curl = re.search(r"libcurl[ /](\d[\w.\-]*)", text)
    ssl = re.search(r"OpenSSL/(\S+)", text)
    return (curl.group(1) if curl else None, ssl.group(1) if ssl else None)


def parse_ssh_version(text: str | None) -> str | None:
    """``OpenSSH_9.2p1 Debian-2, OpenSSL ...`` -> ``OpenSSH_9.2p1``."""
    match = re.search(r"(OpenSSH_\S+?)[ ,]", (text or "") + " ")
    return match.group(1) if match else None


def collect_versions() -> ToolVersions:
    """Ask each program for its version; missing ones are None."""
    libcurl, openssl = parse_curl_versions(_output(["curl", "--version"]))
    if libcurl is None:
        libcurl, _ = parse_curl_versions(
            "libcurl " + (_output(["curl-config", "--version"]) or "").replace("libcurl ", "")
        )
    nghttp2 = _output(["dpkg-query", "-W", "-f=${Version}", "libnghttp2-14"])
    git_libcurl = _output(["dpkg-query", "-W", "-f=${Version}", "libcurl3-gnutls"])
    tcpdump = _output(["tcpdump", "--version"])
    tcpdump_match = re.search(r"tcpdump version (\S+)", tcpdump or "")
    return ToolVersions(
        git=parse_git_version(_output(["git", "version"])),
        libcurl=libcurl,
        git_libcurl_package=git_libcurl.splitlines()[0] if git_libcurl else None,
        nghttp2=nghttp2.splitlines()[0] if nghttp2 else None,
        openssh=parse_ssh_version(_output(["ssh", "-V"])),
        openssl=openssl,
        tcpdump=tcpdump_match.group(1) if tcpdump_match else None,
        kernel=platform.release(),
        python=platform.python_version(),
    )
