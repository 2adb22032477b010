"""The lab's authenticated way in: HTTP Basic auth on smart HTTP (the ``auth`` fault).

Apache checks a bcrypt ``htpasswd`` file; clients get the same generated token
the way a real user's git does, from a ``credential-store`` file that a
``credential.helper = store --file=F`` line points at.
"""

from __future__ import annotations

import os
import pwd
import secrets

from gitnetdiag.lab import config
from gitnetdiag.lab.config import LabPaths
from gitnetdiag.model.lab.state import PORT_HTTPS_DIRECT, PORT_HTTPS_EDGE, SERVER_IP
from gitnetdiag.proc import run


def make_http_auth(paths: LabPaths, account: pwd.struct_passwd) -> None:
    """A generated user and token: bcrypt hash for Apache, git credential-store file for clients.

    The token goes to htpasswd on stdin, never on a command line.
    """
    token = "gndlab-" + secrets.token_hex(16)
    directory = paths.htpasswd.parent
    directory.mkdir(mode=0o755, exist_ok=True)
    run(["htpasswd", "-B", "-c", "-i", str(paths.htpasswd), config.HTTP_AUTH_USER],
        input_bytes=token.encode(), timeout_s=30)
    os.chown(paths.htpasswd, 0, account.pw_gid)
    paths.htpasswd.chmod(0o640)
    hosts = (f"{SERVER_IP}:{PORT_HTTPS_EDGE}", f"{SERVER_IP}:{PORT_HTTPS_DIRECT}", SERVER_IP)
    fd = os.open(paths.credential_store, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 0o600)
    with os.fdopen(fd, "w") as store:
        store.writelines(f"https://{config.HTTP_AUTH_USER}:{token}@{host}\n" for host in hosts)
