"""The run directory is the bottom of the package: both sides import it, it imports neither."""

from __future__ import annotations

import ast
from pathlib import Path

import gitnetdiag

PACKAGE = Path(gitnetdiag.__file__).parent
ALLOWED_IN_RUNDIR = {"gitnetdiag.errors", "gitnetdiag.redaction", "gitnetdiag.safefile"}


def _gitnetdiag_imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name.split(".")[0] == "gitnetdiag"}


def test_rundir_imports_only_errors_redaction_safefile_and_itself() -> None:
    for path in sorted((PACKAGE / "rundir").glob("*.py")):
        outside = {name for name in _gitnetdiag_imports(path)
                   if not name.startswith("gitnetdiag.rundir") and name not in ALLOWED_IN_RUNDIR}
        assert not outside, f"{path.name} imports {sorted(outside)}"


def test_the_offline_pipeline_never_imports_a_probe() -> None:
    for name in ("pipeline.py", "pipeline_native.py"):
        probes = {m for m in _gitnetdiag_imports(PACKAGE / name)
                  if m.startswith("gitnetdiag.probe")}
        assert not probes, f"{name} imports {sorted(probes)}"
