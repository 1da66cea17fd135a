"""The options of `fieldwarden lint`, as one table, and a parser for plain command lines.

A one-file run (what pre-commit starts for every commit) spends a tenth of its time in
argparse: importing it with gettext and locale, and building the parser. `parse()` reads
the command lines that only use the table's options in their usual spellings and gives
back what argparse would; anything else (`--help`, an unknown option, a bad choice, `--`,
grouped short options) returns None and goes to argparse, built from the same table, so
help, usage and every error message stay argparse's own.
"""

from __future__ import annotations

from types import SimpleNamespace

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple, Sequence
else:
    from ..policies.records import NamedTuple

from ..policies.model import SEVERITIES

FLAG = "flag"  # store_true
VALUE = "value"  # takes one argument; the last one given wins
APPEND = "append"  # takes one argument; every one given is kept

FORMATS = ("text", "concise", "json", "sarif", "github", "junit", "gitlab")


class Option(NamedTuple):
    """One option of `lint`: its spellings, where it goes, and argparse's help for it."""

    flags: tuple[str, ...]
    dest: str
    kind: str
    help: str
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    default: Any = None


OPTIONS: tuple[Option, ...] = (
    Option(("--format", "--output-format"), "format", VALUE,
           "output format (auto: github under GitHub Actions, else text; concise: text without the help lines)",
           choices=("auto", *FORMATS), default="auto"),
    Option(("--output", "-o"), "output", VALUE, "write the report to FILE instead of stdout", metavar="FILE"),
    Option(("--select",), "select", VALUE, "comma-separated codes, prefixes or names to enable", metavar="CODES"),
    Option(("--ignore",), "ignore", VALUE, "comma-separated codes, prefixes or names to disable", metavar="CODES"),
    Option(("--fail-on",), "fail_on", VALUE, "lowest severity that makes the exit code 1", choices=SEVERITIES),
    Option(("--exclude",), "exclude", APPEND, "skip matching paths", metavar="GLOB"),
    Option(("--config",), "config", VALUE,
           "configuration file for every file (default: for each file, the nearest .fieldwarden.yaml or "
           "pyproject.toml with [tool.fieldwarden] above it)", metavar="FILE"),
    Option(("--show-settings",), "show_settings", VALUE,
           "print the configuration file(s) and resolved settings that apply to FILE, and exit", metavar="FILE"),
    Option(("--k8s-version",), "k8s_version", VALUE,
           "the Kubernetes version whose API the schema rules (FW601, FW602) check against, e.g. 1.32 "
           "(default: the configuration's kubernetes-version, else 1.36)", metavar="VERSION"),
    Option(("--no-context",), "no_context", FLAG, "do not load the project's other manifests for cross-file rules"),
    Option(("--include-fixtures",), "include_fixtures", FLAG,
           "lint test fixtures too (files below testdata/ and _testdata/ folders, kuttl and chainsaw "
           "assert/error files and what a chainsaw-test.yaml only asserts, the files a kyverno-test.yaml names)"),
    Option(("--helm-values",), "helm_values", APPEND,
           "render charts once more with these values: FILE (a file inside a chart: that chart; else every "
           "chart), or CHART=FILE; several files of one set separated by commas", metavar="[CHART=]FILE"),
    Option(("--allow-network",), "allow_network", FLAG,
           "let kustomize fetch remote resources and bases (github.com/...?ref=, https://...); without it they are "
           "not fetched and a unit that needs them is not linted (FW007). Command line only, never from a configuration"),
    Option(("--fix",), "fix", FLAG,
           "remove exported live-object fields in place (stdin: print the fixed document; the report goes to stderr)"),
    Option(("--diff",), "diff", FLAG,
           "print what --fix would change as a unified diff and change nothing (exit 1 if there is something to fix)"),
    Option(("--show-suppressed",), "show_suppressed", FLAG, "list suppressed findings too"),
    Option(("--statistics",), "statistics", FLAG, "print a count per rule instead of the findings"),
    Option(("--quiet", "-q"), "quiet", FLAG, 'print the findings only: no summary, no "All checks passed!", no notices'),
    Option(("--exit-zero",), "exit_zero", FLAG,
           "exit 0 even with findings (2 still means a usage or configuration error)"),
    Option(("--stdin-filename",), "stdin_filename", VALUE, "name to report for -", metavar="NAME", default="<stdin>"),
    Option(("--cluster",), "cluster", FLAG,
           "also check each object against the live cluster: the API server's dry run of the next apply (FW5xx)"),
    Option(("--kubeconfig",), "kubeconfig", VALUE, "with --cluster: the kubeconfig (default: $KUBECONFIG, "
           "~/.kube/config, in a pod its service account)", metavar="FILE"),
    Option(("--context",), "context", VALUE, "with --cluster: the kubeconfig context (default: its current one)",
           metavar="NAME"),
    Option(("--apply-mode",), "apply_mode", VALUE,
           "with --cluster: how the team applies: server (server-side apply, the default) or client "
           "(client-side kubectl apply)", choices=("server", "client")),
    Option(("--field-manager",), "field_manager", VALUE, "with --cluster: the deploy tool's field manager "
           "(default: kubectl for server, kubectl-client-side-apply for client)", metavar="NAME"),
    Option(("--force-conflicts",), "force_conflicts", FLAG,
           "with --cluster: the team's server-side applies force conflicts (Flux, Argo CD ServerSideApply)"),
    Option(("--read-only",), "read_only", FLAG,
           "with --cluster: only GET and LIST; predict from the live objects instead of a dry run"),
)
PATHS_HELP = "files or folders to lint; - for stdin (default: .)"
DEFAULT_PATHS = (".",)

_BY_FLAG = {flag: option for option in OPTIONS for flag in option.flags}


def defaults() -> dict[str, Any]:
    """Every destination with the value argparse gives it when the option is absent."""
    values: dict[str, Any] = {option.dest: option.default for option in OPTIONS}
    values.update({option.dest: False for option in OPTIONS if option.kind == FLAG})
    values.update({option.dest: [] for option in OPTIONS if option.kind == APPEND})
    return values


def parse(args: Sequence[str]) -> SimpleNamespace | None:
    """`lint`'s arguments (after the word `lint`) as argparse would read them, or None.

    None means "ask argparse": help, errors and spellings this reader does not take.
    """
    values = defaults()
    paths: list[str] = []
    positional_run_ended = False
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "-" or not arg.startswith("-"):
            if paths and positional_run_ended:
                return None  # argparse takes one run of paths: let it report the stray one
            paths.append(arg)
            continue
        if paths:
            positional_run_ended = True
        name, equals, attached = arg.partition("=")
        option = _BY_FLAG.get(name)
        if option is None or (equals and not name.startswith("--")):
            return None  # unknown, abbreviated, grouped (-qo) or -o=FILE: argparse decides
        if option.kind == FLAG:
            if equals:
                return None
            values[option.dest] = True
            continue
        if equals:
            value = attached
        elif index < len(args) and not args[index].startswith("-"):
            value = args[index]
            index += 1
        else:
            return None  # missing value, or one that looks like an option
        if option.choices is not None and value not in option.choices:
            return None
        if option.kind == APPEND:
            values[option.dest].append(value)
        else:
            values[option.dest] = value
    values["paths"] = paths or list(DEFAULT_PATHS)
    values["command"] = "lint"
    return SimpleNamespace(**values)
