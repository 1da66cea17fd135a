"""The informational subcommands: `rules`, `explain`, `schema`, `units`."""

from __future__ import annotations

import argparse
import json
import sys

from .policies.registry import RULES, Rule, resolve
from .policies.rule import summary


def rules(args: argparse.Namespace) -> int:
    """List every rule: code, name, severity, scope and summary."""
    if args.format == "json":
        print(json.dumps([
            {"code": c, "name": r.NAME, "severity": r.SEVERITY, "scope": r.SCOPE,
             "fixable": r.FIXABLE, "summary": summary(r)} for c, r in RULES.items()
        ], indent=2))
        return 0
    width = max(len(r.NAME) for r in RULES.values())
    for code, rule in RULES.items():
        fix = " (fixable)" if rule.FIXABLE else ""
        print(f"{code}  {rule.NAME:<{width}}  {rule.SEVERITY:<7}  {summary(rule)}{fix}")
    return 0


def explain(args: argparse.Namespace) -> int:
    """Print one rule's documentation page, rendered for the terminal or as raw Markdown."""
    rule = resolve(args.rule)
    if rule is None:
        print(f"fieldwarden: unknown rule {args.rule!r} (see fieldwarden rules)", file=sys.stderr)
        return 2
    page = rule_page(rule)
    if getattr(args, "format", "text") == "markdown":
        sys.stdout.write(page)
        return 0
    from .terminal import render, wants_style

    sys.stdout.write(render(page, wants_style(sys.stdout)))
    return 0


def rule_page(rule: Rule) -> str:
    """A rule's documentation page as Markdown: what `explain` prints and the docs site shows."""
    lines = [f"# {rule.CODE} {rule.NAME} ({rule.SEVERITY})", "", (rule.__doc__ or "").strip()]
    if rule.OPTIONS:
        lines += ["", "## Options"]
        for option, schema in rule.OPTIONS.items():
            default = json.dumps(rule.DEFAULTS.get(option))
            lines.append(f"- `{option}` (default `{default}`): {schema.get('description', '')}")
    return "\n".join(lines) + "\n"


def schema(args: argparse.Namespace) -> int:
    """Print the configuration's JSON Schema."""
    from .policies.config import schema_json

    sys.stdout.write(schema_json())
    return 0


def units(args: argparse.Namespace) -> int:
    """List the apply units of the paths: planning only, nothing rendered (linter/list_units.py)."""
    from .linter.list_units import run

    return run(args)
