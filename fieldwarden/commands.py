"""The informational subcommands: `rules`, `explain`, `schema`."""

from __future__ import annotations

import argparse
import json
import sys

from .policies.registry import RULES, resolve
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
    """Print one rule's documentation page."""
    rule = resolve(args.rule)
    if rule is None:
        print(f"fieldwarden: unknown rule {args.rule!r} (see `fieldwarden rules`)", file=sys.stderr)
        return 2
    print(f"# {rule.CODE} {rule.NAME} ({rule.SEVERITY})\n")
    print((rule.__doc__ or "").strip())
    if rule.OPTIONS:
        print("\n## Options")
        for option, schema in rule.OPTIONS.items():
            print(f"- `{option}` (default `{json.dumps(rule.DEFAULTS.get(option))}`): {schema.get('description', '')}")
    return 0


def schema(args: argparse.Namespace) -> int:
    """Print the configuration's JSON Schema."""
    from .policies.config import schema_json

    sys.stdout.write(schema_json())
    return 0
