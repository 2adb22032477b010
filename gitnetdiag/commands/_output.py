"""Files the commands write on request (``--json FILE``, ``--out FILE``).

One rule for every command: missing parent directories are created (as
``probe --out`` always did for its run directory); anything else that stops
the write is one usage error naming the path.
"""

from __future__ import annotations

from pathlib import Path

from gitnetdiag.errors import UsageError


def write_output(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, creating missing parent directories."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise UsageError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="choose a writable file path (missing directories are created)",
            reference="cannot-write",
        ) from exc
