"""`fieldwarden lint`'s argparse parser: help, usage and every error message.

Built from the option table in options.py. A plain command line never gets here
(options.parse reads it without importing argparse); help and mistakes do.
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from .options import APPEND, DEFAULT_PATHS, FLAG, OPTIONS, PATHS_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `fieldwarden lint`, from the table."""
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS), help=PATHS_HELP)
    for option in OPTIONS:
        extra: dict[str, Any] = {"dest": option.dest, "help": option.help}
        if option.kind == FLAG:
            extra["action"] = "store_true"
        else:
            extra["action"] = "append" if option.kind == APPEND else "store"
            extra["default"] = [] if option.kind == APPEND else option.default
            if option.choices is not None:
                extra["choices"] = list(option.choices)
            if option.metavar is not None:
                extra["metavar"] = option.metavar
        parser.add_argument(*option.flags, **extra)
    parser.__class__ = _LintParser  # unknown options: this usage line and a suggestion, exit 2
    parser.allow_abbrev = False  # as ruff: `--statistic` is a typo, not `--statistics` (nor ambiguous with --output)


class _LintParser(argparse.ArgumentParser):
    """`fieldwarden lint`'s parser: rejects unknown options itself.

    argparse hands a sub-command's unknown arguments to the top-level parser, whose error
    shows `fieldwarden`'s usage; here they fail with `lint`'s usage and the closest option.
    """

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{_suggestion(self, extras)}")
        return parsed, extras


def _suggestion(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """`; did you mean --format?` for the first unknown option close to a real one."""
    import difflib

    known = [option for action in parser._actions for option in action.option_strings if option.startswith("--")]
    for extra in extras:
        if extra.startswith("--"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], known, n=1, cutoff=0.6)
            if close:
                return f"; did you mean {close[0]}?"
    return ""
