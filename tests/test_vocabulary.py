"""The shared words: the transports, and one rule for sizes and durations in every command."""

from __future__ import annotations

import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gitnetdiag.errors import ExitCode, UsageError
from gitnetdiag.vocabulary import SIZE_RULE, TransportKind, parse_duration_s, parse_size


def test_the_transports_keep_their_values() -> None:
    """The values are what run directories and --protocols hold; renaming the enum kept them."""
    assert [kind.value for kind in TransportKind] == ["h1", "h2", "ssh", "git"]
    assert TransportKind("h2") is TransportKind.H2
    assert [kind.is_http for kind in TransportKind] == [True, True, False, False]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1024", 1024), ("7b", 7),
        # k, K, KB, KiB (any case, with or without a space) are all 1024: the binary rule.
        ("512k", 512 * 1024), ("512K", 512 * 1024), ("500KB", 500 * 1024), ("7 kib", 7 * 1024),
        ("4MiB", 4 * 2**20), ("2M", 2 * 2**20), ("64mb", 64 * 2**20), ("1.5MiB", 3 * 2**19),
        ("1G", 2**30), ("1GiB", 2**30), ("1.5G", 3 * 2**29), ("2T", 2 * 2**40),
    ],
)
def test_a_size_is_read_in_binary_units(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "MiB", "-4MiB", "4 potatoes", "0", "0k", "4XiB", "1X",
                                  "big", "4MiBs", "1e6"])
def test_a_bad_size_is_one_line_with_the_rule(text: str) -> None:
    with pytest.raises(UsageError, match="cannot read the size") as info:
        parse_size(text)
    assert "\n" not in str(info.value)
    assert info.value.hint is not None and SIZE_RULE in info.value.hint


@pytest.mark.parametrize(("text", "expected"), [("30s", 30.0), ("30", 30.0), ("2m", 120.0),
                                                ("1.5s", 1.5), ("500ms", 0.5), ("1h", 3600.0)])
def test_a_duration_is_read_in_seconds(text: str, expected: float) -> None:
    assert parse_duration_s(text) == expected


@pytest.mark.parametrize("text", ["0s", "soon", "3d", "", "-1s"])
def test_a_bad_duration_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="cannot read the duration"):
        parse_duration_s(text)


@pytest.mark.parametrize(("command", "option"), [
    (["probe"], "--size"), (["load"], "--push-size"), (["storage"], "--size"),
    (["lab", "up"], "--reset-after"),
])
def test_every_size_option_says_the_rule_in_its_help(command: list[str], option: str) -> None:
    from gitnetdiag.commands._app import build_app

    result = CliRunner().invoke(build_app(), [*command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert option in flat
    assert " ".join(SIZE_RULE.split()) in flat


@pytest.mark.parametrize("argv", [["storage", ".", "--size", "lots"],
                                  ["storage", ".", "--runtime", "soon"]])
def test_a_bad_size_on_the_command_line_is_one_line_and_a_usage_exit(argv: list[str]) -> None:
    """What the user sees: one line with the hint, exit code 2 (usage), no traceback."""
    done = subprocess.run([sys.executable, "-m", "gitnetdiag", *argv], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == int(ExitCode.USAGE)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error [usage]: cannot read the"), done.stderr
    assert "Traceback" not in done.stderr
