"""`fieldwarden lint`: argument handling only; the work happens in engine.lint."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from ..policies.config import ConfigError, Settings, parse_config_text, unknown_selectors
from ..policies.model import SEVERITIES
from .discover import excluded, find_config, find_git_root, project_files, walk
from .engine import Report, Source, lint
from .formats import FORMATTERS


class UsageError(Exception):
    """Bad arguments or configuration: exit code 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `fieldwarden lint`."""
    parser.add_argument("paths", nargs="*", default=["."], help="files or folders to lint; - for stdin (default: .)")
    parser.add_argument("--format", choices=["auto", *FORMATTERS], default="auto",
                        help="output format (auto: github under GitHub Actions, else text)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    parser.add_argument("--select", metavar="CODES", help="comma-separated codes, prefixes or names to enable")
    parser.add_argument("--ignore", metavar="CODES", help="comma-separated codes, prefixes or names to disable")
    parser.add_argument("--fail-on", choices=SEVERITIES, help="lowest severity that makes the exit code 1")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="skip matching paths")
    parser.add_argument("--config", metavar="FILE", help="configuration file (default: nearest .fieldwarden.yaml "
                        "or pyproject.toml with [tool.fieldwarden], upward from the current folder)")
    parser.add_argument("--no-context", action="store_true",
                        help="do not load the project's other manifests for cross-file rules")
    parser.add_argument("--fix", action="store_true", help="remove exported live-object fields in place")
    parser.add_argument("--show-suppressed", action="store_true", help="list suppressed findings too")
    parser.add_argument("--stdin-filename", metavar="NAME", default="<stdin>", help="name to report for -")


def run(args: argparse.Namespace) -> int:
    """Lint as asked; returns the exit code."""
    try:
        settings, root = _settings(args)
        targets = _targets(args.paths, settings, root, args.stdin_filename)
    except (ConfigError, UsageError) as exc:
        print(f"fieldwarden: {exc}", file=sys.stderr)
        return 2
    context = _context(targets, settings, root) if settings.context and not args.no_context else []
    report = lint(targets, context, settings, root)
    if args.fix:
        fixed = _apply_fixes(report)
        if fixed:
            print(f"fieldwarden: fixed {fixed} finding{'s' if fixed != 1 else ''}", file=sys.stderr)
            report = lint(targets, context, settings, root)
    for notice in report.notices:
        print(f"fieldwarden: {notice}", file=sys.stderr)
    shown = report.findings if args.show_suppressed else [f for f in report.findings if not f.suppressed]
    name = args.format
    if name == "auto":
        name = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    colour = name == "text" and args.output is None and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    output = FORMATTERS[name](shown, colour=colour)
    if args.output:
        Path(args.output).write_text(output, encoding="utf-8")
    else:
        sys.stdout.write(output)
    failing = any(not f.suppressed and settings.fails(f.severity) for f in report.findings)
    return 1 if failing else 0


def _settings(args: argparse.Namespace) -> tuple[Settings, Path | None]:
    config = Path(args.config) if args.config else find_config(Path.cwd())
    settings = Settings()
    if config is not None:
        try:
            text = config.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read configuration {config}: {exc}") from None
        data = parse_config_text(text, str(config))
        _validate_cached(data, text, str(config), config.parent)
        settings = Settings(data, str(config))
    select = _split(args.select)
    ignore = _split(args.ignore)
    for entries in (select or [], ignore or []):
        bad = unknown_selectors(entries)
        if bad:
            raise UsageError(f"unknown rule code or name: {', '.join(bad)} (see `fieldwarden rules`)")
    settings = settings.with_overrides(select, ignore, args.fail_on, args.exclude)
    root = config.parent.resolve() if config is not None else find_git_root(Path.cwd().resolve())
    return settings, root


def _validate_cached(data: object, text: str, source: str, folder: Path) -> None:
    """Validate against the JSON Schema, remembering configurations already found valid."""
    from .. import __version__
    from .cache import CACHE_DIR, digest, make_cache_folder

    stamp = digest(f"{__version__}\0{text}".encode()).hex()
    marker = folder / CACHE_DIR / f"config-{stamp}.ok"
    if marker.exists():
        return
    from ..policies.config import validate

    validate(data, source)
    try:
        make_cache_folder(marker.parent)
        marker.touch()
    except OSError:
        pass


def _split(value: str | None) -> list[str] | None:
    return None if value is None else [part.strip() for part in value.split(",") if part.strip()]


def _targets(paths: Sequence[str], settings: Settings, root: Path | None, stdin_name: str) -> list[Source]:
    base = root or Path.cwd()
    sources: list[Source] = []
    for raw in paths:
        if raw == "-":
            sources.append(Source(stdin_name, None, sys.stdin.buffer.read()))
            continue
        path = Path(raw)
        if path.is_dir():
            sources.extend(Source(str(p), p) for p in walk(path) if not excluded(p, base, settings.exclude))
        elif path.exists() or path.is_symlink():
            if not excluded(path, base, settings.exclude):
                sources.append(Source(str(path), path))
        else:
            raise UsageError(f"{raw}: no such file or folder")
    return sources


def _context(targets: Sequence[Source], settings: Settings, root: Path | None) -> list[Path]:
    if root is None:
        return []
    named = {os.path.realpath(s.path) for s in targets if s.path is not None}
    cwd = Path.cwd()
    out = []
    for path in project_files(root):
        if os.path.realpath(path) in named or excluded(path, root, settings.exclude):
            continue
        try:
            out.append(path.relative_to(cwd))
        except ValueError:
            out.append(path)
    return out


def _apply_fixes(report: Report) -> int:
    from ..policies.registry import RULES
    from .fix import FixError, remove_fields

    plans: dict[str, dict[int, list[tuple[str | int, ...]]]] = {}
    for f in report.findings:
        if not f.suppressed and RULES[f.code].FIXABLE and f.document >= 0:
            plans.setdefault(f.file, {}).setdefault(f.document, []).append(f.raw_path)
    fixed = 0
    for file, removals in plans.items():
        path = Path(file)
        try:
            original = path.read_bytes()
            text = original.decode("utf-8-sig")
            new = remove_fields(text, removals)
            if original.startswith(b"\xef\xbb\xbf") and not new.startswith("\ufeff"):
                new = "\ufeff" + new
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(new)
            fixed += sum(len(v) for v in removals.values())
        except (OSError, UnicodeDecodeError, FixError) as exc:
            print(f"fieldwarden: {file}: not fixed: {exc}", file=sys.stderr)
    return fixed
