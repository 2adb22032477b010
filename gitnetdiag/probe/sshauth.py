"""How OpenSSH would reach an ``ssh://`` remote: ``~/.ssh/config``, the agent, known_hosts.

The native SSH probe (:mod:`gitnetdiag.probe.sshnative`) pushes where ``git push``
pushes, so it resolves the URL the way ``ssh`` does::

    ssh://alias/path      Host alias -> HostName, Port, User, IdentityFile,
                          UserKnownHostsFile (first value wins, as in ssh_config)
    keys                  --ssh-key (a private key, or a .pub whose private half
                          is in the agent)  >  ssh-agent (SSH_AUTH_SOCK)  >
                          IdentityFile  >  ~/.ssh/id_ed25519, id_ecdsa, id_rsa
    host key              --ssh-known-hosts  >  UserKnownHostsFile  >
                          ~/.ssh/known_hosts, /etc/ssh/ssh_known_hosts
    ProxyJump host        the same, looked up under its own name: its key offered the
                          same candidates, its host key checked in the same files
                          (--ssh-known-hosts must then list it too)

Explicit options keep priority over the config, as ``ssh -i``/``-o`` do.
"""

from __future__ import annotations

import base64
import getpass
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import paramiko

from gitnetdiag.errors import NetworkError, UsageError
from gitnetdiag.hops import JumpHost
from gitnetdiag.redaction import redact_url

DEFAULT_IDENTITIES = ("id_ed25519", "id_ecdsa", "id_rsa")
SYSTEM_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"


@dataclass(frozen=True, kw_only=True)
class SshTarget:
    """Where to connect and as whom, after ``~/.ssh/config`` was applied."""

    host: str
    """The address to connect to (config HostName, else the URL's host)."""
    port: int
    user: str
    path: str
    alias: str = ""
    """The host as written in the URL (a config Host alias, or the host itself)."""
    identity_files: tuple[str, ...] = ()
    """IdentityFile entries from the config, expanded."""
    known_hosts_files: tuple[str, ...] = ()
    """UserKnownHostsFile entries from the config, expanded."""
    identities_only: bool = False
    """``IdentitiesOnly yes``: offer only the configured keys, not every agent key."""

    @classmethod
    def from_url(cls, url: str, config: paramiko.SSHConfig | None = None) -> SshTarget:
        """Parse ``ssh://[user@]host[:port]/path``; ``config`` fills what the URL leaves out."""
        try:
            parts = urlsplit(url)
            url_port = parts.port
        except ValueError as exc:
            raise UsageError(f"cannot read the ssh URL {redact_url(url)}") from exc
        if parts.scheme not in ("ssh", "git+ssh", "ssh+git") or not parts.hostname:
            raise UsageError(f"not an ssh://[user@]host/path URL: {redact_url(url)}",
                             hint="write it like ssh://git@host/path/repo.git")
        return cls._resolved(parts.hostname, url_port, unquote(parts.username or ""),
                             unquote(parts.path), config)

    @classmethod
    def _resolved(cls, alias: str, port: int | None, user: str, path: str,
                  config: paramiko.SSHConfig | None, default_user: str = "") -> SshTarget:
        """``alias`` looked up in ``config``; ``port`` and ``user`` (when given) win over it,
        ``default_user`` (else the local user) stands in for a user neither names."""
        entry = config.lookup(alias) if config is not None else {"hostname": alias}
        return cls(
            host=entry.get("hostname", alias), port=port or int(entry.get("port", 22)),
            user=user or entry.get("user") or default_user or getpass.getuser(),
            path=path, alias=alias,
            identity_files=tuple(os.path.expanduser(p) for p in entry.get("identityfile", [])),
            known_hosts_files=tuple(
                os.path.expanduser(p)
                for item in _as_list(entry.get("userknownhostsfile"))
                for p in item.split()
            ),
            identities_only=str(entry.get("identitiesonly", "no")).lower() == "yes",
        )

    def via(self, jump: JumpHost, config: paramiko.SSHConfig | None) -> SshTarget:
        """The jump host this target is reached through, as a target of its own: its host
        looked up in ``config`` (HostName, Port, User, IdentityFile, UserKnownHostsFile),
        its user the spec's, else the config's, else this target's."""
        return SshTarget._resolved(jump.host, jump.port or None, jump.user, "", config,
                                   default_user=self.user)

    @property
    def known_hosts_name(self) -> str:
        """The name known_hosts lists the server under (``[host]:port`` off port 22)."""
        return self.alias if self.port == 22 else f"[{self.alias}]:{self.port}"


def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def load_ssh_config(path: str | None = None) -> paramiko.SSHConfig | None:
    """The user's ``~/.ssh/config`` (or ``path``), None when there is none."""
    file = Path(path or os.path.expanduser("~/.ssh/config"))
    if not file.is_file():
        return None
    try:
        return paramiko.SSHConfig.from_path(str(file))
    except (OSError, paramiko.SSHException, ValueError) as exc:
        raise UsageError(f"cannot read the ssh config {file}: {exc}",
                         hint="fix the file, ssh reads it too", reference="bad-ssh-config") from exc


def known_hosts_files(target: SshTarget, explicit: str | None) -> list[str]:
    """Files to verify the host key with, in ssh's order; ``explicit`` wins alone."""
    if explicit:
        return [explicit]
    if target.known_hosts_files:
        return list(target.known_hosts_files)
    return [os.path.expanduser("~/.ssh/known_hosts"), SYSTEM_KNOWN_HOSTS]


def verify_host_key(target: SshTarget, server_key: paramiko.PKey, files: list[str]) -> None:
    """Accept the server's key only if a known_hosts file lists it for this host."""
    keys = paramiko.HostKeys()
    for name in files:
        if os.path.isfile(name):
            try:
                keys.load(name)
            except (OSError, paramiko.SSHException) as exc:
                raise UsageError(f"cannot read known_hosts {name}: {exc}",
                                 reference="bad-known-hosts") from exc
    names = [target.known_hosts_name]
    if target.host != target.alias:  # ssh also checks HostName (CheckHostIP-like)
        names.append(target.host if target.port == 22 else f"[{target.host}]:{target.port}")
    listed = [entry for name in names if (entry := keys.lookup(name))]
    if any(entry.get(server_key.get_name()) == server_key for entry in listed):
        return
    fingerprint = server_key.fingerprint
    if any(server_key.get_name() in entry for entry in listed):
        raise NetworkError(
            f"the host key of {target.known_hosts_name} ({fingerprint}) differs from the one "
            f"in {', '.join(files)}",
            hint="the server is not the one known_hosts remembers; check it before trusting it",
            reference="ssh-host-key-changed",
        )
    raise NetworkError(
        f"the host key of {target.known_hosts_name} ({server_key.get_name()} {fingerprint}) "
        f"is not in {', '.join(files)}",
        hint=f"verify the fingerprint, then add it: ssh-keyscan -p {target.port} {target.host} "
        ">> ~/.ssh/known_hosts (or pass --ssh-known-hosts)",
        reference="ssh-host-key-unknown",
    )


def _agent_keys() -> list[paramiko.AgentKey]:
    if not os.environ.get("SSH_AUTH_SOCK"):
        return []
    try:
        return list(paramiko.Agent().get_keys())
    except (OSError, paramiko.SSHException):
        return []


def _public_blob(path: str) -> bytes | None:
    """The key blob of an OpenSSH public key file (``type base64 comment``), or None."""
    try:
        fields = Path(path).read_text().split()
    except (OSError, UnicodeDecodeError):
        return None
    if len(fields) < 2 or not fields[0].startswith(("ssh-", "ecdsa-", "sk-")):
        return None
    try:
        return base64.b64decode(fields[1], validate=True)
    except ValueError:
        return None


def _private_key(path: str) -> paramiko.PKey:
    try:
        return paramiko.PKey.from_path(path)
    except (paramiko.PasswordRequiredException, TypeError) as exc:
        # paramiko raises TypeError (from cryptography) for a protected OpenSSH-format key.
        raise NetworkError(
            f"the SSH key {path} is protected by a passphrase",
            hint=f"load it into ssh-agent (ssh-add {path}); the probe never prompts",
            reference="ssh-key-locked",
        ) from exc
    except (OSError, paramiko.SSHException, ValueError) as exc:
        raise UsageError(f"cannot read the SSH key {path}: {exc}",
                         hint="give a private key, or its .pub with the key in ssh-agent",
                         reference="bad-ssh-key") from exc


def candidate_keys(target: SshTarget, key_file: str | None) -> list[paramiko.PKey]:
    """Keys to offer, in ssh's order (see the module docstring)."""
    agent = _agent_keys()
    if key_file:
        blob = _public_blob(key_file)
        if blob is None:
            # A passphrase-protected key is usable when the agent holds it (ssh does that).
            unlocked = [key for key in agent if key.asbytes() == _public_blob(key_file + ".pub")]
            return unlocked or [_private_key(key_file)]
        matching = [key for key in agent if key.asbytes() == blob]
        if matching:
            return matching
        private = key_file[: -len(".pub")] if key_file.endswith(".pub") else ""
        if private and os.path.isfile(private):
            return [_private_key(private)]
        raise NetworkError(
            f"{key_file} is a public key and ssh-agent holds no matching private key"
            + ("" if os.environ.get("SSH_AUTH_SOCK") else " (SSH_AUTH_SOCK is not set)"),
            hint=f"ssh-add the private key of {key_file}, or pass the private key file",
            reference="ssh-key-not-in-agent",
        )
    keys: list[paramiko.PKey] = []
    wanted_blobs = {blob for path in target.identity_files
                    if (blob := _public_blob(path + ".pub")) is not None}
    if target.identities_only and target.identity_files:
        keys += [key for key in agent if key.asbytes() in wanted_blobs]
    else:
        keys += agent
    files = list(target.identity_files) or [
        os.path.expanduser(f"~/.ssh/{name}") for name in DEFAULT_IDENTITIES
    ]
    offered = {key.asbytes() for key in keys}
    for path in files:
        if os.path.isfile(path) and _public_blob(path + ".pub") not in offered:
            try:
                keys.append(_private_key(path))
            except (NetworkError, UsageError):
                continue  # locked (ssh would prompt) or unreadable: ssh skips it too
    return keys


def authenticate(transport: paramiko.Transport, target: SshTarget,
                 keys: list[paramiko.PKey]) -> None:
    """Public-key authentication with each key in turn; one clear error if none works."""
    if not keys:
        raise NetworkError(
            f"no SSH key to offer to {target.user}@{target.alias}: no --ssh-key, no ssh-agent "
            "key, no IdentityFile and no ~/.ssh/id_* file",
            hint="start ssh-agent and ssh-add your key, or pass --ssh-key",
            reference="ssh-auth-failed",
        )
    for key in keys:
        try:
            transport.auth_publickey(target.user, key)
            return
        except paramiko.AuthenticationException:
            continue
        except paramiko.SSHException as exc:
            raise NetworkError(f"SSH authentication with {target.alias} failed: {exc}",
                               reference="ssh-auth-failed") from exc
    raise NetworkError(
        f"{target.user}@{target.alias} refused the SSH key"
        + ("s" if len(keys) > 1 else "") + f" offered ({len(keys)})",
        hint=f"check that the server lists your public key for {target.user}, "
        "and the key passed with --ssh-key or loaded in ssh-agent",
        reference="ssh-auth-failed",
    )
