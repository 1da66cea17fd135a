"""`fieldwarden export`: the admission rules as in-tree admission policies (policies/export/).

    fieldwarden export --k8s-version 1.34 --config .fieldwarden.yaml -o exported/

With `-o DIR` it writes `DIR/policies.yaml` (the policies and their bindings) and
`DIR/exactness.txt` (the report, also printed); without, the YAML goes to stdout and the
report to stderr. The configuration is read as `fieldwarden serve` reads it, by the same loader
(policies/config.py load_settings). Exit codes: 0 written, 2 a configuration or version
problem (nothing written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__
from .policies.config import ConfigError, load_settings
from .policies.export.assemble import FAILURE_POLICIES, ExportError, Scope, export, report_text, target, yaml_text

POLICIES_FILE = "policies.yaml"
REPORT_FILE = "exactness.txt"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `fieldwarden export`."""
    parser.add_argument("--k8s-version", required=True, metavar="VERSION",
                        help="the Kubernetes version to export for, e.g. 1.32 (picks the admission API versions)")
    parser.add_argument("--config", metavar="FILE", type=Path,
                        help="policy configuration (.fieldwarden.yaml or pyproject.toml), as the webhook's")
    parser.add_argument("-o", "--output-dir", metavar="DIR", type=Path,
                        help=f"write {POLICIES_FILE} and {REPORT_FILE} there (default: YAML on stdout, report on stderr)")
    parser.add_argument("--select", metavar="CODES", help="comma-separated codes or names; replaces the configuration's")
    parser.add_argument("--ignore", metavar="CODES", help="comma-separated codes or names; replaces the configuration's")
    parser.add_argument("--failure-policy", choices=FAILURE_POLICIES, default="Ignore",
                        help="when a policy cannot be evaluated: Ignore (as the webhook fails open; default) or "
                             "Fail (the request is refused); FW403's VPA policy is always Ignore")
    parser.add_argument("--exclude-namespace", metavar="NAME", action="append",
                        help="a namespace the bindings never match (repeatable; default: kube-system)")
    parser.add_argument("--opt-out-label", metavar="KEY=VALUE", default="fieldwarden.io/admission=disabled",
                        help="namespaces and objects with this label are never matched (default: %(default)s; "
                             "empty: none)")
    parser.add_argument("--name-prefix", metavar="PREFIX", default="fieldwarden",
                        help="the objects' names start with it (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    """Export; 0 written, 2 refused."""

    try:
        settings = load_settings(args.config)
        settings = settings.with_overrides(select=_codes(args.select), ignore=_codes(args.ignore))
        scope = Scope(
            excluded_namespaces=tuple(args.exclude_namespace or ("kube-system",)),
            opt_out_label=_label(args.opt_out_label),
            failure_policy=args.failure_policy,
            prefix=args.name_prefix,
        )
        result = export(settings, target(args.k8s_version), scope)
    except (ConfigError, ExportError) as error:
        print(f"fieldwarden export: {error}", file=sys.stderr)
        return 2
    policies, report = yaml_text(result, __version__), report_text(result)
    if args.output_dir is None:
        sys.stdout.write(policies)
        sys.stderr.write(report)
        return 0
    try:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        (args.output_dir / POLICIES_FILE).write_text(policies, encoding="utf-8")
        (args.output_dir / REPORT_FILE).write_text(report, encoding="utf-8")
    except OSError as error:
        print(f"fieldwarden export: cannot write {args.output_dir}: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(report)
    print(f"wrote {args.output_dir / POLICIES_FILE} ({len(result.objects)} objects) and "
          f"{args.output_dir / REPORT_FILE}")
    return 0


def _codes(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def _label(text: str) -> tuple[str, str] | None:
    if not text:
        return None
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ExportError(f"--opt-out-label {text!r}: expected KEY=VALUE")
    return key, value
