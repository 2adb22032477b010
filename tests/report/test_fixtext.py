"""A fix reads as the answering product's lines first, then the others as a list (issue 45
item 3: one paragraph of nine lines naming five products)."""

from __future__ import annotations

from gitnetdiag.diagnosis import diagnose
from gitnetdiag.report import render_html, render_markdown
from gitnetdiag.report.fixtext import fix_layout, fix_lines
from tests.diagnosis import examples

FIX = ("Raise the window. On the server that answered, HAProxy: `tune.h2.initial-window-size` "
       "1048576 in `global` (2.8+: `tune.h2.fe.initial-window-size` 1048576). Other servers: "
       "nginx: `http2_body_preread_size` 1048576; Apache mod_http2: `H2WindowSize` 1048576; "
       "h2o: `http2-input-window-size` 1048576 (h2o 2.3+; 2.2 has no such setting). Client "
       "workaround meanwhile: `git config http.version HTTP/1.1`.")


def test_the_answering_products_lines_lead_and_the_others_are_items() -> None:
    layout = fix_layout(FIX)
    assert layout.lead.endswith("(2.8+: `tune.h2.fe.initial-window-size` 1048576).")
    assert "HAProxy" in layout.lead and "nginx" not in layout.lead
    assert layout.heading == "Other servers"
    # a semicolon inside parentheses does not split h2o's item
    assert layout.others == ("nginx: `http2_body_preread_size` 1048576",
                             "Apache mod_http2: `H2WindowSize` 1048576",
                             "h2o: `http2-input-window-size` 1048576 (h2o 2.3+; 2.2 has no "
                             "such setting)")
    assert layout.tail == "Client workaround meanwhile: `git config http.version HTTP/1.1`."
    assert fix_lines(FIX, first="fix: ")[1:3] == ["Other servers:",
                                                 "- nginx: `http2_body_preread_size` 1048576"]


def test_a_fix_naming_no_other_product_stays_one_paragraph() -> None:
    plain = "Raise `net.ipv4.tcp_rmem` on the receiver; keep `tcp_window_scaling` on."
    assert fix_layout(plain).lead == plain and fix_layout(plain).others == ()


def test_the_reports_list_the_other_products() -> None:
    d = diagnose(examples.slow_h2_edge())
    finding = next(f for f in d.findings if fix_layout(f.fix).others)
    layout = fix_layout(finding.fix)
    markdown = render_markdown(d)
    assert f"**Fix:** {layout.lead}" in markdown
    assert all(f"\n- {item}\n" in markdown for item in layout.others)
    page = render_html(d)
    assert '<ul class="fix">' in page and page.count("<li>") >= len(layout.others)
