"""One formatter per output format: text, concise, json, sarif (2.1.0), github annotations,
junit (JUnit XML test reports) and gitlab (GitLab Code Quality).

Text follows ruff's layout: `path:line:col: CODE [*] severity: message [name]` (`[*]`: `--fix`
can fix it; the severity is in the words, not only in the colour), then the fix hint on an
indented `help:` line as ruff's default (full) format shows it, and the apply unit on a `unit:`
line when it is more than the file's own folder; `concise` is the one-line form. A finding on a
rendered object placed at its nearest known field says `(place approximate)`.
`rule_url` gives a rule's page on the docs site (policies/links.py names the site).

Paths and messages come from the linted tree, which may be an attacker's pull request: each
format escapes them for where it is read (terminal.visible and terminal.line_start in text and
concise, GitHub's own escapes in workflow commands, JSON's in json and sarif, with `##[` written
`##\\u005b` there), so that no name or message starts a line, a colour or a workflow command.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    import re
    from typing import Callable, Sequence

from .. import __version__
from ..policies.links import REPOSITORY, rule_page
from ..policies.registry import RULES
from ..policies.rule import summary
from .analyse import Finding

_COLOURS = {"error": "\033[31m", "warning": "\033[33m", "info": "\033[36m"}
_BOLD, _DIM, _RESET = "\033[1m", "\033[2m", "\033[0m"

APPROXIMATE = "(place approximate)"
CLEAN = "All checks passed!"


def rule_url(code: str) -> str:
    """The rule's page on the docs site (generated from its module's docstring, which `explain` prints)."""
    return rule_page(code)


def fixable(f: Finding) -> bool:
    """Whether `--fix` removes this finding (an unsuppressed finding of a fixable rule in a document)."""
    return bool(RULES[f.code].FIXABLE) and f.document >= 0 and not f.suppressed


def text(findings: Sequence[Finding], colour: bool = False, quiet: bool = False, hints: bool = True) -> str:
    """`path:line:col: CODE [*] severity: message [name]`, a `help:` line, then a summary.

    `quiet` leaves out the summary (and the "All checks passed!" of a clean run).
    """
    lines = []
    if findings:  # (a clean run, pre-commit's usual, escapes nothing)
        from ..terminal import line_start, visible
    for f in findings:
        mark = " [*]" if fixable(f) else ""
        tail = f" [{f.name}]"
        if f.approximate:
            tail += f" {APPROXIMATE}"
        if f.suppressed:
            tail += f" (suppressed by {visible(f.suppressed)})"
        file, message = line_start(f.file), visible(_message(f))
        if colour:
            # the code is a terminal hyperlink to the rule's page (OSC 8), as in ruff
            code = f"\033]8;;{rule_url(f.code)}\033\\{f.code}\033]8;;\033\\"
            lines.append(
                f"{_BOLD}{file}{_RESET}:{f.line}:{f.column}: {_COLOURS[f.severity]}{code}{_RESET}{mark} "
                f"{_COLOURS[f.severity]}{f.severity}{_RESET}: {message}{_DIM}{tail}{_RESET}"
            )
        else:
            lines.append(f"{file}:{f.line}:{f.column}: {f.code}{mark} {f.severity}: {message}{tail}")
        if hints and f.hint:
            lines.append(f"  {_BOLD if colour else ''}help{_RESET if colour else ''}: {visible(f.hint)}")
        shown = units_shown(f)
        if hints and shown:
            lines.append(f"  {_DIM if colour else ''}unit: {visible(shown)}{_RESET if colour else ''}")
    if not quiet:
        lines.extend(_summary(findings))
    return "\n".join(lines) + ("\n" if lines else "")


def concise(findings: Sequence[Finding], colour: bool = False, quiet: bool = False) -> str:
    """One line a finding (no `help:` lines), then the summary."""
    return text(findings, colour=colour, quiet=quiet, hints=False)


def _summary(findings: Sequence[Finding]) -> list[str]:
    active = [f for f in findings if not f.suppressed]
    if not active:
        return [CLEAN]
    counts = {s: sum(1 for f in active if f.severity == s) for s in ("error", "warning", "info")}
    parts = ", ".join(f"{n} {s}{_s(n)}" for s, n in counts.items() if n)
    out = [f"Found {len(active)} finding{_s(len(active))} ({parts})."]
    can_fix = sum(1 for f in active if fixable(f))
    if can_fix:
        out.append(f"[*] {can_fix} fixable with the `--fix` option (`--diff` shows the change).")
    return out


def units_shown(f: Finding) -> str:
    """The units a finding was found in, for people; "" when that is only its file's own folder."""
    if not f.units:
        return ""
    if len(f.units) == 1 and f.units[0] == _folder(f.file):
        return ""
    return ", ".join(f.units)


def _folder(file: str) -> str:
    head = file.replace("\\", "/").rpartition("/")[0]
    return head or "."


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _message(f: Finding) -> str:
    where = f"{f.object}: " if f.object else ""
    return f"{where}{f.message}"


def as_json(findings: Sequence[Finding], colour: bool = False, quiet: bool = False) -> str:
    """A JSON array of findings with every field (and the rule's documentation `url`)."""
    import json  # here, not at the top: pre-commit's text output starts without json

    return _no_v1_command(json.dumps([_record(f) for f in findings], indent=2)) + "\n"


def _no_v1_command(dumped: str) -> str:
    """JSON text with `##[` (a GitHub workflow command anywhere in a line) written `##\\u005b`.

    Outside strings JSON has no `#`, so the escape lands in a string, where it means `[`.
    Control characters in strings are escaped by json.dumps itself.
    """
    return dumped.replace("##[", "##\\u005b")


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
        "fixable": fixable(f),
        "url": rule_url(f.code),
        "suppressed": f.suppressed or None,
        "unit": f.units[0] if f.units else None,
        "units": list(f.units),
        "approximate": f.approximate,
    }


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _artifact(file: str) -> dict[str, str]:
    """A SARIF artifactLocation: relative to %SRCROOT%, or a file URI for a path shown absolute (a base
    outside the current folder that an overlay linted from inside it reads)."""
    path = file.replace("\\", "/")
    if not path.startswith("/") and path[1:3] != ":/":
        return {"uri": path, "uriBaseId": "%SRCROOT%"}
    from urllib.parse import quote

    return {"uri": "file://" + quote(path if path.startswith("/") else "/" + path, safe="/:")}


def sarif(findings: Sequence[Finding], colour: bool = False, quiet: bool = False) -> str:
    """SARIF 2.1.0 with every rule described (and its `helpUri`) and real regions.

    Columns count Unicode code points (PyYAML's marks count characters), hence
    `columnKind: unicodeCodePoints` (SARIF 2.1.0 §3.14.19).
    """
    codes = sorted(RULES)
    index = {code: n for n, code in enumerate(codes)}
    rules = [
        {
            "id": code,
            "name": RULES[code].NAME,
            "shortDescription": {"text": summary(RULES[code])},
            "fullDescription": {"text": summary(RULES[code])},
            "helpUri": rule_url(code),
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
                        "artifactLocation": _artifact(f.file),
                        "region": {"startLine": f.line, "startColumn": f.column},
                    },
                    **({"logicalLocations": _logical(f)} if f.object or f.units else {}),
                }
            ],
            "properties": {"field": f.field, "object": f.object, "unit": f.units[0] if f.units else None,
                           "units": list(f.units), "approximate": f.approximate},
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
                        "informationUri": REPOSITORY,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    import json

    return _no_v1_command(json.dumps(document, indent=2)) + "\n"


def _logical(f: Finding) -> list[dict[str, str]]:
    """SARIF logical locations: the object, and each apply unit it was found in (kind `module`)."""
    found = [{"name": f.object, "kind": "object"}] if f.object else []
    found.extend({"name": unit, "kind": "module"} for unit in f.units)
    return found


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


_GITHUB_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def github(findings: Sequence[Finding], colour: bool = False, quiet: bool = False) -> str:
    """GitHub Actions workflow commands: `::error file=..,line=..,col=..,title=..::message`.

    The message's second line is the hint, its last the rule's documentation URL.
    """
    lines = []
    for f in findings:
        if f.suppressed:
            continue
        title = _escape_property(f"{f.code} {f.name}")
        shown = units_shown(f)
        message = _message(f) + (f" {APPROXIMATE}" if f.approximate else "")
        parts = (message, f.hint and f"help: {f.hint}", shown and f"unit: {shown}", rule_url(f.code))
        body = "\n".join(part for part in parts if part)
        lines.append(
            f"::{_GITHUB_LEVEL[f.severity]} file={_escape_property(f.file)},line={f.line},col={f.column},"
            f"title={title}::{_escape_data(body)}"
        )
    return "\n".join(lines) + ("\n" if lines else "")


# --- JUnit XML: GitLab, Jenkins and Azure DevOps read it as a test report ---

# What XML text cannot hold as it is, or a CI log must not see raw: markup, line ends and other
# controls, `##[`; C0 controls, lone surrogates (undecodable file names) and U+FFFE/U+FFFF are not
# XML 1.0 characters even as references, and are written as Python-style escapes instead
_XML_SPECIAL = "[&<>\"\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]|##\\["
_XML_NAMED = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "##[": "##&#91;"}


def _xml(value: str) -> str:
    """Text for an XML attribute or element, on one raw line: what it holds reads back as it was,
    but for characters XML 1.0 cannot carry at all."""
    import re

    return re.sub(_XML_SPECIAL, _xml_escape, value)


def _xml_escape(match: re.Match[str]) -> str:
    found = match.group()
    if found in _XML_NAMED:
        return _XML_NAMED[found]
    code = ord(found)
    if code in (9, 10, 13) or 0x7f <= code <= 0x9f or code in (0x2028, 0x2029):
        return f"&#{code};"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _default_fails(f: Finding) -> bool:
    return f.severity in ("error", "warning")  # the default `fail-on: warning`


def junit(findings: Sequence[Finding], colour: bool = False, quiet: bool = False,
          fails: Callable[[Finding], bool] = _default_fails) -> str:
    """JUnit XML: a testsuite per file, a testcase per finding (`classname` the file, as GitLab shows
    `classname` as the suite); a `<failure>` for each finding that fails the run (`fails`: the file's
    `fail-on`), a passing case with the finding as output for the others, `<skipped>` for a suppressed
    one. A clean run is one passing testcase, `fieldwarden lint`.

    Test names are `CODE name: object field` (`line N` for a finding on a file, not an object), stable
    when lines move: GitLab compares test names between branches, and keeps the first of two equal
    ones, so a repeat gets ` #2`.
    """
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.file, []).append(f)
    suites, totals = [], [0, 0]  # tests, failures (<testsuites> has no skipped count)
    for file, found in by_file.items():
        cases, counts, seen = [], [0, 0], set()
        for f in found:
            name = f"{f.code} {f.name}: {' '.join(x for x in (f.object, f.field) if x) or f'line {f.line}'}"
            base, n = name, 1
            while name in seen:
                n += 1
                name = f"{base} #{n}"
            seen.add(name)
            text = "&#10;".join(_xml(part) for part in _junit_lines(f))
            head = f'<testcase classname="{_xml(file)}" name="{_xml(name)}" time="0"'
            if f.suppressed:
                counts[1] += 1
                cases.append(f'{head}><skipped message="{_xml("suppressed by " + f.suppressed)}"/></testcase>')
            elif fails(f):
                counts[0] += 1
                message = _xml(f"{f.line}:{f.column}: {f.code} {f.severity}: {_message(f)}")
                cases.append(f'{head}><failure type="{f.severity}" message="{message}">{text}</failure></testcase>')
            else:
                cases.append(f"{head}><system-out>{text}</system-out></testcase>")
        suites.append(
            f'  <testsuite name="{_xml(file)}" tests="{len(found)}" failures="{counts[0]}" errors="0" '
            f'skipped="{counts[1]}" time="0" file="{_xml(file)}">\n'
            + "".join(f"    {case}\n" for case in cases) + "  </testsuite>"
        )
        totals = [totals[0] + len(found), totals[1] + counts[0]]
    if not suites:
        totals[0] = 1
        suites.append('  <testsuite name="fieldwarden" tests="1" failures="0" errors="0" skipped="0" time="0">\n'
                      '    <testcase classname="fieldwarden" name="fieldwarden lint" time="0"/>\n  </testsuite>')
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites name="fieldwarden" tests="{totals[0]}" failures="{totals[1]}" errors="0" time="0">\n'
        + "\n".join(suites) + "\n</testsuites>\n"
    )


def _junit_lines(f: Finding) -> list[str]:
    """The finding as text output shows it: `path:line:col: CODE severity: message`, help, unit, page."""
    shown = units_shown(f)
    head = f"{f.file}:{f.line}:{f.column}: {f.code} {f.severity}: {_message(f)}" + (
        f" {APPROXIMATE}" if f.approximate else "")
    return [head, *([f"help: {f.hint}"] if f.hint else []), *([f"unit: {shown}"] if shown else []),
            rule_url(f.code)]


# --- GitLab Code Quality: the merge request widget and the changes view ---

_GITLAB_SEVERITY = {"error": "major", "warning": "minor", "info": "info"}


def gitlab(findings: Sequence[Finding], colour: bool = False, quiet: bool = False) -> str:
    """GitLab Code Quality JSON (a subset of Code Climate's issues): one issue per unsuppressed finding.

    `location.path` is relative to the repository root (`$CI_PROJECT_DIR`, else the nearest folder
    above the current one holding `.git`); the fingerprint hashes the rule, that path, the object,
    the field path and the units, not the line, so an issue keeps its identity when lines move.
    """
    import json

    root = _repository_root()
    issues, seen = [], set()
    for f in findings:
        if f.suppressed:
            continue
        path = _from_root(f.file, root)
        key = "\0".join((f.code, path, f.object, f.field, *f.units, "" if f.object or f.field else f.message))
        fingerprint, n = _digest(key), 1
        while fingerprint in seen:  # the same field twice (a duplicated key): the next occurrence
            n += 1
            fingerprint = _digest(f"{key}\0{n}")
        seen.add(fingerprint)
        issues.append({
            "description": f"{f.code} {_message(f)}" + (f" {APPROXIMATE}" if f.approximate else ""),
            "check_name": f"{f.code} {f.name}",
            "fingerprint": fingerprint,
            "severity": _GITLAB_SEVERITY[f.severity],
            "location": {"path": path, "lines": {"begin": f.line}},
        })
    return _no_v1_command(json.dumps(issues, indent=2)) + "\n"


def _digest(key: str) -> str:
    from hashlib import sha256

    return sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _repository_root() -> str:
    import os

    found = os.environ.get("CI_PROJECT_DIR")
    if found:
        return os.path.realpath(found)
    here = folder = os.path.realpath(os.getcwd())
    while not os.path.exists(os.path.join(folder, ".git")):
        parent = os.path.dirname(folder)
        if parent == folder:
            return here
        folder = parent
    return folder


def _from_root(file: str, root: str) -> str:
    """`file` (as shown: relative to the current folder, or absolute) relative to `root`, with `/`."""
    import os

    if file == "-":
        return file
    full = os.path.realpath(os.path.join(os.getcwd(), file))
    relative = os.path.relpath(full, root) if os.path.splitdrive(full)[0] == os.path.splitdrive(root)[0] else full
    if relative == ".." or relative.startswith(".." + os.sep):
        return file.replace("\\", "/")  # outside the repository: as shown
    return relative.replace(os.sep, "/")


def statistics(findings: Sequence[Finding], structured: bool = False) -> str:
    """A count per rule, most frequent first (ruff's `--statistics`): `count  CODE  [*] name`."""
    counts: dict[str, list[int]] = {}
    for f in findings:
        if not f.suppressed:
            entry = counts.setdefault(f.code, [0, 0])
            entry[0] += 1
            entry[1] += fixable(f)
    order = sorted(counts, key=lambda code: (-counts[code][0], code))
    if structured:
        import json

        rows = [{"code": c, "name": RULES[c].NAME, "count": counts[c][0], "fixable": counts[c][1],
                 "url": rule_url(c)} for c in order]
        return _no_v1_command(json.dumps(rows, indent=2)) + "\n"
    width = max((len(str(counts[c][0])) for c in order), default=1)
    return "".join(
        f"{counts[c][0]:>{width}}\t{c}\t{'[*] ' if counts[c][1] else ''}{RULES[c].NAME}\n" for c in order
    )


FORMATTERS: dict[str, Callable[..., str]] = {
    "text": text, "concise": concise, "json": as_json, "sarif": sarif, "github": github,
    "junit": junit, "gitlab": gitlab,
}
