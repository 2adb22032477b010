"""Checks of the probe's inputs before anything runs: each names the cause and the next step.

A key ssh will ignore, a CA bundle with no certificate, a repository without
commits or a URL the capture filter cannot take would otherwise surface after
the pushes, as a symptom ("Permission denied (publickey)", a traceback from a
background thread, ``fatal: Needed a single revision``, a tcpdump filter error).
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import stat
from pathlib import Path
from urllib.parse import unquote, urlsplit

from gitnetdiag.errors import UsageError
from gitnetdiag.inputfile import read_input, unusable_reason
from gitnetdiag.proc import run
from gitnetdiag.vocabulary import TransportKind

_OPENSSH_MAGIC = b"openssh-key-v1\x00"
_OPENSSH_HEADER = "-----BEGIN OPENSSH PRIVATE KEY-----"


def _usage(message: str) -> UsageError:
    return UsageError(message, hint="give a readable file")


def check_zone_id(option: str, url: str, capture: bool) -> None:
    """tcpdump's filter takes no IPv6 zone id (``fe80::1%eth0``): say so before the run."""
    try:
        host = unquote(urlsplit(url).hostname or "")
    except ValueError:
        return
    if capture and "%" in host:
        raise UsageError(
            f"{option} names the link-local address {host}: the packet capture filter "
            "cannot take an IPv6 zone id", reference="ipv6-zone-id",
            hint="add --no-capture (the kernel's TCP_INFO gives the TCP evidence), or use "
            "the host's global address or name")


def check_native_https(url: str, h2_requested: bool, native: bool) -> None:
    """The native HTTP/2 probe speaks TLS with ALPN only: a plain http:// remote fails it
    after the pushes; refuse before them."""
    if native and h2_requested and urlsplit(url).scheme.lower() == "http":
        raise UsageError(
            "--http is a plain http:// URL: the native HTTP/2 probe needs https://",
            reference="native-needs-https",
            hint="add --no-native to push with git alone, or --protocols h1 to measure "
            "HTTP/1.1 only")


def check_ca_file(path: Path) -> None:
    """The CA bundle must hold at least one PEM certificate."""
    read_input(path, error=_usage)
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=str(path))
    except (ssl.SSLError, ValueError) as exc:
        raise UsageError(
            f"--ca-file {path} holds no PEM certificate ({getattr(exc, 'reason', None) or exc})",
            reference="bad-ca-file",
            hint="give the CA bundle (PEM, '-----BEGIN CERTIFICATE-----') that signed the "
            "server's certificate") from exc


def _openssh_key_info(text: str) -> tuple[bool, str | None]:
    """Whether an OpenSSH-format private key is encrypted, and its public key blob
    (base64, as ``ssh-add -L`` prints it); (False, None) when it cannot be parsed."""
    body = "".join(line for line in text.splitlines()
                   if line and not line.startswith("-----"))
    try:
        blob = base64.b64decode(body, validate=False)
    except (binascii.Error, ValueError):
        return False, None
    if not blob.startswith(_OPENSSH_MAGIC):
        return False, None
    fields: list[bytes] = []
    offset = len(_OPENSSH_MAGIC)
    for _ in range(3):  # cipher name, kdf name, kdf options
        length = int.from_bytes(blob[offset:offset + 4], "big")
        fields.append(blob[offset + 4:offset + 4 + length])
        offset += 4 + length
    offset += 4  # number of keys
    length = int.from_bytes(blob[offset:offset + 4], "big")
    public = base64.b64encode(blob[offset + 4:offset + 4 + length]).decode()
    return fields[0] != b"none", public


def _agent_holds(public: str | None) -> bool:
    """Whether a running ssh-agent lists the key (any key when ``public`` is unknown)."""
    sock = os.environ.get("SSH_AUTH_SOCK", "")
    if not sock:
        return False
    proc = run(["ssh-add", "-L"], timeout_s=5.0, check=False)
    if proc.returncode != 0:
        return False
    return public is None or public in proc.stdout


def check_ssh_key_usable(key: Path) -> None:
    """ssh ignores a key others may read (``bad permissions``) and, in batch mode, cannot
    ask for a passphrase: both are named here, before any push."""
    info = os.stat(key)
    if info.st_uid == os.getuid() and info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        raise UsageError(
            f"--ssh-key {key} has mode {mode:04o}: ssh ignores a private key that others can "
            "read (bad permissions)", reference="ssh-key-permissions",
            hint=f"chmod 600 {key}")
    text = read_input(key, max_bytes=1 << 20, error=_usage).decode("ascii", "replace")
    if _OPENSSH_HEADER in text:
        encrypted, public = _openssh_key_info(text)
    else:
        encrypted, public = ("ENCRYPTED" in text.split("\n\n", 1)[0]), None
    if encrypted and not _agent_holds(public):
        raise UsageError(
            f"--ssh-key {key} is protected by a passphrase and no ssh-agent holds it: the "
            "probe runs ssh in batch mode and cannot ask for the passphrase",
            reference="ssh-key-locked",
            hint=f"'ssh-add {key}' into a running agent (SSH_AUTH_SOCK set), or give a key "
            "without a passphrase")


def check_repo_has_commits(repo: Path) -> None:
    """``--repo`` pushes HEAD's tree: a repository without a commit has none."""
    proc = run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", "HEAD^{commit}"],
               timeout_s=30.0, check=False)
    if proc.returncode != 0:
        raise UsageError(f"--repo {repo}: the repository has no commits (HEAD names none)",
                         reference="repo-no-commits",
                         hint="commit something first, or leave --repo out to push a "
                         "generated repository")


def check_regular(path: Path, what: str) -> None:
    """``path`` is a regular file, else one usage error saying what it is."""
    reason = unusable_reason(path)
    if reason is not None:
        raise UsageError(f"{what} {path} {reason}", hint=f"give an existing {what}"
                         if reason == "does not exist" else f"give the path of the {what} itself")


def parse_protocols(text: str | None, urls: dict[TransportKind, str]) -> tuple[TransportKind, ...]:
    """``--protocols`` (default: every protocol with a URL), each needing its URL."""
    if text is None:
        return tuple(p for p in TransportKind if p in urls)
    chosen: list[TransportKind] = []
    for name in (part.strip().lower() for part in text.split(",") if part.strip()):
        try:
            protocol = TransportKind(name)
        except ValueError as exc:
            raise UsageError(f"unknown protocol {name!r}", hint="use h1, h2, ssh, git") from exc
        if protocol not in urls:
            need = "--http" if protocol.is_http else f"--{protocol.value}"
            raise UsageError(f"protocol {name} needs a URL", hint=f"give {need} URL (or --lab)")
        if protocol not in chosen:
            chosen.append(protocol)
    return tuple(chosen)


_PUBLIC_KEY_PREFIXES = ("ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-")


def check_private_key(key: Path | None) -> Path | None:
    """``--ssh-key`` must be a private key: a ``.pub`` file only fails later, obscurely."""
    if key is None:
        return None
    existing(key, "SSH key")
    try:
        with key.open("rb") as handle:
            head = handle.read(64)
    except OSError as exc:
        raise UsageError(f"cannot read SSH key {key}: {exc.strerror}",
                         hint="give a readable private key file") from exc
    if key.suffix == ".pub" or head.lstrip().startswith(
            tuple(prefix.encode() for prefix in _PUBLIC_KEY_PREFIXES)):
        private = key.with_suffix("") if key.suffix == ".pub" else None
        example = f" ({private})" if private is not None and private.is_file() else ""
        raise UsageError(
            f"--ssh-key {key} is a public key",
            hint=f"give the private key{example} or leave --ssh-key out to use ssh-agent",
            reference="ssh-public-key")
    check_ssh_key_usable(key)
    return key


def existing(path: Path | None, what: str) -> Path | None:
    """``path`` when it is None or a regular file, else one usage error."""
    if path is not None:
        check_regular(path, what)
    return path


_URL_OPTIONS = {TransportKind.H1: "--http", TransportKind.H2: "--http", TransportKind.SSH: "--ssh",
                TransportKind.GIT: "--git"}


def preflight(urls: dict[TransportKind, str], chosen: tuple[TransportKind, ...], *, native: bool,
               capture: bool, full: bool, ca_file: Path | None, repo: Path | None) -> None:
    """What would fail only after the pushes, or obscurely, refused before them (``--full``
    over http:// is refused by the run itself, for the credentials: that error first)."""
    for protocol, url in urls.items():
        check_zone_id(_URL_OPTIONS[protocol], url, capture)
    if TransportKind.H2 in urls and not full:
        check_native_https(urls[TransportKind.H2], TransportKind.H2 in chosen, native)
    if ca_file is not None:
        check_regular(ca_file, "CA file")
        check_ca_file(ca_file)
    if repo is not None:
        if not (repo / ".git").exists() and not (repo / "HEAD").is_file():
            raise UsageError(f"{repo} is not a git repository",
                             hint="give --repo a repository path")
        check_repo_has_commits(repo)

