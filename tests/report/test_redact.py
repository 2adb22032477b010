"""Secrets never reach a report."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitnetdiag.diagnosis import diagnose, examples
from gitnetdiag.diagnosis.observations import PushResult
from gitnetdiag.report import RENDERERS, redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://alice:s3cret@git.example.test/r.git", "https://***@git.example.test/r.git"),
        ("https://oauth2:glpat-abcdef@host/r.git", "https://***@host/r.git"),
        ("https://ghp_0123456789abcdefghij@github.test/a.git", "https://***@github.test/a.git"),
        ("ssh://git@host:22/r.git", "ssh://git@host:22/r.git"),
        (
            "https://host/r.git?private_token=abc&ref=main",
            "https://host/r.git?private_token=***&ref=***",
        ),
        ("https://host/r?X-Amz-Signature=deadbeef&a=1", "https://host/r?X-Amz-Signature=***&a=***"),
        ("https://host/r.git", "https://host/r.git"),
        ("git@host:team/r.git", "git@host:team/r.git"),
        ("not a url", "not a url"),
    ],
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_redact_text_finds_urls_and_headers() -> None:
    text = (
        "fatal: unable to access 'https://bob:pw@h/x.git/': 403\n"
        "> Authorization: Basic Ym9iOnB3\n"
        "curl: bearer abcdefghijklmnop"
    )
    out = redact_text(text)
    assert "pw@" not in out and "bob" not in out
    assert "Ym9iOnB3" not in out
    assert "abcdefghijklmnop" not in out
    assert "https://***@h/x.git/" in out


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_no_renderer_writes_a_secret(fmt: str) -> None:
    """Target URL and an error message both carry secrets; no format shows them."""
    obs = examples.slow_h2_edge()
    h1 = obs.protocols["h1"]
    leaky = PushResult(
        duration_s=2.0,
        bytes=10,
        ok=False,
        error_kind="auth",
        error_message="fatal: Authentication failed for 'https://carol:hunter2@git.example.test/'",
    )
    obs = replace(obs, protocols={**obs.protocols, "h1": replace(h1, pushes=(*h1.pushes, leaky))})
    text = RENDERERS[fmt](diagnose(obs))
    for secret in ("s3cret", "abc123", "hunter2", "carol", "alice"):
        assert secret not in text, (fmt, secret)
    assert "git.example.test" in text
