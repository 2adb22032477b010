"""A finding's fix laid out for reading: the answering product's lines, then the others.

The findings write a fix as one paragraph (the JSON keeps it so): what to do, the setting of
the product that answered, then ``Other servers: A; B; C.`` (or ``Other edges:``, ``Known
servers:``) naming every other product's setting, then any workaround. Read as one block of
nine lines naming five products, the answering product's line is lost among them; laid out,
the lead comes first and the others are a short list. Pure text handling, for the renderers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_OTHERS = re.compile(r"(?:^|(?<=\. ))(Other servers|Other edges|Known servers|Other proxies"
                     r"|Other products): ")


@dataclass(frozen=True, kw_only=True)
class FixLayout:
    """A fix in three parts; ``others`` empty when the fix names no other products."""

    lead: str
    """What to do and the answering product's setting."""
    heading: str = ""
    """``Other servers`` and the like."""
    others: tuple[str, ...] = ()
    """One item per other product."""
    tail: str = ""
    """What follows the list (a client workaround)."""


def _top_level(text: str) -> Iterator[tuple[int, str]]:
    """``(index, character)`` of ``text`` outside parentheses, brackets and code spans."""
    depth, code = 0, False
    for i, char in enumerate(text):
        if char == "`":
            code = not code
        elif code:
            continue
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif depth == 0:
            yield i, char


def _list_end(text: str) -> int:
    """Where the list of products ends: the first ``. `` (or the final ``.``) outside
    parentheses and code spans."""
    return next((i for i, char in _top_level(text)
                 if char == "." and (i + 1 == len(text) or text[i + 1] == " ")), len(text))


def _items(text: str) -> tuple[str, ...]:
    """``A; B; C`` split at the semicolons outside parentheses and code spans."""
    cuts = [i for i, char in _top_level(text) if char == ";"]
    items = [text[start + 1:end].strip() for start, end in zip([-1, *cuts], [*cuts, len(text)],
                                                                strict=True)]
    return tuple(item for item in items if item)


def fix_layout(fix: str) -> FixLayout:
    """``fix`` as lead, list and tail (all of it the lead when it lists no others)."""
    found = _OTHERS.search(fix)
    if found is None:
        return FixLayout(lead=fix)
    rest = fix[found.end():]
    end = _list_end(rest)
    others = _items(rest[:end])
    if len(others) < 2:
        return FixLayout(lead=fix)
    return FixLayout(lead=fix[:found.start()].strip(), heading=found.group(1),
                     others=others, tail=rest[end + 1:].strip())


def fix_lines(fix: str, *, first: str, bullet: str = "- ") -> list[str]:
    """The fix as lines: ``first`` and the lead, the heading and one bullet per other
    product, then the tail."""
    layout = fix_layout(fix)
    lines = [f"{first}{layout.lead}"]
    if layout.others:
        lines += [f"{layout.heading}:", *(f"{bullet}{item}" for item in layout.others)]
    if layout.tail:
        lines.append(layout.tail)
    return lines
