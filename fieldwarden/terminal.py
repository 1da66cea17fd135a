"""Markdown pages (a rule's `explain` page) rendered for a terminal.

Only what the rules' docstrings use: `#`/`##` headings, fenced code blocks, inline code,
`**bold**`, lists and paragraphs. Headings are bold (and underlined for the title) on a
colour terminal and underlined with `=`/`-` otherwise; code blocks are indented by four
spaces without their fences; inline backticks are dropped. Written here rather than with
a Markdown library: `fieldwarden explain` must start without one, and the pages are ours.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

_BOLD, _UNDERLINE, _DIM, _CYAN, _RESET = "\033[1m", "\033[4m", "\033[2m", "\033[36m", "\033[0m"
_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"\s*(```|~~~)")
_CODE = re.compile(r"(`+)(.+?)\1")
_STRONG = re.compile(r"\*\*(.+?)\*\*")


def wants_style(stream: TextIO) -> bool:
    """Colour and bold only for a terminal, never with NO_COLOR set or TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def render(page: str, style: bool) -> str:
    """The Markdown `page` as terminal text: styled with ANSI codes when `style`, else plain."""
    out: list[str] = []
    fence = ""
    for line in page.splitlines():
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1) == fence:
                fence = ""
            else:
                code = "    " + line if line.strip() else ""
                out.append(f"{_DIM}{code}{_RESET}" if style and code else code)
            continue
        if opened:
            fence = opened.group(1)
            continue
        heading = _HEADING.match(line)
        if heading:
            level, text = len(heading.group(1)), _inline(heading.group(2), False)
            if style:
                out.append(f"{_BOLD}{_UNDERLINE if level == 1 else ''}{text}{_RESET}")
            else:
                out += [text, ("=" if level == 1 else "-") * len(text)]
            continue
        out.append(_inline(line, style))
    return "\n".join(out).rstrip("\n") + "\n"


def _inline(text: str, style: bool) -> str:
    """Inline code without its backticks (cyan when styled) and `**bold**` without its stars."""
    text = _CODE.sub(lambda m: f"{_CYAN}{m.group(2).strip()}{_RESET}" if style else m.group(2).strip(), text)
    return _STRONG.sub(lambda m: f"{_BOLD}{m.group(1)}{_RESET}" if style else m.group(1), text)
