"""Rich output to text: the one place a renderer's rich console becomes a ``str``."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console


def text_console(*, width: int = 100, color: bool = False, soft_wrap: bool = False) -> Console:
    """A console that writes into memory; read it back with :func:`console_output`."""
    return Console(
        file=io.StringIO(),
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        soft_wrap=soft_wrap,
    )


def console_output(console: Console) -> str:
    """What a :func:`text_console` received, without trailing blanks on any line.

    rich pads lines to the width; the padding only makes golden files brittle.
    """
    assert isinstance(console.file, io.StringIO)
    return "\n".join(line.rstrip() for line in console.file.getvalue().split("\n"))


def console_text(*items: Any, width: int = 100, color: bool = False) -> str:
    """Each item (a rich renderable) printed on its own line, as text."""
    console = text_console(width=width, color=color)
    for item in items:
        console.print(item)
    return console_output(console)
