"""Output formats through the real CLI: text, json, sarif 2.1.0, github annotations."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from fieldwarden.cli import main
from tests.helpers import write

BROKEN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template: {}
"""
CLEAN = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b}
"""


def run(args: list[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["lint", "--no-context", "--select", "FW201", *args])
    return code, out.getvalue(), err.getvalue()


def test_text_is_grep_style_without_colour_off_a_tty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    code, out, _ = run([str(path)], monkeypatch)
    first = out.splitlines()[0]
    assert code == 0  # FW201 is info: shown, not failing
    assert first.startswith(f"{path}:5:1: FW201 info: Deployment/default/web: ")
    assert first.endswith("[strategy-type-missing]")
    assert out.splitlines()[1].startswith("  help: ")  # the hint, as ruff's `help:` line
    assert "\033[" not in out
    assert out.splitlines()[-1] == "Found 1 finding (1 info)."


@pytest.mark.parametrize(("code", "severity"), [("FW101", "error"), ("FW201", "info")])
def test_text_names_the_severity_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: str, severity: str
) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        main(["lint", "--no-context", "--select", code, "--format", "concise", str(path)])
    [line, summary] = out.getvalue().splitlines()  # concise: no help line
    assert line.startswith(f"{path}:")
    assert line.split(": ", 2)[1] == f"{code} {severity}"
    assert summary.startswith("Found 1 finding")


def test_fixable_findings_are_marked_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN.replace("  name: web\n", "  name: web\n  uid: abc\n"))
    code, out, _ = run(["--select", "FW306", str(path)], monkeypatch)
    assert code == 1
    assert out.splitlines()[0].startswith(f"{path}:5:3: FW306 [*] error: Deployment/default/web: ")
    assert out.splitlines()[-1] == "[*] 1 fixable with the `--fix` option (`--diff` shows the change)."


def test_colour_keeps_the_severity_word(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fieldwarden.linter.analyse import Finding
    from fieldwarden.linter.formats import text

    finding = Finding("web.yaml", 5, 1, "FW201", "warning", "Deployment/default/web", "spec.strategy.type",
                      "no strategy", "set it")
    coloured = text([finding], colour=True)
    assert "warning" in coloured and "\033[33m" in coloured
    plain = text([finding], colour=False)
    assert "warning:" in plain and "\033[" not in plain


def test_json_carries_every_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    _, out, _ = run(["--format", "json", str(path)], monkeypatch)
    [finding] = json.loads(out)
    assert finding == {
        "file": str(path), "line": 5, "column": 1, "code": "FW201", "name": "strategy-type-missing",
        "severity": "info", "object": "Deployment/default/web", "field": "spec.strategy.type",
        "message": finding["message"], "hint": finding["hint"], "suppressed": None,
        "fixable": False, "url": "https://fieldwarden.github.io/fieldwarden/rules/FW201/",
        "unit": tmp_path.as_posix(), "units": [tmp_path.as_posix()], "approximate": False,  # its folder (outside the project)
    }
    assert finding["message"] and finding["hint"]


def test_rule_urls_point_at_each_rules_page_on_the_docs_site() -> None:
    from fieldwarden.linter.formats import rule_url
    from fieldwarden.policies.links import DOCS
    from fieldwarden.policies.registry import RULES

    assert DOCS == "https://fieldwarden.github.io/fieldwarden/"
    assert {rule_url(code) for code in RULES} == {f"{DOCS}rules/{code}/" for code in RULES}
    mkdocs = Path(__file__).resolve().parents[2] / "mkdocs.yml"
    if mkdocs.is_file():  # the site's own address is the one the links use
        site_url = [line.split(":", 1)[1].strip().strip("'\"") for line in mkdocs.read_text().splitlines()
                    if line.startswith("site_url:")]
        assert site_url == [DOCS]


def test_sarif_has_rules_and_real_regions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    _, out, _ = run(["--format", "sarif", str(path)], monkeypatch)
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    [result] = log["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (result["ruleId"], result["level"], region["startLine"], region["startColumn"]) == ("FW201", "note", 5, 1)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert rules[result["ruleIndex"]]["id"] == "FW201"
    assert log["runs"][0]["columnKind"] == "unicodeCodePoints"
    assert all(rule["helpUri"] == f"https://fieldwarden.github.io/fieldwarden/rules/{rule['id']}/" for rule in rules)


def test_sarif_columns_count_code_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Astral characters before the field: one code point each, two UTF-16 units."""
    line = 'metadata: {labels: {e: "\U0001F600\U0001F600"}, uid: abc, name: web}'
    path = write(tmp_path, "cm.yaml", f"apiVersion: v1\nkind: ConfigMap\n{line}\n")
    code, out, _ = run(["--select", "FW306", "--format", "sarif", str(path)], monkeypatch)
    run_ = json.loads(out)["runs"][0]
    [result] = run_["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert run_["columnKind"] == "unicodeCodePoints"
    assert (region["startLine"], region["startColumn"]) == (3, line.index("uid") + 1)


def test_sarif_clean_run_has_empty_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "cm.yaml", CLEAN)
    code, out, _ = run(["--format", "sarif", str(path)], monkeypatch)
    assert code == 0
    assert json.loads(out)["runs"][0]["results"] == []


def test_github_annotations_escape_and_auto_detect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "a,b:c.yaml", BROKEN)
    _, out, _ = run([str(path)], monkeypatch, env={"GITHUB_ACTIONS": "true"})
    line = out.strip()
    assert line.startswith("::notice file=")
    assert "a%2Cb%3Ac.yaml,line=5,col=1,title=FW201 strategy-type-missing::" in line
    assert line.endswith("%0Ahttps://fieldwarden.github.io/fieldwarden/rules/FW201/")


def test_output_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "web.yaml", BROKEN)
    report = tmp_path / "report.json"
    code, out, _ = run(["--format", "json", "-o", str(report), "--fail-on", "info", str(path)], monkeypatch)
    assert (code, out) == (1, "")
    assert json.loads(report.read_text())[0]["code"] == "FW201"


# --- workflow-command injection: what the linted tree names must not command the CI runner ---

DUPLICATE_KEY = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  "k\\n::add-mask::key": a\n  "k\\n::add-mask::key": b\n'
TEMPLATE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\ndata:\n  {{- if .Values.x }}\n  a: b\n  {{- end }}\n"
HOSTILE_NAMES = {  # each with an error in it (FW002, and FW305 for their shared ConfigMap), but the template's
    "evil\n::add-mask::secret.yaml": DUPLICATE_KEY,  # a newline, then a command of its own line
    "::add-mask::start.yaml": DUPLICATE_KEY,  # a command where text output starts its line
    " ::add-mask::space.yaml": DUPLICATE_KEY,  # the runner strips leading white space
    "v1##[add-mask]old.yaml": DUPLICATE_KEY,  # the older form, honoured anywhere in a line
    "pct%0A::add-mask::x.yaml": DUPLICATE_KEY,  # GitHub's own escape, written as it is
    "tpl\n::add-mask::notice.yaml": TEMPLATE,  # skipped with a notice on stderr
}
# fieldwarden's own annotation: the properties escaped (no `:` or `,` in them), the data on one line
ANNOTATION = re.compile(r"::(error|warning|notice) file=([^:,]*),line=\d+,col=\d+,title=FW\d{3} [a-z-]+::[^\r\n]*")


def _unescape_property(value: str) -> str:
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(escaped, raw)  # the runner's order: `%25` last
    return value


@pytest.mark.parametrize("name", ["auto", "github", "text", "concise", "json", "sarif", "junit", "gitlab"])
def test_hostile_file_names_and_keys_issue_no_workflow_command(tmp_path: Path, name: str) -> None:
    for file, text in HOSTILE_NAMES.items():
        (tmp_path / file).write_text(text, encoding="utf-8")
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    process = subprocess.run([sys.executable, "-m", "fieldwarden", "lint", "--no-context", "--format", name, "."],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert process.returncode == 1, process.stderr
    assert "notice.yaml" in process.stderr and "skipped" in process.stderr  # the notice is there, on stderr
    annotated = set()
    for line in re.split(r"\r\n|\r|\n", process.stdout + process.stderr):  # lines as the runner reads them
        command = line.lstrip()  # (it strips leading white space first)
        if command.startswith("::"):
            match = ANNOTATION.fullmatch(command)
            assert match is not None and name in ("auto", "github"), line
            annotated.add(_unescape_property(match.group(2)))
        else:
            assert "##[" not in line, line  # `##[command]` counts anywhere in a line that is not `::` one
    if name in ("auto", "github"):  # each file with an error has its annotations, placed on its real name
        assert annotated == {file for file, text in HOSTILE_NAMES.items() if text is DUPLICATE_KEY}
    else:
        assert "add-mask::secret.yaml" in process.stdout  # still named, escaped


def test_diff_of_a_hostile_file_stops_workflow_commands_around_it(tmp_path: Path) -> None:
    """`--diff` prints the file's own lines: under GitHub Actions they are inside stop-commands."""
    exported = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  uid: abc\ndata:\n  k: |\n    ::add-mask::secret\n"
    (tmp_path / "evil\n::add-mask::name.yaml").write_text(exported, encoding="utf-8")
    env = {**os.environ, "GITHUB_ACTIONS": "true"}
    tokens = []
    for _ in range(2):
        process = subprocess.run([sys.executable, "-m", "fieldwarden", "lint", "--no-context", "--diff", "."],
                                 cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert process.returncode == 1, process.stderr
        stopped_by = ""
        seen = []
        for line in re.split(r"\r\n|\r|\n", process.stdout + process.stderr):
            command = line.lstrip()
            if stopped_by:
                stopped_by = "" if command == f"::{stopped_by}::" else stopped_by
                seen.append(line)
            elif command.startswith("::stop-commands::"):
                stopped_by = command.removeprefix("::stop-commands::")
                tokens.append(stopped_by)
            else:
                assert not command.startswith("::") and "##[" not in line, line
        assert not stopped_by  # commands resumed
        assert "     ::add-mask::secret" in seen  # the file's line, in the diff, while commands were stopped
    assert len(tokens) == 2 and tokens[0] != tokens[1] and len(tokens[0]) >= 32  # not guessable
