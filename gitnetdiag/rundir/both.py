"""The two run directories of a ``--direction both`` run: RUN (the pushes,
``manifest.json``) and ``RUN-fetch`` beside it (the clones, ``fetch.json``), written by
``probe|diagnose --direction both`` and by ``watch``'s ``direction: both`` cycles alike."""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.rundir.files import FETCH_FILE, MANIFEST_NAME
from gitnetdiag.rundir.manifest import load_run


def fetch_run_dir(push_run_dir: Path) -> Path:
    """Where ``--direction both`` writes its fetches: beside the push run directory."""
    return push_run_dir.with_name(push_run_dir.name + "-fetch")


BOTH_OPTION = {"direction": "both"}
"""What a ``--direction both`` run records among its pushes' options (``manifest.json``):
the mark that its ``RUN-fetch`` belongs to it (:func:`fetch_half_of`)."""


def is_both_run(run_dir: Path) -> bool:
    """RUN's manifest records the run as ``--direction both``: its clones belong beside it."""
    return (run_dir / MANIFEST_NAME).is_file() and load_run(run_dir).options.get(
        "direction") == BOTH_OPTION["direction"]


def missing_half(run_dir: Path) -> str | None:
    """What is wrong with the clones' half of a ``--direction both`` run, one clause
    (``RUN-fetch`` gone, or without its ``fetch.json``); None when the half is there or
    ``run_dir`` is not a both run. A half whose ``fetch.json`` cannot be read is said by
    its reader."""
    if not is_both_run(run_dir):
        return None
    fetch = fetch_run_dir(run_dir)
    if not fetch.is_dir():
        return f"its clones' run directory {fetch} does not exist"
    if not (fetch / FETCH_FILE).is_file():
        return f"its clones' run directory {fetch} has no {FETCH_FILE}"
    return None


def fetch_half_of(run_dir: Path) -> Path | None:
    """The clones' run directory of a ``--direction both`` run (``RUN-fetch``, when RUN's
    manifest records the run as ``both`` and ``RUN-fetch`` holds a ``fetch.json``); None
    for any other run directory."""
    fetch = fetch_run_dir(run_dir)
    if not (run_dir / MANIFEST_NAME).is_file() or not (fetch / FETCH_FILE).is_file():
        return None
    if load_run(run_dir).options.get("direction") != BOTH_OPTION["direction"]:
        return None
    return fetch


def unreadable_half(fetch_dir: Path, why: str) -> str:
    """What is wrong with a both run's clones' half whose ``fetch.json`` its reader refused
    (``why``), one clause: ``report`` and ``analyze --diagnose`` say it alike."""
    return f"{fetch_dir / FETCH_FILE} cannot be read ({why})"
