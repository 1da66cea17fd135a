"""The `fieldwarden` command: subcommands dispatch to the linter and the webhook."""

from __future__ import annotations

import gc
import os
import sys

from . import __version__

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: `--version` imports nothing)
if TYPE_CHECKING:
    import argparse
    from typing import Any, Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 clean, 1 findings, 2 usage or config error)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    command_line = argv is None  # (callers in-process pass their arguments)
    if command_line:
        # Collecting while modules load frees nothing (they live until the process ends)
        # and costs a few ms of a one-file run: collection resumes once they are in.
        gc.disable()
    if arguments == ["--version"]:  # (what argparse's version action prints, without argparse)
        print(f"fieldwarden {__version__}")
        return 0
    if sorted(arguments) == ["--verbose", "--version"]:  # and the tools a lint would run
        from .linter.units.tools import describe_kubectl

        print(f"fieldwarden {__version__}\npython: {sys.version.split()[0]} ({sys.executable})\n{describe_kubectl()}")
        return 0
    args: Any = None
    chosen = None
    if arguments[:1] == ["lint"]:
        # A plain lint command line (pre-commit's) is read without argparse; help and
        # mistakes go to argparse below, built from the same option table.
        from .linter.options import parse

        args = parse(arguments[1:])
        if args is not None and command_line and not args.no_context and args.config is None:
            # git lists the project's files on another core while the rules are imported
            # (a command-line run only: the listing is of this moment, for this one run)
            from .linter.discover import start_listing

            start_listing(os.getcwd())
    if args is None:
        parser, chosen = build_parser(arguments)
        args = parser.parse_args(arguments)
    try:
        if args.command == "lint":
            warmed = None
            if command_line and "yaml" not in sys.modules:  # (PyYAML's patterns, compiled in an earlier run)
                from .linter.regex_cache import warm

                warmed = warm()
            from .linter import cli as lint_cli

            if warmed is not None:
                from .linter.regex_cache import keep

                keep(warmed)
            _loaded(command_line, collect=False)
            code = lint_cli.run(args)
            if command_line:
                _exit_now(code)  # (returns when the interpreter has something left to do)
            return code
        _loaded(command_line)
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
        from .terminal import visible  # (what failed may quote a path or a file's text)

        print(f"fieldwarden: internal error: {type(exc).__name__}: {visible(str(exc))} "
              "(set FIELDWARDEN_DEBUG=1 for a traceback and please report it)", file=sys.stderr)
        return 2


def _loaded(command_line: bool, collect: bool = True) -> None:
    """The command's modules are in: hide them from the collector, then let it run again (`collect`).

    Frozen, they are walked neither by later collections nor by the interpreter's teardown
    (~7 ms, a tenth of a pre-commit run). A lint runs without the collector (engine.lint) and keeps
    it off to the end: the collection that would follow the lint walks every object it made and
    still holds, for a process about to end (~0.2 s after a lint of 44 charts and 41 kustomize roots).
    """
    if command_line:
        gc.freeze()
        if collect:
            gc.enable()


def _exit_now(code: int) -> None:
    """End the process with `code` at once when nothing is left to do but the interpreter's teardown.

    Tearing down the ~100 modules a lint loaded is ~3 ms of a ~45 ms pre-commit run, and frees
    nothing the system would not. Safe only when the run left nothing behind: no atexit callbacks
    (a helper pool, coverage), no thread still running, no git child unread; and only once stdout
    and stderr are flushed: when a flush fails (stdout a closed pipe), the process ends as it always
    did, the teardown reporting the failed flush (exit code 120).
    """
    import atexit

    if atexit._ncallbacks():
        return
    threading = sys.modules.get("threading")
    if threading is not None and (
        getattr(threading, "_threading_atexits", None)
        or any(not t.daemon and t is not threading.main_thread() and t.is_alive() for t in threading.enumerate())
    ):
        return
    discover = sys.modules.get(f"{__package__}.linter.discover")
    if discover is not None and getattr(discover, "_STARTED", None):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # (ValueError: a stream closed)
        return
    os._exit(code)


def build_parser(arguments: Sequence[str]) -> tuple[argparse.ArgumentParser, Any]:
    """The whole command line's parser, with the options of the command `arguments` names.

    Returns it and the webhook-side command's module when one was named (else None).
    The command's own options come from its module, imported only when that command runs:
    `--version`, `rules` and `explain` never load the linter, `lint` never the webhook.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="fieldwarden", description=__doc__)
    parser.add_argument("--version", action="version", version=f"fieldwarden {__version__}",
                        help="print the version and exit (with --verbose: the Python and the kubectl that renders kustomize units)")
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
    units = commands.add_parser("units", help="list the apply units lint would make, what each renders, what is not read")
    units.add_argument("paths", nargs="*", metavar="PATHS", help="files or folders (default: the current folder)")
    units.add_argument("--format", choices=["text", "json"], default="text")
    units.add_argument("--config", metavar="FILE", help="one configuration for every file (as lint's)")
    webhook_commands = {
        "serve": "run the admission webhook (HTTPS, gunicorn)",
        "controller": "run the readiness-gate controller (leader-elected)",
        "set-image": "update container images in place, draining the pod first",
        "export": "write the admission rules as ValidatingAdmissionPolicy / MutatingAdmissionPolicy objects",
    }
    parsers = {name: commands.add_parser(name, help=text) for name, text in webhook_commands.items()}
    words = [a for a in arguments if not a.startswith("-")]
    chosen = None
    if words[:1] == ["lint"]:
        from .linter.argparser import add_arguments

        add_arguments(lint)
    elif words[:1] and words[0] in webhook_commands:
        chosen = _webhook_command(words[0])
        chosen.add_arguments(parsers[words[0]])
    return parser, chosen


def _webhook_command(name: str) -> Any:
    """The module of a webhook-side command (imported only when that command runs)."""
    if name == "serve":
        from .webhook.server import serve

        return serve
    if name == "controller":
        from .webhook.gate import process as controller

        return controller
    if name == "export":
        from . import export

        return export
    from .webhook.gate import set_image

    return set_image


if __name__ == "__main__":
    raise SystemExit(main())
