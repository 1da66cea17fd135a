"""One formatter per output format: text, json, sarif (2.1.0) and github annotations."""

from __future__ import annotations

from typing import Callable, Sequence

from .. import __version__
from ..policies.registry import RULES
from ..policies.rule import summary
from .analyse import Finding

_COLOURS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m"}
_BOLD, _DIM, _RESET = "\033[1m", "\033[2m", "\033[0m"


def text(findings: Sequence[Finding], colour: bool = False) -> str:
    """`path:line:col: CODE message [name]`, one finding a line, then a summary."""
    lines = []
    for f in findings:
        tail = f" [{f.name}]"
        if f.suppressed:
            tail += f" (suppressed by {f.suppressed})"
        if colour:
            lines.append(
                f"{_BOLD}{f.file}{_RESET}:{f.line}:{f.column}: {_COLOURS[f.severity]}{f.code}{_RESET} "
                f"{_message(f)}{_DIM}{tail}{_RESET}"
            )
        else:
            lines.append(f"{f.file}:{f.line}:{f.column}: {f.code} {_message(f)}{tail}")
    active = [f for f in findings if not f.suppressed]
    if active:
        counts = {s: sum(1 for f in active if f.severity == s) for s in ("error", "warning", "info")}
        parts = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items() if n)
        lines.append(f"Found {len(active)} finding{'s' if len(active) != 1 else ''} ({parts}).")
    return "\n".join(lines) + ("\n" if lines else "")


def _message(f: Finding) -> str:
    where = f"{f.object}: " if f.object else ""
    return f"{where}{f.message}"


def as_json(findings: Sequence[Finding], colour: bool = False) -> str:
    """A JSON array of findings with every field."""
    import json  # here, not at the top: pre-commit's text output starts without json

    return json.dumps([_record(f) for f in findings], indent=2) + "\n"


def _record(f: Finding) -> dict[str, object]:
    return {
        "file": f.file,
        "line": f.line,
        "column": f.column,
        "code": f.code,
        "name": f.name,
        "severity": f.severity,
        "object": f.object,
        "field": f.field,
        "message": f.message,
        "hint": f.hint,
        "suppressed": f.suppressed or None,
    }


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def sarif(findings: Sequence[Finding], colour: bool = False) -> str:
    """SARIF 2.1.0 with every rule described and real regions."""
    codes = sorted(RULES)
    index = {code: n for n, code in enumerate(codes)}
    rules = [
        {
            "id": code,
            "name": RULES[code].NAME,
            "shortDescription": {"text": summary(RULES[code])},
            "fullDescription": {"text": summary(RULES[code])},
            "help": {"text": (RULES[code].__doc__ or "").strip(), "markdown": (RULES[code].__doc__ or "").strip()},
            "defaultConfiguration": {"level": _SARIF_LEVEL[RULES[code].SEVERITY]},
            "properties": {"tags": [RULES[code].SCOPE]},
        }
        for code in codes
    ]
    results = []
    for f in findings:
        result: dict[str, object] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": _message(f) + (f" ({f.hint})" if f.hint else "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.file.replace("\\", "/"), "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": f.line, "startColumn": f.column},
                    },
                    **({"logicalLocations": [{"name": f.object, "kind": "object"}]} if f.object else {}),
                }
            ],
            "properties": {"field": f.field, "object": f.object},
        }
        if f.suppressed:
            result["suppressions"] = [{"kind": "inSource", "justification": f.suppressed}]
        results.append(result)
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fieldwarden",
                        "version": __version__,
                        "informationUri": "https://github.com/fieldwarden/fieldwarden",
                        "rules": rules,
                    }
                },
                "results": results,
            }
        ],
    }
    import json

    return json.dumps(document, indent=2) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def github(findings: Sequence[Finding], colour: bool = False) -> str:
    """GitHub Actions workflow commands: `::error file=..,line=..,col=..,title=..::message`."""
    lines = []
    for f in findings:
        if f.suppressed:
            continue
        title = _escape_property(f"{f.code} {f.name}")
        lines.append(
            f"::{_GITHUB_LEVEL[f.severity]} file={_escape_property(f.file)},line={f.line},col={f.column},"
            f"title={title}::{_escape_data(_message(f))}"
        )
    return "\n".join(lines) + ("\n" if lines else "")


FORMATTERS: dict[str, Callable[..., str]] = {"text": text, "json": as_json, "sarif": sarif, "github": github}
