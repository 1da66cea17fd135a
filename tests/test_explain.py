"""`fieldwarden explain`: the rule page rendered for a terminal, or raw Markdown."""

from __future__ import annotations

import io
from contextlib import redirect_stdout

import pytest

from fieldwarden.cli import main
from fieldwarden.terminal import render, wants_style

PAGE = """\
# FW999 some-rule (error)

Summary with `inline code` and **bold**.

## What it does
- a `list` item

```yaml
kind: Deployment

spec: {}
```
"""


def explain(*args: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["explain", *args]) == 0
    return out.getvalue()


def test_plain_rendering_underlines_headings_indents_code_and_drops_backticks() -> None:
    assert render(PAGE, style=False) == (
        "FW999 some-rule (error)\n"
        "=======================\n"
        "\n"
        "Summary with inline code and bold.\n"
        "\n"
        "What it does\n"
        "------------\n"
        "- a list item\n"
        "\n"
        "    kind: Deployment\n"
        "\n"
        "    spec: {}\n"
    )


def test_styled_rendering_uses_bold_headings_and_no_markdown_marks() -> None:
    text = render(PAGE, style=True)
    assert "\033[1m\033[4mFW999 some-rule (error)\033[0m\n" in text
    assert "\033[1mWhat it does\033[0m\n" in text
    assert "`" not in text and "**" not in text and "```" not in text and "=====" not in text


def test_style_only_for_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert wants_style(Tty()) and not wants_style(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_style(Tty())


def test_explain_renders_the_page_and_keeps_markdown_on_request() -> None:
    text = explain("live-object-export")
    assert text.startswith("FW306 live-object-export (error)\n================================\n")
    assert "\nWhy is this bad?\n----------------\n" in text
    assert "`" not in text and "```" not in text and "\n    apiVersion: apps/v1\n" in text
    raw = explain("FW306", "--format", "markdown")
    assert raw.startswith("# FW306 live-object-export (error)\n") and "```yaml\n" in raw


def test_explain_lists_options_with_defaults() -> None:
    raw = explain("--format", "markdown", "FW403")
    assert "## Options" in raw
    assert "## Options" not in explain("FW403") and "\nOptions\n-------\n" in explain("FW403")
