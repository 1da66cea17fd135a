"""Meta-tests: every rule is documented, tested, listed, and the layers stay apart."""

from __future__ import annotations

import ast
import importlib.util
import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from fieldwarden.cli import main
from fieldwarden.policies.model import SEVERITIES
from fieldwarden.policies.registry import BY_NAME, RULES
from fieldwarden.policies.rule import ADMISSION, INPUT, LIVE, OBJECT, SET

REPO = Path(__file__).resolve().parent.parent
# The docs site's generator (docgen/pages.py: the rules index and one page per rule), outside the package
_spec = importlib.util.spec_from_file_location("docgen_pages", REPO / "docgen" / "pages.py")
assert _spec is not None and _spec.loader is not None
docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs)
HEADINGS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_metadata_and_docs(code: str) -> None:
    rule = RULES[code]
    assert rule.CODE == code and re.fullmatch(r"FW\d{3}", code)
    assert re.fullmatch(r"[a-z]+(-[a-z0-9]+)+", rule.NAME)
    assert rule.SEVERITY in SEVERITIES
    assert rule.SCOPE in (INPUT, OBJECT, SET, ADMISSION, LIVE)
    doc = rule.__doc__ or ""
    for heading in HEADINGS:
        assert heading in doc, f"{code} docs lack {heading!r}"
    if rule.SCOPE == OBJECT:
        assert callable(rule.check)
    if rule.SCOPE == SET:
        assert callable(rule.check_set) and isinstance(rule.CONTEXT_PATHS, tuple)
    if rule.SCOPE == LIVE:
        assert callable(rule.check) and rule.CODE.startswith("FW5")
    if rule.SCOPE == ADMISSION:
        assert callable(getattr(rule, "validate", None)) != callable(getattr(rule, "mutate", None))
    assert set(rule.DEFAULTS) <= set(rule.OPTIONS)


def test_codes_and_names_are_unique() -> None:
    assert len(BY_NAME) == len(RULES)


@pytest.mark.parametrize("code", sorted(c for c, r in RULES.items() if r.SCOPE != INPUT))
def test_rule_has_a_test_file(code: str) -> None:
    module = RULES[code].__name__.rsplit(".", 1)[1]
    assert (REPO / "tests" / "policies" / "rules" / f"test_{module}.py").is_file()


def test_input_rules_are_exercised_by_linter_tests() -> None:
    text = "".join(p.read_text() for p in (REPO / "tests" / "linter").rglob("test_*.py"))
    for code, rule in RULES.items():
        if rule.SCOPE == INPUT:
            assert code in text, f"no linter test mentions {code}"


def test_every_rule_is_in_the_docs_index_has_its_page_and_is_listed_by_the_cli() -> None:
    index, pages = docs.rules_index(), docs.rule_pages()
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["rules"]) == 0
    for code, rule in RULES.items():
        assert f"| [{code}]({code}.md) | {rule.NAME} | {rule.SEVERITY} | {rule.SCOPE} |" in index
        markdown = io.StringIO()
        with redirect_stdout(markdown):
            assert main(["explain", code, "--format", "markdown"]) == 0
        assert pages[f"rules/{code}.md"] == markdown.getvalue()
        assert re.search(rf"^{code}\s+{rule.NAME}\s", out.getvalue(), re.M)


def test_explain_prints_the_rule_page_and_refuses_unknown() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["explain", "strategy-type-missing"]) == 0
    assert out.getvalue().startswith("FW201 strategy-type-missing (info)\n=====")
    assert main(["explain", "FW999"]) == 2


def _imports(folder: Path, but: tuple[str, ...] = (), only: tuple[str, ...] = ()) -> set[str]:
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        if path.name in but or only and path.name not in only:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                prefix = "." * node.level
                found.add(prefix + (node.module or ""))
    return found


def test_policies_import_neither_front_end_nor_frameworks() -> None:
    imports = _imports(REPO / "policies")
    forbidden = ("flask", "gunicorn", "kubernetes", "fieldwarden.linter", "fieldwarden.webhook")
    bad = {i for i in imports if i.startswith(forbidden) or re.match(r"\.\.+(linter|webhook)", i)}
    assert not bad


def test_linter_does_not_import_the_webhook_stack() -> None:
    imports = _imports(REPO / "linter", but=("cluster.py",))
    assert not {i for i in imports if i.startswith(("flask", "gunicorn", "kubernetes")) or "webhook" in i}
    # the edge of `lint --cluster` uses the Kubernetes client, and nothing of the webhook
    edge = _imports(REPO / "linter", only=("cluster.py",))
    assert {i for i in edge if i.startswith("kubernetes")} and not {i for i in edge if "webhook" in i}
