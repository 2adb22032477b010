"""The ``client-h2-window`` fault: the lab client's git advertises a small HTTP/2 window.

libcurl up to 7.51 kept HTTP/2's default 65,535 B stream and connection window
for a download (curl issue 1102, ``gitnetdiag/data/libcurl_h2_windows.toml``);
the lab's libcurl (7.88.1) advertises 32 MiB. To give the lab the old client
without building an old libcurl, ``lab up`` compiles a small ``LD_PRELOAD``
shim (``h2window_shim.c``, with ``gcc``) into the instance's state directory:

    <state dir>/client-h2-window/h2window.so   wraps nghttp2_submit_settings and
                                               nghttp2_session_set_local_window_size
    <state dir>/client-h2-bin/git              preloads it, then runs the next git

As with ``client-pack-cpu`` (:mod:`gitnetdiag.lab.slowclient`), ``--lab`` puts
the wrapper's directory first on ``PATH`` in the client namespace, so only the
git a lab run starts (and the ``git-remote-https`` it starts, which links
libcurl) carries the shim; the probe, the lab's servers and every other git do
not. The files go with the state directory at ``lab down``.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from gitnetdiag.errors import LabError
from gitnetdiag.lab.slowclient import install_wrapper, real_git
from gitnetdiag.proc import run

SHIM_SOURCE = "h2window_shim.c"
COMPILE_TIMEOUT_S = 60.0


def bin_dir(root: Path) -> Path:
    """The directory holding the client's preloading ``git`` wrapper."""
    return root / "client-h2-bin"


def shim_path(root: Path) -> Path:
    """The compiled shim."""
    return root / "client-h2-window" / "h2window.so"


def git_wrapper(shim: Path, git: str) -> str:
    """The client's ``git``: preload the shim, then become ``git`` (the real one, or the
    wrapper of another client fault)."""
    return f"""#!/bin/sh
# gitnetdiag lab: client-h2-window fault, libcurl's HTTP/2 window held small
LD_PRELOAD="{shim}${{LD_PRELOAD:+:$LD_PRELOAD}}" exec {git} "$@"
"""


def compile_shim(root: Path, window_bytes: int) -> Path:
    """Build the shim for ``window_bytes`` into the state directory; returns its path."""
    gcc = shutil.which("gcc")
    if gcc is None:
        raise LabError("the client-h2-window fault needs gcc to build its shim",
                       hint="install the Debian package 'gcc' (scripts/setup.sh does)")
    out = shim_path(root)
    out.parent.mkdir(exist_ok=True)
    source = out.parent / SHIM_SOURCE
    source.write_text(resources.files("gitnetdiag.lab").joinpath(SHIM_SOURCE).read_text())
    proc = run([gcc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror",
                f"-DGND_STREAM_WINDOW={int(window_bytes)}", "-o", str(out), str(source)],
               check=False, timeout_s=COMPILE_TIMEOUT_S)
    if proc.returncode != 0 or not out.exists():
        raise LabError("the client-h2-window shim did not compile: "
                       + (proc.stderr.strip().splitlines() or ["no output"])[-1],
                       hint=f"see {source}; gcc must build a shared object")
    out.chmod(0o755)
    return out


def attach(root: Path, window_bytes: int, next_git: str | None = None) -> str:
    """Compile the shim and write the wrapper that preloads it before ``next_git`` (default:
    the real git); returns the directory to put first on the client's ``PATH``."""
    git = next_git or real_git()
    shim = compile_shim(root, window_bytes)
    return install_wrapper(bin_dir(root), git_wrapper(shim, git))
