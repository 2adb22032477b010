"""The import rules of docs/architecture.md: a lower layer never imports a higher one.

Every ``import`` in ``gitnetdiag/`` counts, those inside functions and under
``TYPE_CHECKING`` included: a lazy import is still a dependency. A module belongs
to the component of its top-level package (or, for a top-level module, of itself):
:data:`COMPONENTS` names packages, never single modules inside one, so there is no
per-module exception. Each component may import only the components
:data:`MAY_IMPORT` lists for it. The pure side may not import ``subprocess`` or
``socket`` either (:data:`PURE`). A module whose name starts with ``_`` is private
to its package: only its own component imports it (a command imports
``gitnetdiag.pipeline``, the pipeline's one entry, never ``gitnetdiag.pipeline._run``).

    top        commands, cli
    I/O side   probe host lab load storage  -> tools (tshark) -> proc
               watch: the exporter's own probe -> diagnose -> reports loop, the one
               I/O package that calls the pipeline (through its entry)
    pure side  pipeline -> report, diagnosis -> analysis -> capture
    model      the pure records and parsers of host, lab, load, storage
    rundir     schema, file names, reading/writing the run directory
    bottom     errors, inputfile, outcomes, redaction, remoteurl, remotederive, safefile, serial,
               thresholds,
               vocabulary, data (stdlib only)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gitnetdiag"

BOTTOM = "bottom"
COMPONENTS: dict[str, str] = {
    "__init__": BOTTOM,  # the package's own __init__ (version string)
    "errors": BOTTOM,
    "inputfile": BOTTOM,
    "outcomes": BOTTOM,
    "redaction": BOTTOM,
    "remoteurl": BOTTOM,
    "remotederive": BOTTOM,
    "safefile": BOTTOM,
    "serial": BOTTOM,
    "thresholds": BOTTOM,
    "vocabulary": BOTTOM,
    "hops": BOTTOM,  # each protocol's first hop (forward proxy or direct): records, parsers
    "data": BOTTOM,  # bundled data files (TOML), read with importlib.resources
    "rundir": "rundir",
    "model": "model",
    "capture": "capture",
    "analysis": "analysis",
    "diagnosis": "diagnosis",
    "pipeline": "pipeline",
    "report": "report",
    "proc": "proc",
    "steps": "proc",  # where a command's time goes (GITNETDIAG_STEPS), beside proc
    "tools": "tools",
    "probe": "probe",
    "host": "host",
    "lab": "lab",
    "load": "load",
    "storage": "storage",
    "watch": "watch",
    "commands": "top",
    "cli": "top",
    "__main__": "top",
}
"""Top-level package or module of gitnetdiag -> its component (layer)."""

_PURE_BELOW = {BOTTOM, "rundir", "capture", "analysis", "diagnosis"}
_IO_BASE = {BOTTOM, "rundir", "model", "proc", "tools", "capture", "analysis", "diagnosis"}
MAY_IMPORT: dict[str, set[str]] = {
    BOTTOM: {BOTTOM},
    "rundir": {BOTTOM},
    # The records of host, lab, load and storage; the host report names its schema (rundir).
    "model": {BOTTOM, "rundir"},
    "capture": {BOTTOM},
    # analysis replays the native probes' event records (gitnetdiag.rundir.native).
    "analysis": {BOTTOM, "rundir", "capture"},
    "diagnosis": {BOTTOM, "capture", "analysis"},
    "report": _PURE_BELOW | {"model"},
    # pipeline writes the report files into the run directory: the one writer on the pure side.
    "pipeline": _PURE_BELOW | {"model", "report"},
    "proc": {BOTTOM},
    "tools": {BOTTOM, "rundir", "proc", "capture", "analysis"},
    # The I/O side may use each other's collectors (a probe reads the lab's state, the load
    # test samples the host's counters) and pure modules for their data types.
    "probe": _IO_BASE | {"host", "lab"},
    "host": (_IO_BASE - {"diagnosis"}) | {"lab"},
    "lab": _IO_BASE - {"diagnosis"},
    "load": _IO_BASE | {"probe", "host", "lab"},
    "storage": _IO_BASE | {"host"},
    # watch runs its own probe -> diagnose -> reports loop, as the probe command does; the
    # data still flows one way (the pipeline reads the run directory the probe wrote).
    "watch": _IO_BASE | {"probe", "host", "lab", "pipeline"},
    "top": set(COMPONENTS.values()),
}
"""Component -> the components it may import (its own is always allowed)."""

PURE = {"capture", "analysis", "diagnosis", "pipeline", "report", "rundir", "model", BOTTOM}
"""Components that never run a program or open a socket."""
IO_MODULES = {"subprocess", "socket"}
IO_SIDE = {"probe", "host", "lab", "load", "storage", "watch"}
PURE_TYPES_ONLY = {"capture", "analysis", "diagnosis"}
"""The I/O side takes data types and constants from these, never their code: probes record,
the pipeline derives (``from gitnetdiag.diagnosis.observations import HostEvidence`` passes,
``from gitnetdiag.analysis.flowcontrol import credit_ledger`` does not)."""

ALLOWED: dict[tuple[str, str], str] = {}
"""Known violations being removed right now, each with the part of issue 12 that removes it.
Empty since issue 12 landed; an entry added later must name what removes it."""


def component(module: str) -> str | None:
    """The component of ``module``: that of its top-level package or module, None outside."""
    parts = module.split(".")
    if parts[0] != PACKAGE.name:
        return None
    return COMPONENTS.get(parts[1] if len(parts) > 1 else "__init__")


def is_private(module: str) -> bool:
    """A module (or package) below the top level whose own name starts with ``_``."""
    parts = module.split(".")
    return any(part.startswith("_") and not part.startswith("__") for part in parts[2:])


def module_name(path: Path, root: Path) -> str:
    relative = path.relative_to(root.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


CODE, TYPES = "code", "types"
"""How a module is imported: for its code, or only for names of types and constants."""


def _kind(names: list[ast.alias]) -> str:
    # Classes and constants are capitalised (PEP 8): what the I/O side may take from the pure
    # side. A function or a module brought in is code.
    return TYPES if all(alias.name[:1].isupper() for alias in names) else CODE


def imports_of(source: str, module: str, *, is_package: bool) -> Iterator[tuple[str, str]]:
    """(module, kind) of every import in ``source``, relative ones resolved, at any depth."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((alias.name, CODE) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield target, _kind(node.names)
            # "from gitnetdiag.x import y" may import the submodule y.
            yield from ((f"{target}.{alias.name}", CODE) for alias in node.names)


def import_graph(root: Path) -> dict[str, dict[str, str]]:
    """Module -> {imported module of the package, or stdlib I/O module: kind}."""
    graph: dict[str, dict[str, str]] = {}
    known = {module_name(p, root) for p in root.rglob("*.py")}
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        found: dict[str, str] = {}
        source = path.read_text()
        for name, kind in imports_of(source, module, is_package=path.stem == "__init__"):
            inside = name == root.name or name.startswith(root.name + ".")
            # "from pkg.mod import name" names a module only if such a module exists.
            is_module = name in known or name.rpartition(".")[0] not in known
            if name in IO_MODULES or (inside and is_module):
                found[name] = CODE if CODE in (kind, found.get(name)) else TYPES
        graph[module] = found
    return graph


def violations(graph: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    """Edges the layer map forbids, as (importer, imported)."""
    bad = []
    for module, targets in graph.items():
        mine = component(module)
        if mine is None:
            bad.append((module, "<module in no component>"))
            continue
        for target, kind in sorted(targets.items()):
            if target in IO_MODULES:
                if mine in PURE:
                    bad.append((module, target))
                continue
            theirs = component(target)
            upward = theirs is None or (theirs != mine and theirs not in MAY_IMPORT[mine])
            takes_code = mine in IO_SIDE and theirs in PURE_TYPES_ONLY and kind == CODE
            private = is_private(target) and theirs != mine
            if upward or takes_code or private:
                bad.append((module, target))
    return bad


def import_cycles(graph: Mapping[str, Mapping[str, str]]) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a circle (Tarjan)."""
    edges = {m: sorted(t for t in targets if t in graph and t != m) for m, targets in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in edges[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = [stack.pop()]
            while group[-1] != module:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return cycles


def test_the_package_keeps_its_layers() -> None:
    """No import goes up the layer map, except the commented known ones."""
    found = [edge for edge in violations(import_graph(PACKAGE)) if edge not in ALLOWED]
    assert found == [], "\n".join(f"{a} imports {b}" for a, b in found)


def test_every_top_level_name_has_exactly_one_component() -> None:
    """COMPONENTS names every top-level package and module of gitnetdiag and nothing else,
    so a new package must be placed in a layer and a removed one leaves no stale rule."""
    names = {path.stem if path.is_file() else path.name for path in PACKAGE.iterdir()
             if path.suffix == ".py" or (path.is_dir() and any(path.glob("*.py")))}
    assert names == set(COMPONENTS)
    assert set(MAY_IMPORT) == set(COMPONENTS.values())


def test_the_pipeline_entry_exports_what_its_private_modules_define() -> None:
    """Each name of the pipeline's entry resolves to the object its private module defines,
    and the TYPE_CHECKING imports that give mypy the types name the same modules."""
    import importlib

    import gitnetdiag.pipeline as entry

    assert entry.EXPORTS, "the pipeline entry exports nothing"
    typed = {
        alias.name: (node.module or "").rpartition(".")[2]
        for node in ast.walk(ast.parse((PACKAGE / "pipeline" / "__init__.py").read_text()))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if (node.module or "").startswith("gitnetdiag.pipeline._")
    }
    assert typed == entry.EXPORTS
    for name, module in entry.EXPORTS.items():
        private = importlib.import_module(f"gitnetdiag.pipeline.{module}")
        assert getattr(entry, name) is getattr(private, name)
    with pytest.raises(AttributeError):
        _ = entry.no_such_step


def test_the_allow_list_has_no_stale_entries() -> None:
    """An entry whose import is gone is removed, so that the list only shrinks."""
    current = set(violations(import_graph(PACKAGE)))
    assert [edge for edge in ALLOWED if edge not in current] == []


def stale_entries(allowed: Mapping[tuple[str, str], str],
                  graph: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    """Allow-list entries that no longer match a violation of ``graph``."""
    current = set(violations(graph))
    return [edge for edge in allowed if edge not in current]


def test_a_stale_allow_list_entry_is_flagged(tmp_path: Path) -> None:
    """The stale-entry check itself, now that ``ALLOWED`` is empty: an entry whose import
    is gone is reported, one that still matches a violation is not, and an empty list
    never is."""
    root = tmp_path / "gitnetdiag"
    for package in ("", "analysis", "probe"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / "analysis" / "tcp.py").write_text("")
    (root / "probe" / "h2native.py").write_text("from gitnetdiag.analysis.tcp import analyze\n")
    (root / "probe" / "fixed.py").write_text("from gitnetdiag.analysis.tcp import MAX_RTT_S\n")
    live = ("gitnetdiag.probe.h2native", "gitnetdiag.analysis.tcp")
    gone = ("gitnetdiag.probe.fixed", "gitnetdiag.analysis.tcp")
    graph = import_graph(root)
    assert stale_entries({live: "still there", gone: "removed"}, graph) == [gone]
    assert stale_entries({}, graph) == []


@pytest.mark.parametrize(
    ("path", "source", "edge"),
    [
        ("analysis/bad.py", "from gitnetdiag.report import terminal\n",
         ("gitnetdiag.analysis.bad", "gitnetdiag.report.terminal")),
        ("capture/bad.py", "def f():\n    from gitnetdiag.analysis import tcp\n",
         ("gitnetdiag.capture.bad", "gitnetdiag.analysis.tcp")),
        ("diagnosis/bad.py", "import subprocess\n", ("gitnetdiag.diagnosis.bad", "subprocess")),
        ("host/bad.py", "from ..diagnosis.culprits import X\n",
         ("gitnetdiag.host.bad", "gitnetdiag.diagnosis.culprits")),
        ("probe/bad.py", "from gitnetdiag.analysis.tcp import analyze\n",
         ("gitnetdiag.probe.bad", "gitnetdiag.analysis.tcp")),
        ("probe/bad.py", "from gitnetdiag.commands import probe\n",
         ("gitnetdiag.probe.bad", "gitnetdiag.commands.probe")),
        ("pipeline/_run.py", "import gitnetdiag.probe.runner\n",
         ("gitnetdiag.pipeline._run", "gitnetdiag.probe.runner")),
        ("errors.py", "from gitnetdiag.proc import run\n",
         ("gitnetdiag.errors", "gitnetdiag.proc")),
        ("commands/bad.py", "from gitnetdiag.pipeline._run import diagnose_run\n",
         ("gitnetdiag.commands.bad", "gitnetdiag.pipeline._run")),
        ("report/bad.py", "from gitnetdiag.diagnosis.culprits._common import X\n",
         ("gitnetdiag.report.bad", "gitnetdiag.diagnosis.culprits._common")),
        ("model/bad.py", "from gitnetdiag.lab.manager import up\n",
         ("gitnetdiag.model.bad", "gitnetdiag.lab.manager")),
        ("model/bad.py", "import subprocess\n", ("gitnetdiag.model.bad", "subprocess")),
    ],
)
def test_a_crafted_upward_import_is_flagged(tmp_path: Path, path: str, source: str,
                                            edge: tuple[str, str]) -> None:
    """The checker itself: a lower layer importing a higher one fails, lazy or relative."""
    root = tmp_path / "gitnetdiag"
    for package in ("", "analysis", "capture", "diagnosis", "diagnosis/culprits", "host",
                    "lab", "model", "pipeline", "probe", "report", "commands"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    for name in ("report/terminal.py", "analysis/tcp.py", "diagnosis/culprits/_common.py",
                 "commands/probe.py", "probe/runner.py", "proc.py", "pipeline/_run.py",
                 "lab/manager.py"):
        (root / name).write_text("")
    (root / path).write_text(source)
    assert edge in violations(import_graph(root))


def test_a_downward_import_passes(tmp_path: Path) -> None:
    """Down the layers, and data types from the pure side into a probe."""
    root = tmp_path / "gitnetdiag"
    for package in ("analysis", "capture", "probe"):
        (root / package).mkdir(parents=True)
    for name in ("__init__.py", "analysis/__init__.py", "capture/__init__.py", "errors.py",
                 "capture/flows.py", "probe/__init__.py", "proc.py"):
        (root / name).write_text("")
    (root / "analysis" / "tcp.py").write_text(
        "from gitnetdiag.capture.flows import Connection\nfrom ..errors import InputError\n"
    )
    (root / "probe" / "run.py").write_text(
        "from gitnetdiag.analysis.tcp import Thresholds, MAX_RTT_S\nfrom gitnetdiag import proc\n"
        "from gitnetdiag.model.lab.state import load_state\n"
    )
    for package in ("model", "model/lab", "pipeline", "watch", "commands"):
        (root / package).mkdir()
        (root / package / "__init__.py").write_text("")
    (root / "model" / "lab" / "state.py").write_text("from gitnetdiag.errors import LabError\n")
    (root / "pipeline" / "_run.py").write_text("from gitnetdiag.analysis.tcp import analyze\n")
    (root / "pipeline" / "_capture.py").write_text("from gitnetdiag.pipeline._run import x\n")
    (root / "watch" / "cycle.py").write_text("from gitnetdiag.pipeline import diagnose_run\n")
    (root / "commands" / "_app.py").write_text("from gitnetdiag.pipeline import diagnose_run\n")
    (root / "cli.py").write_text("from gitnetdiag.commands._app import run\n")
    assert violations(import_graph(root)) == []


def test_no_module_imports_itself_round_a_circle() -> None:
    """Inside a layer too (the capture reader and its forked child were one such circle)."""
    assert import_cycles(import_graph(PACKAGE)) == []


def test_a_crafted_circle_is_found(tmp_path: Path) -> None:
    root = tmp_path / "gitnetdiag"
    (root / "capture").mkdir(parents=True)
    for name in ("__init__.py", "capture/__init__.py"):
        (root / name).write_text("")
    (root / "capture" / "reader.py").write_text(
        "def chunks():\n    from gitnetdiag.capture.forked import forked_chunks\n"
    )
    (root / "capture" / "forked.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from gitnetdiag.capture.reader import CaptureReader\n"
    )
    assert import_cycles(import_graph(root)) == [
        ["gitnetdiag.capture.forked", "gitnetdiag.capture.reader"]
    ]
