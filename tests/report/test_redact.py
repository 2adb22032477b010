"""Secrets never reach a report."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import replace
from urllib.parse import quote, quote_plus

import pytest

from gitnetdiag import redaction
from gitnetdiag.diagnosis import diagnose
from gitnetdiag.diagnosis.observations import PushObservation
from gitnetdiag.errors import AnsweredError, UsageError
from gitnetdiag.redaction import documentation_urls, redact_error
from gitnetdiag.report import RENDERERS, redact_text, redact_url
from tests.diagnosis import examples


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
        ("http://u:pw@[::1/x.git?t=1", "http://***@[::1/x.git?t=***"),
        ("https://h/r.git#frag", "https://h/r.git#***"),
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
    leaky = PushObservation(
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


# The rules of gitnetdiag.redaction, one by one.

SECRET = "tok3n/with@odd&chars"


def test_query_values_in_request_lines_are_masked_but_git_service_stays() -> None:
    line = "=> Send: GET /r.git/info/refs?service=git-receive-pack&private_token=abc HTTP/1.1"
    assert redaction.redact_text(line) == (
        "=> Send: GET /r.git/info/refs?service=git-receive-pack&private_token=*** HTTP/1.1"
    )
    assert redaction.redact_text("POST /up?access_token=xyz") == "POST /up?access_token=***"
    assert redaction.redact_text("see /docs?intro now") == "see /docs?*** now"


@pytest.mark.parametrize(
    "header", ["Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "authorization"]
)
def test_credential_headers_lose_their_value(header: str) -> None:
    assert redaction.redact_text(f"< {header}: sess=a1b2; x=y\n") == f"< {header}: ***\n"


def test_a_header_inside_a_json_string_keeps_the_json_valid() -> None:
    record = json.dumps({"argv": ["git", "-c", "http.extraHeader=Cookie: id=abc", "push"],
                         "msg": "Authorization: Bearer qwertyuiop"})
    out = json.loads(redaction.redact_text(record))
    assert out == {"argv": ["git", "-c", "http.extraHeader=***", "push"],
                   "msg": "Authorization: ***"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("git -c http.extraHeader=PRIVATE-TOKEN: abc", "git -c http.extraHeader=***"),
        ("http.https://h/.extraheader Authorization: Bearer abc",
         "http.https://h/.extraheader ***"),
        ("GIT_CONFIG_PARAMETERS='http.extraHeader'='X-Api-Key: abc' 'core.x'='1'",
         "GIT_CONFIG_PARAMETERS='http.extraHeader'='***' 'core.x'='1'"),
    ],
)
def test_extra_header_values_are_masked(text: str, expected: str) -> None:
    assert redaction.redact_text(text) == expected


@pytest.mark.parametrize(
    "form",
    [
        SECRET,
        quote(SECRET, safe=""),                 # %40-encoded, as in a URL
        quote(SECRET, safe="").lower(),         # lower-case hex escapes
        quote_plus(SECRET),                     # form-encoded
        json.dumps(SECRET)[1:-1].replace("/", "\\/"),  # JSON with escaped slashes
        SECRET.upper(),
    ],
)
def test_a_known_secret_goes_in_every_encoding(form: str) -> None:
    text = f"prefix {form} suffix"
    assert redaction.redact_text(text, {SECRET}) == "prefix *** suffix"


def test_a_known_secret_goes_inside_json_escapes() -> None:
    secret = 'pa"ss\\word'
    text = json.dumps({"line": f"fatal: {secret} rejected"})
    out = redaction.redact_text(text, {secret})
    assert json.loads(out) == {"line": "fatal: *** rejected"}


def test_short_known_secrets_are_left_to_the_context_rules() -> None:
    assert redaction.redact_text("the pw is pw", {"pw"}) == "the pw is pw"
    assert redaction.redact_text("https://u:pw@h/r", {"pw"}) == "https://***@h/r"


def test_secrets_from_url() -> None:
    found = redaction.secrets_from_url("https://alice:p%40ss-word@h/r.git?private_token=T0KEN1&x=")
    assert {"p%40ss-word", "p@ss-word", "T0KEN1"} <= found
    assert base64.b64encode(b"alice:p@ss-word").decode() in found
    assert "alice" not in found
    assert redaction.secrets_from_url("https://ghp_abcdef123456@h/r") == {"ghp_abcdef123456"}
    assert redaction.secrets_from_url("ssh://git@h/r") == set()
    assert redaction.secrets_from_url("https://h/r?service=git-receive-pack") == set()
    assert redaction.secrets_from_url("git@h:r.git") == set()
    assert "pw-long" in redaction.secrets_from_url("http://u:pw-long@[::1/x.git")


def test_secrets_from_argv() -> None:
    argv = ["gitnetdiag", "probe", "--http=https://u:pass-one@h/r", "--ssh",
            "ssh://git@h/r", "https://h/r?private_token=tok-two", "--size", "1MiB"]
    assert {"pass-one", "tok-two"} <= redaction.secrets_from_argv(argv)
    assert "git" not in redaction.secrets_from_argv(argv)


def test_secrets_from_header() -> None:
    assert redaction.secrets_from_header("Authorization: Bearer abc.def") == {
        "Bearer abc.def", "abc.def"}
    basic = base64.b64encode(b"bob:hunter22").decode()
    assert {basic, "bob:hunter22", "hunter22"} <= redaction.secrets_from_header(
        f"Authorization: Basic {basic}")
    assert redaction.secrets_from_header("PRIVATE-TOKEN: glpat-123") == {"glpat-123"}


def test_redact_bytes_keeps_the_length() -> None:
    data = b"\x00\x01GET /r?private_token=SECRET2/info HTTP/1.1\xff"
    out = redaction.redact_bytes(data, {"SECRET2"})
    assert len(out) == len(data) and b"SECRET2" not in out
    assert out.count(b"*******") == 1


def test_redact_error_and_tree() -> None:
    error = UsageError("cannot reach https://u:longpassword@h/r", hint="retry longpassword")
    redaction.redact_error(error, {"longpassword"})
    assert error.one_line() == "usage: cannot reach https://***@h/r (hint: retry ***)"
    assert str(error) == error.message
    tree = {"a": ("x longpassword", ["https://h/r?k=v"]), "n": 3}
    assert redaction.redact_tree(tree, {"longpassword"}) == {
        "a": ("x ***", ["https://h/r?k=***"]), "n": 3}


def test_redaction_is_idempotent() -> None:
    text = ("GET /r?t=abc https://u:p@h/x?y=z Authorization: Basic abcdefghij "
            "http.extraHeader=X: y SECRET")
    once = redaction.redact_text(text, {SECRET})
    assert redaction.redact_text(once, {SECRET}) == once


@pytest.mark.parametrize(("text", "expected"), [
    ("--full over plain HTTP (http://u:pw@h:1/r.git?private_token=TOK) would write",
     "--full over plain HTTP (http://***@h:1/r.git?private_token=***) would write"),
    ("see https://h/r.git?t=TOK.", "see https://h/r.git?t=***."),
    ("at https://h/wiki/Foo_(bar), then", "at https://h/wiki/Foo_(bar), then"),
])
def test_punctuation_after_a_url_is_kept_and_a_second_pass_changes_nothing(
    text: str, expected: str
) -> None:
    """The CLI redacts error lines that were redacted already: the ``)`` closing a
    URL in prose must survive both passes."""
    once = redaction.redact_text(text)
    assert once == expected
    assert redaction.redact_text(once) == once


@pytest.mark.parametrize(
    "piece", ["ab/cd+ef/http.gh/", "ab+cd.ef-", "http.", ".extraheader", "a=b&", "%41"]
)
def test_redaction_stays_linear_on_long_tokens(piece: str) -> None:
    """Long tokens without spaces (base64, dotted names, slashes): no rule may rescan
    the token from every possible start (each of these took 5-20 s when one did)."""
    blob = piece * (300000 // len(piece)) + "/x?k=v"
    started = time.monotonic()
    out = redaction.redact_text(blob, {"longsecret"})
    assert time.monotonic() - started < 2.0
    assert out.endswith("/x?k=***")


def test_a_data_files_documentation_link_keeps_its_fragment() -> None:
    """A fix's link to a section of its product's documentation (edge_backends.toml's
    HAProxy source) stays whole; any other URL's fragment, the same page's with another
    fragment included, is masked."""
    cited = "https://docs.haproxy.org/2.6/configuration.html#1.3.1"
    assert cited in documentation_urls()
    assert redact_text(f"health checks ({cited}).") == f"health checks ({cited})."
    assert redact_url("https://docs.haproxy.org/2.6/configuration.html#glpat-abcdef") == \
        "https://docs.haproxy.org/2.6/configuration.html#***"
    assert redact_url("https://h/r.git#1.3.1") == "https://h/r.git#***"


def test_an_error_pages_excerpt_is_bounded_stripped_and_redacted() -> None:
    """A native request's error answer keeps its page's text (tags stripped, one line, at
    most 512 characters), redacted as its message is."""
    body = (b"<html><body><h1>503 Service Unavailable</h1>\nNo server is available to "
            b"handle this request.\n</body></html>\n")
    assert AnsweredError("GET info/refs answered HTTP 503", body=body).page == \
        "503 Service Unavailable No server is available to handle this request."
    long = AnsweredError("x", body=b"<p>" + b"a b " * 1000 + b"</p>")
    assert len(long.page) == 512 and "<" not in long.page
    # An address inside a tag goes with the tag.
    assert AnsweredError("x", body=b"<a href='https://h/r.git?t=abc'>retry</a>").page == "retry"
    plain = AnsweredError("x", body=b"see https://u:pw@h/r.git?token=abc and tok-secret")
    redact_error(plain, {"tok-secret"})
    assert plain.page == "see https://***@h/r.git?token=*** and ***", plain.page
