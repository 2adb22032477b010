"""The failure-signature catalogue: the shipped file's entries, the loader's checks (one
clear error naming the entry), matching git's real stderr, and the sentence of what was
seen."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from gitnetdiag.diagnosis import signatures
from gitnetdiag.diagnosis.culprits import CULPRITS
from gitnetdiag.diagnosis.signatures import (
    BASE,
    KNOWN_CULPRITS,
    NO_ENTRY,
    SignatureCatalogueError,
    TcpEnding,
    describe,
    for_h2_code,
    for_message,
    for_status,
    for_tcp_ending,
    load,
    parse,
)
from gitnetdiag.errors import GitnetdiagError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = resources.files("gitnetdiag.data").joinpath(signatures.DATA_FILE).read_text()

# git's stderr as the lab and the field saw it (LAB-NOTES "How git's HTTPS pushes fail",
# tests/probe/test_failure_classes.py, the issue threads cited in the catalogue).
WROTE = "Writing objects:  33% (1/3)\rWriting objects: 100% (3/3), 3.00 MiB | 9 MiB/s, done.\n"
BODY_LIMIT = (WROTE + "error: RPC failed; HTTP 413 curl 22 The requested URL returned error: "
              "413\nsend-pack: unexpected disconnect while reading sideband packet\n"
              "fatal: the remote end hung up unexpectedly\nEverything up-to-date\n")
EDGE_IDLE = (WROTE + "error: RPC failed; curl 18 transfer closed with outstanding read data "
             "remaining\nsend-pack: unexpected disconnect while reading sideband packet\n"
             "fatal: the remote end hung up unexpectedly\n")
STREAMED_H2 = WROTE + "error: RPC failed; curl 92 Stream error in the HTTP/2 framing layer\n"
STREAMED_H1 = (WROTE + "error: RPC failed; HTTP 411 curl 22 The requested URL returned error: "
               "411\nsend-pack: unexpected disconnect while reading sideband packet\n")
POOL_308 = ("error: RPC failed; HTTP 308 curl 22 The requested URL returned error: 308\n"
            "send-pack: unexpected disconnect while reading sideband packet\n")
MAXSTARTUPS = ("kex_exchange_identification: read: Connection reset by peer\n"
               "Connection reset by 198.18.2.2 port 22\n"
               "fatal: Could not read from remote repository.\n")
REFUSED_SSH = ("ssh: connect to host 198.18.2.2 port 22: Connection refused\n"
               "fatal: Could not read from remote repository.\n")
MIGRATE = ("remote: error: object directory /srv/r.git/objects/3f does not exist\n"
           " ! [remote rejected] gitnetdiag/probe-x -> gitnetdiag/probe-x (unable to migrate "
           "objects to permanent storage)\nerror: failed to push some refs to 'https://h/r.git'\n")


@pytest.mark.parametrize(("stderr", "ids"), [
    (BODY_LIMIT, ("http-413",)),
    (EDGE_IDLE, ("curl-18-partial-file",)),
    (STREAMED_H2, ("curl-92-h2-stream-error",)),
    (STREAMED_H1, ("http-411",)),
    (POOL_308, ("http-redirect",)),
    ("error: RPC failed; result=22, HTTP code = 413\nfatal: The remote end hung up "
     "unexpectedly\n", ("http-413",)),
    ("fatal: unable to access 'https://h/r.git/': The requested URL returned error: 503\n",
     ("http-503",)),
    ("error: RPC failed; curl 92 HTTP/2 stream 5 was not closed cleanly: CANCEL (err 8)\n",
     ("h2-cancel", "curl-92-h2-stream-error")),
    (MAXSTARTUPS, ("ssh-kex-identification-closed", "connection-reset")),
    (REFUSED_SSH, ("connection-refused",)),
    (MIGRATE, ("receive-pack-migrate-failed",)),
    ("send-pack: unexpected disconnect while reading sideband packet\n",
     ("sideband-unexpected-disconnect",)),
    ("fatal: the remote end hung up unexpectedly\n", ("remote-end-hung-up",)),
    ("error: RPC failed; curl 56 GnuTLS recv error (-110): The TLS connection was "
     "non-properly terminated.\n", ("tls-read-error",)),
    ("fatal: something new\n", ()),
])
def test_real_git_stderr_finds_its_entries(stderr: str, ids: tuple[str, ...]) -> None:
    assert tuple(s.id for s in for_message(stderr)) == ids


def test_lab_stderr_points_to_the_lab_faults_culprit() -> None:
    """The causes of what each lab fault makes git print name that fault's culprit first."""
    assert for_message(BODY_LIMIT)[0].culprits == ("request-body-limit",)
    assert for_message(EDGE_IDLE)[0].culprits[0] == "edge-idle-timeout"
    assert for_message(STREAMED_H2)[0].culprits[0] == "streamed-body-refused"
    assert for_message(POOL_308)[0].culprits[0] == "edge-backend-errors"
    assert for_message(MAXSTARTUPS)[0].culprits[0] == "ssh-maxstartups"
    assert for_message(REFUSED_SSH)[0].culprits[0] == "firewall-reset"
    assert for_message(MIGRATE)[0].culprits == ()  # the server's storage: no network culprit


def test_lookups_by_status_code_and_tcp_ending() -> None:
    assert for_status(413) is not None and for_status(413).id == "http-413"
    assert for_status(308) is not None and for_status(308).id == "http-redirect"
    assert for_status(200) is None
    cancel = for_h2_code(8)
    assert cancel is not None and cancel.id == "h2-cancel"
    assert for_h2_code("CANCEL") is cancel and for_h2_code("cancel") is cancel
    assert for_h2_code("0x8") is cancel
    assert for_h2_code(99) is None and for_h2_code("NOT_A_CODE") is None
    assert [s.id for s in for_tcp_ending("server", 30.0, "fin")] == [
        "tcp-server-close-after-silence"]
    assert [s.id for s in for_tcp_ending("server", 0.99, "fin")] == [
        "tcp-server-close-prompt", "tcp-server-close-mid-transfer"]
    assert [s.id for s in for_tcp_ending("server", 0.99, "rst")] == ["tcp-server-close-prompt"]
    assert [s.id for s in for_tcp_ending("server", 1.0, "rst")] == [
        "tcp-server-reset-after-silence"]
    assert [s.id for s in for_tcp_ending("server", 30.0)] == [
        "tcp-server-close-after-silence", "tcp-server-reset-after-silence"]
    assert [s.id for s in for_tcp_ending("client", None, "rst")] == ["tcp-client-close"]


def test_describe_says_what_was_seen_and_what_it_may_be() -> None:
    seen = describe(operation="HTTP/2 push", git_line=STREAMED_H2.splitlines()[-1],
                    status=411, request="POST git-receive-pack")
    assert seen.ids == ("http-411", "curl-92-h2-stream-error")
    assert seen.culprits[0] == "streamed-body-refused"
    assert seen.seen == ("HTTP/2 push: POST git-receive-pack answered 411; git said: error: "
                         "RPC failed; curl 92 Stream error in the HTTP/2 framing layer")
    twice = describe(operation="HTTP/2 push", status=502, h2_code=8, direction="upload",
                     git_line="error: RPC failed; HTTP 502 curl 22 The requested URL returned "
                     "error: 502")
    assert twice.ids == ("http-502", "h2-cancel")  # each entry once, where it first came
    # a push's 502 may also be a pack the client's stack spoiled (listed last, the rarest)
    assert twice.culprits == ("edge-backend-errors", "edge-no-backend", "client-http-stack")
    download = describe(operation="HTTP/2 clone", status=502, h2_code=8, direction="download",
                        git_line="error: RPC failed; HTTP 502 curl 22 The requested URL "
                        "returned error: 502")
    assert "client-http-stack" not in download.culprits, "a clone sends no pack"
    closed = describe(operation="HTTP/1.1 push", request="POST git-receive-pack", status=200,
                      tcp=TcpEnding(side="server", silence_s=3.2, ending="fin"),
                      h2_code="NO_ERROR")
    assert closed.ids == ("h2-no-error", "tcp-server-close-after-silence")
    assert closed.seen == ("HTTP/1.1 push: POST git-receive-pack answered 200; HTTP/2 error "
                           "code NO_ERROR; the server closed the connection (FIN) after 3.2 s "
                           "of silence")


def test_a_failure_with_no_entry_is_said_so_and_points_nowhere() -> None:
    unknown = describe(operation="SSH push", git_line="fatal: something new")
    assert unknown.signatures == () and unknown.culprits == ()
    assert unknown.seen == f"SSH push: git said: fatal: something new; {NO_ENTRY}"
    assert unknown.seen.endswith("gitnetdiag has no entry for it")
    nothing = describe(operation="HTTP/1.1 push", request="POST git-receive-pack",
                       h2_code=0x42)
    assert nothing.seen == ("HTTP/1.1 push: POST git-receive-pack got no status; HTTP/2 error "
                            f"code 66; {NO_ENTRY}")
    empty = describe(operation="git:// push")
    assert empty.seen == f"git:// push: nothing was recorded; {NO_ENTRY}"


def test_the_shipped_catalogue_covers_each_family_with_sources() -> None:
    assert set(load().signatures) == set(BASE.signatures)
    families = {s.family for s in BASE.signatures}
    assert families == {"message", "status", "h2", "tcp"}
    assert 20 <= len(BASE.signatures) <= 60
    for entry in BASE.signatures:
        assert entry.source.startswith("https://"), entry.id
        assert all(c.source.startswith("https://") and c.evidence for c in entry.causes)
        assert set(entry.culprits) <= KNOWN_CULPRITS, entry.id


def test_known_culprits_are_the_registered_ones() -> None:
    """The constant the loader checks against holds every registered culprit id."""
    registered = {c.id for c in CULPRITS}
    assert registered <= KNOWN_CULPRITS
    assert {"request-body-limit", "edge-idle-timeout", "streamed-body-refused"} <= registered


def test_lab_tested_entries_name_real_faults_of_their_culprit() -> None:
    from gitnetdiag.lab.httpfaults import HTTP_FAULT_CULPRIT
    from gitnetdiag.lab.spec import FAULT_CULPRIT, FAULTS

    culprit_of = {**FAULT_CULPRIT, **HTTP_FAULT_CULPRIT}

    tested = {s.id: s.lab for s in BASE.signatures if s.lab is not None}
    assert tested == {
        "curl-92-h2-stream-error": "streamed-body-refused",
        "curl-18-partial-file": "edge-idle-timeout",
        "sideband-unexpected-disconnect": "edge-idle-timeout",
        "ssh-kex-identification-closed": "ssh-maxstartups",
        "connection-refused": "firewall-reset",
        "http-redirect": "edge-backend-errors",
        "http-411": "streamed-body-refused",
        "http-413": "request-body-limit",
    }
    for entry in BASE.signatures:
        if entry.lab is not None:
            assert entry.lab in FAULTS, entry.id
            assert culprit_of[entry.lab] in entry.culprits, entry.id


def test_docs_table_lists_every_entry_with_its_lab_column() -> None:
    rows = {}
    for line in (ROOT / "docs" / "failures.md").read_text().splitlines():
        match = re.match(r"\| `([a-z0-9-]+)` \|.*\| (yes|no)[^|]* \|$", line)
        if match:
            rows[match.group(1)] = match.group(2)
    assert rows == {s.id: "yes" if s.lab else "no" for s in BASE.signatures}


BROKEN = [
    (('family = "status"', 'family = "statuz"'), "'http-redirect'", "unknown family 'statuz'"),
    (('source = "https://www.rfc-editor.org/rfc/rfc9110#section-15.5.14"\n', ""),
     "'http-413'", "missing source"),
    (('source = "https://www.rfc-editor.org/rfc/rfc9110#section-15.5.14"',
      'source = "http://www.rfc-editor.org/rfc/rfc9110"'), "'http-413'", "https URL"),
    (('source = "https://nginx.org/en/docs/http/ngx_http_core_module.html'
      '#client_max_body_size"\n', ""), "'http-413' cause 1", "missing source"),
    (('id = "http-502"', 'id = "http-413"'), "'http-413'", "appears twice"),
    (('culprit = "request-body-limit"\nwhat = "the pack POST',
      'culprit = "body-limit"\nwhat = "the pack POST'), "'http-413' cause 1",
     "'body-limit' is not a known culprit id"),
    (("statuses = [502]", "statuses = [413]"), "'http-502'", "status 413 is already"),
    (("statuses = [502]", "statuses = [5020]"), "'http-502'", "`statuses`"),
    (('side = "client"', 'side = "both"'), "'tcp-client-close'", "`side` must be"),
    (("code = 0x8", "code = 0x2"), "'h2-cancel'", "h2 2 is already"),
    (('needles = ["connection refused"', 'needle = ["connection refused"'),
     "'connection-refused'", "needle not a field of a message entry"),
]


@pytest.mark.parametrize(("change", "entry", "message"), BROKEN)
def test_a_broken_catalogue_is_refused_with_one_line_naming_the_entry(
        change: tuple[str, str], entry: str, message: str) -> None:
    assert change[0] in SHIPPED
    with pytest.raises(SignatureCatalogueError) as err:
        parse(SHIPPED.replace(change[0], change[1], 1))
    text = err.value.one_line()
    assert "\n" not in text and text.startswith("failure-signatures: ")
    assert f"failure_signatures entry {entry}" in text and message in text
    assert isinstance(err.value, GitnetdiagError)


def test_broken_words_and_files_are_refused() -> None:
    with pytest.raises(SignatureCatalogueError, match=r"\[words\]: bad status"):
        parse(SHIPPED.replace("'RPC failed; HTTP (\\d{3})'", "'RPC failed; HTTP (\\d{3}'", 1))
    with pytest.raises(SignatureCatalogueError, match="not valid TOML"):
        parse(SHIPPED + "\n[[signature]\n")
    with pytest.raises(SignatureCatalogueError, match="no \\[\\[signature\\]\\] entries"):
        parse(SHIPPED.split("[[signature]]", 1)[0])
    with pytest.raises(SignatureCatalogueError, match="cannot read"):
        load(Path("/nonexistent/failure_signatures.toml"))


def test_a_broken_file_stops_the_cli_with_one_line(tmp_path: Path) -> None:
    """Loaded when the diagnosis is imported, as the HTTP/2 terminators' base: the command
    stops with the one error line (no traceback), exit code 1."""
    data = tmp_path / "data"
    data.mkdir()
    for item in resources.files("gitnetdiag.data").iterdir():
        if item.name.endswith(".toml"):
            (data / item.name).write_text(item.read_text())
    broken = SHIPPED.replace('family = "status"', 'family = "statuz"', 1)
    (data / signatures.DATA_FILE).write_text(broken)
    script = (
        "import importlib.resources as r, pathlib, sys\n"
        "real, data = r.files, pathlib.Path(sys.argv[1])\n"
        "r.files = lambda anchor: data if anchor == 'gitnetdiag.data' else real(anchor)\n"
        "sys.argv = ['gitnetdiag', 'analyze', sys.argv[2], '--diagnose']\n"
        "from gitnetdiag.cli import main\nmain()\n")
    proc = subprocess.run([sys.executable, "-c", script, str(data),
                           str(ROOT / "captures" / "h2-small-window")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(
        "error [failure-signatures]: failure_signatures entry 'http-redirect': unknown family "
        "'statuz' (one of message, status, h2, tcp) (hint: ")
