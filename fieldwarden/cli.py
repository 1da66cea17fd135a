"""The `fieldwarden` command: subcommands dispatch to the linter and the webhook."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Sequence

from . import __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 clean, 1 findings, 2 usage or config error)."""
    parser = argparse.ArgumentParser(prog="fieldwarden", description=__doc__)
    parser.add_argument("--version", action="version", version=f"fieldwarden {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    lint = commands.add_parser("lint", help="lint manifests (files, folders, - for stdin)")
    rules = commands.add_parser("rules", help="list the rules")
    rules.add_argument("--format", choices=["text", "json"], default="text")
    explain = commands.add_parser("explain", help="print one rule's documentation")
    explain.add_argument("rule", help="rule code or name, e.g. FW201 or strategy-type-missing")
    explain.add_argument(
        "--format", choices=["text", "markdown"], default="text",
        help="text: rendered for the terminal (plain when piped or with NO_COLOR); markdown: the raw page",
    )
    commands.add_parser("schema", help="print the configuration's JSON Schema")
    webhook_commands = {
        "serve": "run the admission webhook (HTTPS, gunicorn)",
        "controller": "run the readiness-gate controller (leader-elected)",
        "set-image": "update container images in place, draining the pod first",
    }
    parsers = {name: commands.add_parser(name, help=text) for name, text in webhook_commands.items()}
    # The command's own options come from its module, imported only when that command runs:
    # `--version`, `rules` and `explain` never load the linter, `lint` never the webhook.
    words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    chosen = None
    if words[:1] == ["lint"]:
        from .linter import cli as lint_cli

        lint_cli.add_arguments(lint)
    elif words[:1] and words[0] in webhook_commands:
        chosen = _webhook_command(words[0])
        chosen.add_arguments(parsers[words[0]])

    args = parser.parse_args(argv)
    if argv is None:  # a command-line run (callers in-process pass their arguments)
        # The process ends after this call: spare the interpreter's teardown from walking
        # every module, function and object (~7 ms, a tenth of a pre-commit run).
        import gc

        gc.freeze()
    try:
        if args.command == "lint":
            from .linter import cli as lint_cli

            return lint_cli.run(args)
        if chosen is not None:
            return int(chosen.run(args))
        from . import commands as info

        return int(getattr(info, args.command)(args))
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # last line of defence: a message, never a traceback
        if os.environ.get("FIELDWARDEN_DEBUG"):
            raise
        print(f"fieldwarden: internal error: {type(exc).__name__}: {exc} "
              "(set FIELDWARDEN_DEBUG=1 for a traceback and please report it)", file=sys.stderr)
        return 2


def _webhook_command(name: str) -> Any:
    """The module of a webhook-side command (imported only when that command runs)."""
    if name == "serve":
        from .webhook.server import serve

        return serve
    if name == "controller":
        from .webhook.gate import process as controller

        return controller
    from .webhook.gate import set_image

    return set_image


if __name__ == "__main__":
    raise SystemExit(main())
