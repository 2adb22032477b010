"""The HTML report is self-contained: embedded PNG plots and the culprit ids."""

from __future__ import annotations

import base64
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
