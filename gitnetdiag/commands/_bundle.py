"""``--bundle FILE``: the one attachment for a ticket, from a diagnosed run directory."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from gitnetdiag.errors import UsageError
from gitnetdiag.rundir.bundle import write_bundle
from gitnetdiag.tools.editcap import headers_only

if TYPE_CHECKING:  # the diagnosis (numpy) loads when one is bundled, not at start-up
    from gitnetdiag.diagnosis.model import Diagnosis

BUNDLED_FORMATS = ("md", "html", "json")


def _shown(size_bytes: int) -> str:
    return (f"{size_bytes / 2**20:.1f} MB" if size_bytes >= 100 * 1024
            else f"{max(1, round(size_bytes / 1024))} kB")


def check_new_bundle(out: Path) -> None:
    """Before any work: the bundle goes to a new file, in a directory that exists."""
    if out.exists() or out.is_symlink():
        raise UsageError(f"{out} exists: the bundle is written to a new file",
                         reference="bundle-exists", hint="remove it or give another name")
    if not out.parent.is_dir():
        raise UsageError(f"cannot write the bundle {out}: no directory {out.parent}",
                         reference="bundle-dir", hint="create it or give another path")


def bundle_run(run_dir: Path, diagnosis: Diagnosis, out: Path, *, full: bool,
               fetch: Diagnosis | None = None) -> None:
    """Write the bundle of ``run_dir`` with ``diagnosis`` rendered in every file format
    (``fetch``: a ``both`` run's clones, rendered into its ``RUN-fetch`` part), then say
    the one line to send."""
    from gitnetdiag.report import RENDERERS

    reports = {fmt: RENDERERS[fmt](diagnosis) for fmt in BUNDLED_FORMATS}
    fetch_reports = ({fmt: RENDERERS[fmt](fetch) for fmt in BUNDLED_FORMATS}
                     if fetch is not None else None)
    bundle = write_bundle(run_dir, out, reports=reports, fetch_reports=fetch_reports,
                          full=full, cut=headers_only)
    console = Console(stderr=True, highlight=False)
    if bundle.left_out:
        console.print(f"bundle: {len(bundle.left_out)} file(s) left out, listed in its "
                      "index.md", markup=False, soft_wrap=True)
    console.print(f"attach {bundle.path} ({_shown(bundle.size_bytes)})", markup=False,
                  soft_wrap=True)
