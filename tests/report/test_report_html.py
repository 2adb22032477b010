"""The HTML report is self-contained: embedded PNG plots and the culprit ids."""

from __future__ import annotations

import base64
import html
import re
import subprocess
import sys

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.report import render_html
from tests.diagnosis import examples

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_html_embeds_png_plots_and_culprit_ids() -> None:
    d = diagnose(examples.slow_h2_edge())
    page = render_html(d)
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    # flight vs window, HTTP/2 credit, rate per protocol
    assert len(images) == 3
    assert all(base64.b64decode(img).startswith(PNG_MAGIC) for img in images)
    for finding in d.findings:
        assert f'id="{finding.id}"' in page
    assert "http://" not in page.replace("https://***", "")  # no external resources
    assert "<script" not in page


def test_html_without_series_has_only_the_rate_plot() -> None:
    page = render_html(diagnose(examples.healthy()))
    assert page.count("data:image/png;base64,") == 1
    assert "No culprit passed the threshold." in page


def test_other_renderers_do_not_import_matplotlib() -> None:
    code = (
        "import sys\n"
        "from gitnetdiag.diagnosis import diagnose\n"
        "from tests.diagnosis import examples\n"
        "from gitnetdiag.report import render_json, render_markdown, render_terminal\n"
        "d = diagnose(examples.slow_h2_edge())\n"
        "render_json(d); render_markdown(d); render_terminal(d)\n"
        "print('matplotlib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_settings_in_the_fix_and_evidence_are_code_not_backticks() -> None:
    """The findings write settings as Markdown code spans: the page shows them as code, and
    no backtick of a code span is left in the text (issue 45 item 3)."""
    d = diagnose(examples.slow_h2_edge())
    fixes = [f.fix for f in d.findings if "`" in f.fix]
    assert fixes, [f.fix for f in d.findings]
    page = render_html(d)
    spans = re.findall(r"`([^`\n]+)`", fixes[0])
    assert all(f"<code>{html.escape(span)}</code>" in page for span in spans), spans
    body = re.sub(r"<[^>]+>", "", page.split("<body>", 1)[1])
    assert not re.search(r"`[^`\n]+`", body), re.findall(r"`[^`\n]+`", body)[:3]


def test_the_clones_figures_are_drawn_once_for_the_same_data(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A both run renders its clones' page twice (their own, and in the joined one)."""
    from gitnetdiag.report import html as page
    from gitnetdiag.report.plots import Figure

    drawn: list[object] = []

    def window(done, windows):  # type: ignore[no-untyped-def]
        drawn.append(done)
        return Figure(title="w", png=b"w")

    monkeypatch.setattr(page, "window_figure", window)
    monkeypatch.setattr(page, "pacing_figure", lambda pacing: None)
    page._drawn.cache_clear()
    first = page._clone_figures(("a",), (None,), ())  # type: ignore[arg-type]
    again = page._clone_figures(("a",), (None,), ())  # type: ignore[arg-type]
    other = page._clone_figures(("b",), (None,), ())  # type: ignore[arg-type]
    assert first == again == other == [Figure(title="w", png=b"w")]
    assert drawn == [("a",), ("b",)]
    # data that cannot be a key (a list inside) is drawn each time, not refused
    page._clone_figures((["c"],), (None,), ())  # type: ignore[arg-type]
    page._clone_figures((["c"],), (None,), ())  # type: ignore[arg-type]
    assert drawn[2:] == [(["c"],), (["c"],)]
    page._drawn.cache_clear()
