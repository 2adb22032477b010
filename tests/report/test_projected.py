"""A bounded push's duration is a projection, and every renderer says so."""

from __future__ import annotations

from dataclasses import replace

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.report.markdown import render_markdown
from gitnetdiag.report.terminal import render_terminal
from gitnetdiag.report.units import PROJECTED_NOTE
from tests.diagnosis import examples


def _with_bounded_h2() -> object:
    obs = examples.slow_h2_edge()
    h2 = obs.protocols["h2"]
    bounded = tuple(replace(p, projected=p.ok) for p in h2.pushes)
    return replace(obs, protocols={**obs.protocols, "h2": replace(h2, pushes=bounded)})


def test_projected_duration_is_marked_in_terminal_and_markdown() -> None:
    """``~`` before the HTTP/2 duration and the footnote; HTTP/1.1's wall time unmarked."""
    d = diagnose(_with_bounded_h2())  # type: ignore[arg-type]
    (h2,) = [s for s in d.protocols if s.protocol == "h2"]
    (h1,) = [s for s in d.protocols if s.protocol == "h1"]
    assert h2.projected_pushes == h2.pushes_ok == 2
    assert h1.projected_pushes == 0
    text = render_terminal(d, width=120, color=False)
    h2_row = next(line for line in text.splitlines() if line.startswith("HTTP/2 "))
    h1_row = next(line for line in text.splitlines() if line.startswith("HTTP/1.1 "))
    assert " ~" in h2_row and "~" not in h1_row
    assert PROJECTED_NOTE in " ".join(text.split())
    md = render_markdown(d)
    assert "| HTTP/2 |" in md and "| ~" in md and PROJECTED_NOTE in md


def test_no_note_without_bounded_pushes() -> None:
    d = diagnose(examples.slow_h2_edge())
    assert all(s.projected_pushes == 0 for s in d.protocols)
    assert PROJECTED_NOTE not in " ".join(render_terminal(d, width=120, color=False).split())
    assert "~" not in render_markdown(d).split("## Pushes per protocol")[1].split("## Culprits")[0]
