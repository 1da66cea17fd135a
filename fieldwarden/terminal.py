"""Text for a terminal or a CI log: what is printed cannot start a line or a command of its own.

`visible` and `line_start` make a path or message safe to print on one line of a log:
control characters become Python-style escapes (a file name holding a newline followed by
`::add-mask::` would otherwise start a GitHub workflow command of its own line), and `##[`,
the older form of GitHub's workflow commands that the runner honours anywhere in a line,
has its bracket escaped. `render` is for Markdown pages (a rule's `explain` page):

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
# C0 and C1 controls, DEL, Unicode's line and paragraph separators; GitHub's `##[` command marker
_UNSEEN = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]|##\[")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "##[": "##\\x5b"}


def visible(text: str) -> str:
    """`text` for one line of a terminal or CI log: `\\n`, `\\x1b`, `\\u2028` for control characters.

    A backslash stays as it is (Windows paths stay readable): the escapes are for people to
    see that something is there, and no line, colour or workflow command can come of them.
    """
    if _UNSEEN.search(text) is None:
        return text
    return _UNSEEN.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    found = match.group()
    named = _NAMED.get(found)
    if named is not None:
        return named
    code = ord(found)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def line_start(path: str) -> str:
    """A path `visible`, for the start of a line: `./` before one that starts with `:` or a space.

    GitHub's runner strips a line's leading white space and takes what then starts with `::`
    as a workflow command: a file named `::add-mask::x` must not start a line as it is.
    """
    shown = visible(path)
    if shown[:1] == ":" or shown[:1].isspace():
        return "./" + shown
    return shown


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
