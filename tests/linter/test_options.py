"""linter/options.py reads a plain `lint` command line exactly as argparse does, or declines."""

from __future__ import annotations

import argparse
import contextlib
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fieldwarden.cli import build_parser
from fieldwarden.linter.formats import FORMATTERS
from fieldwarden.linter.options import FORMATS, OPTIONS, parse


def argparse_reading(arguments: list[str]) -> dict[str, Any] | None:
    """What the real parser makes of `fieldwarden lint ARGUMENTS` (None: it refused)."""
    parser, _ = build_parser(["lint", *arguments])
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return vars(parser.parse_args(["lint", *arguments]))
        except SystemExit:
            return None


def test_the_format_choices_are_the_formatters() -> None:
    assert FORMATS == tuple(FORMATTERS)


@pytest.mark.parametrize("arguments", [
    [],
    ["deploy.yaml"],
    ["-"],
    ["a.yaml", "b.yaml", "--format", "json"],
    ["--format=sarif", "--quiet", "a.yaml"],
    ["-q", "-o", "report.txt", "--exclude", "x/*", "--exclude=y/*", "."],
    ["--output-format", "concise", "--format", "github", "k8s/"],
    ["--fail-on", "warning", "--select", "FW1,FW2", "--ignore=FW201", "--no-context", "f.yaml"],
    ["--fix", "--diff", "--show-suppressed", "--statistics", "--exit-zero", "--stdin-filename", "x.yaml", "-"],
    ["--config", "c.yaml", "--show-settings", "a.yaml"],
    ["--output="],
    ["--select=a=b", "f"],
])
def test_plain_command_lines_read_as_argparse_reads_them(arguments: list[str]) -> None:
    fast = parse(arguments)
    assert fast is not None
    assert vars(fast) == argparse_reading(arguments)


@pytest.mark.parametrize("arguments", [
    ["--help"], ["-h"], ["--fromat", "json"], ["--format", "xml"], ["--format"], ["--quiet=yes"],
    ["-qo", "r.txt"], ["-o=r.txt"], ["-or.txt"], ["--", "-weird.yaml"], ["--output", "-"],
    ["a.yaml", "--quiet", "b.yaml"], ["--statistic"], ["-1"],
])
def test_anything_else_goes_to_argparse(arguments: list[str]) -> None:
    assert parse(arguments) is None


_TOKENS = st.sampled_from([
    "a.yaml", "dir/", "-", "--", "-q", "-o", "-h", "--quiet", "--format", "--format=json", "--output-format",
    "json", "text", "xml", "--exclude", "x/*", "--fail-on", "info", "--fail-on=bad", "--select", "FW1",
    "--stdin-filename", "--fix", "--fix=1", "--outp", "-x", "--statistics", "=", "--output=", "",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(_TOKENS, max_size=7))
def test_whenever_it_answers_it_answers_as_argparse(arguments: list[str]) -> None:
    fast = parse(arguments)
    if fast is not None:
        assert vars(fast) == argparse_reading(arguments)


def test_every_option_of_the_table_reaches_argparse() -> None:
    parser, _ = build_parser(["lint"])
    lint = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["lint"]
    spelled = {flag for action in lint._actions for flag in action.option_strings}
    assert {flag for option in OPTIONS for flag in option.flags} | {"-h", "--help"} == spelled
