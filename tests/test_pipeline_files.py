"""The files the pipeline saves into a run directory it may have received."""

from __future__ import annotations

import shutil
from pathlib import Path

from gitnetdiag.pipeline import OBSERVATIONS_FILE, REPORT_FILES, diagnose_run, write_reports

REPO = Path(__file__).resolve().parents[1]


def test_planted_symlinks_are_replaced_not_followed(tmp_path: Path) -> None:
    """A received run directory whose observations and report names are symlinks
    to the user's files: those files stay as they were; the run gets its own."""
    run = tmp_path / "run"
    shutil.copytree(REPO / "captures" / "healthy", run)
    victims = {}
    for name in (OBSERVATIONS_FILE, *REPORT_FILES.values()):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("the user's own file\n")
        (run / name).unlink(missing_ok=True)
        (run / name).symlink_to(victim)
        victims[name] = victim
    diagnosis, _warnings = diagnose_run(run, save_to=run)
    written = write_reports(diagnosis, run)
    assert set(written) == set(REPORT_FILES)
    for name, victim in victims.items():
        assert victim.read_text() == "the user's own file\n"
        assert not (run / name).is_symlink() and (run / name).stat().st_size > 100
