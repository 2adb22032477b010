"""The client-h2-window fault's parts that need no lab: its spec, the shim gcc builds (the two
nghttp2 calls it wraps, exported), and the git wrapper that preloads it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gitnetdiag.lab import h2window
from gitnetdiag.lab.spec import CLIENT_H2_WINDOW, FETCH_FAULT_CULPRIT, build_spec

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


def test_spec_holds_the_window_only_under_the_fault() -> None:
    spec = build_spec(instance="x", faults=["client-h2-window"])
    assert spec.client_h2_window == CLIENT_H2_WINDOW == 65535
    assert spec.fetch_history == "random" and spec.client_cpu_share is None
    assert FETCH_FAULT_CULPRIT["client-h2-window"] == "client-http2-window"
    assert build_spec(instance="x", faults=["client-rmem-clamp"]).client_h2_window is None


@needs_gcc
def test_shim_exports_the_two_nghttp2_calls_and_the_wrapper_preloads_it(tmp_path: Path) -> None:
    path = h2window.attach(tmp_path, 65535, next_git=shutil.which("git"))
    shim = h2window.shim_path(tmp_path)
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(shim)], capture_output=True,
                             text=True, check=True).stdout
    assert "nghttp2_submit_settings" in symbols
    assert "nghttp2_session_set_local_window_size" in symbols
    wrapper = Path(path) / "git"
    assert f'LD_PRELOAD="{shim}' in wrapper.read_text()
    # The wrapper runs git with the shim loaded (a process without nghttp2 is unaffected).
    env = {"PATH": f"{path}:{os.environ['PATH']}", "LD_PRELOAD": ""}
    out = subprocess.run(["git", "--version"], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert out.startswith("git version")
    traced = subprocess.run([str(wrapper), "-c", "alias.env=!env", "env"], capture_output=True,
                            text=True, env=env, check=True).stdout
    assert f"LD_PRELOAD={shim}" in traced


@needs_gcc
def test_a_broken_build_is_one_lab_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitnetdiag.errors import LabError

    monkeypatch.setattr(h2window, "SHIM_SOURCE", "__init__.py")  # Python is not C
    with pytest.raises(LabError, match="did not compile"):
        h2window.compile_shim(tmp_path, 65535)
