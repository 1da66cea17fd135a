"""Repositories shaped like real ones, linted as their users lint them: exactly the marked findings.

Each folder of tests/fixtures/repos/ is a repository of its own (its README.md says what each
shows): it is copied into a fresh git repository and `fieldwarden lint` runs from its root with
no arguments, then once more with `--include-fixtures`. A finding is expected where a comment
marks it:

    replicas: 6  # <- FW301
    spec:  # <- FW101 (with fixtures) <- FW201 (with fixtures)
    {{ include "x" . }}  # <- FW104 (approximate)

`(approximate)`: the finding is placed there and says its place is approximate; `(with
fixtures)`: only with `--include-fixtures`. Every finding must be marked and every marker met,
by (file, line, code, approximate). Then each marked file is linted alone, as pre-commit passes
a changed file: it reports its own markers and nothing else.

A finding is reported once, naming every unit it was found in. Where fieldwarden still
differs from all this, KNOWN_DEFECTS says how and why: the tests hold today's behaviour
there, and `test_as_marked` (then a strict xfail) fails once a defect is fixed, so that its
entry is removed.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from fieldwarden.linter.units import tools
from tests.helpers import FIXTURES, Run, lint

REPOS = FIXTURES / "repos"
NAMES = sorted(path.name for path in REPOS.iterdir() if path.is_dir())
MARKER = re.compile(r"<- (FW\d{3})((?: \((?:approximate|with fixtures)\))*)")
TEXT_SUFFIXES = (".yaml", ".yml", ".tpl")

pytestmark = pytest.mark.skipif(
    tools.find_kustomize() is None or importlib.util.find_spec("helm_python") is None,
    reason="rendering needs kustomize and Helm's engine: pip install 'fieldwarden[render]'",
)


class Hit(NamedTuple):
    """A finding as a marker describes it."""

    file: str
    line: int
    code: str
    approximate: bool = False


# Test fixture files each repository holds: left out unless --include-fixtures, with a notice.
FIXTURE_FILES = {"operator": 8, "kyverno-tests": 15, "argocd-go-tests": 2}  # the chainsaw test files themselves count too

# Repositories whose point is that nothing is reported (each once gave false errors: its README says which).
CLEAN = {"flux-multi-tenancy", "kubebuilder-v3", "argocd-docs"}

# The units a few findings were found in, where that is what the finding is about.
UNITS: dict[tuple[str, str, int, str], list[str]] = {
    ("flux-fleet", "apps/base/storefront/deployment.yaml", 18, "FW203"): [
        "apps/production (Flux Kustomization flux-system/apps, namespace storefront)",
        "apps/staging (Flux Kustomization flux-system/apps, namespace storefront)",
    ],
    ("flux-fleet", "apps/base/storefront/configmap.yaml", 4, "FW305"): [
        "apps/production (Flux Kustomization flux-system/apps, namespace storefront)",
    ],
    ("flux-fleet", "clusters/staging/flux-system/gotk-components.yaml", 189, "FW201"): [
        "clusters/staging (Flux Kustomization flux-system/flux-system)",
    ],
    ("kustomize-app", "deploy/base/api.yaml", 9, "FW105"): ["deploy/overlays/prod (kustomize)"],
    ("helm-chart", "charts/ledger/templates/deployment.yaml", 9, "FW301"): ["charts/ledger (helm, ci/ha-values.yaml)"],
    ("helm-chart", "charts/ledger/values.yaml", 35, "FW202"): ["charts/ledger (helm, ci/recreate-values.yaml)"],
    ("argocd-apps", "workloads/guestbook/guestbook-ui-deployment.yaml", 5, "FW201"): [
        "workloads/guestbook (Argo CD Application argocd/guestbook-production, namespace guestbook)",
        "workloads/guestbook (Argo CD Application argocd/guestbook-staging, namespace guestbook-staging)",
    ],
    ("argocd-apps", "charts/status-page/values-production.yaml", 5, "FW304"): [
        "charts/status-page (Argo CD Application argocd/status-page, namespace status)",
    ],
    ("argocd-apps", "workloads/monitoring/exporters/kube-state-metrics.yaml", 16, "FW301"): [
        "workloads/monitoring (Argo CD Application argocd/monitoring, namespace monitoring)",
    ],
}


class Defect(NamedTuple):
    """Where fieldwarden differs from the markers today."""

    missing: frozenset[Hit]  # marked, but not reported so
    extra: frozenset[Hit]  # reported, but not marked
    why: str
    repeated: frozenset[Hit] = frozenset()  # reported more than once (a finding is reported once, naming its units)


KNOWN_DEFECTS: dict[str, Defect] = {}


# -- reading the markers -----------------------------------------------------------------------

def markers(root: Path, with_fixtures: bool) -> set[Hit]:
    """The findings a repository's markers expect."""
    expected: set[Hit] = set()
    for path in sorted(root.rglob("*")):
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        name = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            comment = line.find("#")
            if comment < 0:
                continue
            for match in MARKER.finditer(line, comment):
                flags = match.group(2)
                if "(with fixtures)" in flags and not with_fixtures:
                    continue
                expected.add(Hit(name, number, match.group(1), "(approximate)" in flags))
    return expected


def today(name: str, expected: set[Hit]) -> set[Hit]:
    """What fieldwarden reports today where the markers expect `expected` (see KNOWN_DEFECTS)."""
    defect = KNOWN_DEFECTS.get(name)
    if defect is None:
        return expected
    return (expected - defect.missing) | defect.extra


# -- running it ---------------------------------------------------------------------------------

def checkout(name: str, into: Path) -> Path:
    """The repository as a user has it: its own git work tree."""
    root = into / name
    shutil.copytree(REPOS / name, root)
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    return root


def reported(run: Run) -> set[Hit]:
    assert "Traceback" not in run.stderr, run.stderr
    # (FW603, info: a custom resource whose CRD the repository lacks, as most of these lack their operators' CRDs;
    # tests/policies/rules/test_kind_not_validated.py is its test)
    return {Hit(f["file"], f["line"], f["code"], bool(f.get("approximate"))) for f in run.findings
            if not f["suppressed"] and f["code"] != "FW603"}


def repeated(run: Run) -> set[Hit]:
    """Findings reported more than once: the same rule on the same field at the same place."""
    seen: dict[tuple[Hit, str], int] = {}
    for f in run.findings:
        if not f["suppressed"]:
            key = (Hit(f["file"], f["line"], f["code"]), f["field"])
            seen[key] = seen.get(key, 0) + 1
    return {hit for (hit, _), count in seen.items() if count > 1}


def repeated_today(name: str) -> set[Hit]:
    defect = KNOWN_DEFECTS.get(name)
    return set(defect.repeated) if defect is not None else set()


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every repository, checked out once for this module (the render cache fills on first use)."""
    base = tmp_path_factory.mktemp("repos")
    return {name: checkout(name, base) for name in NAMES}


def test_the_corpus_is_complete() -> None:
    assert NAMES == ["argocd-addons", "argocd-apps", "argocd-docs", "argocd-go-tests", "argocd-redis-ha", "autopilot-bootstrap", "examples-folder", "flux-fleet", "flux-multi-tenancy",
                     "helm-chart", "install-variants", "kubebuilder-v3", "kubeflow-failed-render", "kustomize-app", "kyverno-tests", "operator",
                     "sample-folders", "shop-chart-and-kustomize"]
    for name in NAMES:
        assert markers(REPOS / name, with_fixtures=False) or name in FIXTURE_FILES or name in CLEAN, name


@pytest.mark.parametrize("name", NAMES)
def test_lint_from_the_root_reports_the_marked_findings(name: str, repos: dict[str, Path]) -> None:
    root = repos[name]
    expected = markers(root, with_fixtures=False)
    run = lint([], cwd=root)
    assert reported(run) == today(name, expected)
    assert repeated(run) == repeated_today(name)
    errors = any(f["severity"] == "error" for f in run.findings if not f["suppressed"])
    assert run.code == (1 if errors else 0)
    assert "not linted" not in run.stderr, run.stderr  # every unit rendered
    left_out = FIXTURE_FILES.get(name, 0)
    if left_out:
        assert f"left out {left_out} test fixture files" in run.stderr
    else:
        assert "left out" not in run.stderr
    for finding in run.findings:
        key = (name, finding["file"], finding["line"], finding["code"])
        if key in UNITS:
            assert sorted(finding["units"]) == UNITS[key], key
    again = lint([], cwd=root)  # from the render cache now: the same report
    assert (again.code, again.findings) == (run.code, run.findings)


@pytest.mark.parametrize("name", NAMES)
def test_include_fixtures_adds_the_fixtures_markers(name: str, repos: dict[str, Path]) -> None:
    root = repos[name]
    run = lint(["--include-fixtures"], cwd=root)
    assert reported(run) == today(name, markers(root, with_fixtures=True))
    assert repeated(run) == repeated_today(name)
    assert "left out" not in run.stderr


@pytest.mark.parametrize("name", NAMES)
def test_each_marked_file_alone_reports_its_own_markers(name: str, repos: dict[str, Path]) -> None:
    """pre-commit passes the changed files: each is linted in every unit holding it, the rest as context.

    Its own markers are reported, and what it causes in other files of its units (issue 22, item 8):
    never anything the whole project's run does not report."""
    root = repos[name]
    expected = today(name, markers(root, with_fixtures=False))
    for file in sorted({hit.file for hit in expected}):
        found = reported(lint([file], cwd=root))
        assert {hit for hit in found if hit.file == file} == {hit for hit in expected if hit.file == file}, file
        assert found <= expected, file


def test_units_named_in_the_table_are_marked() -> None:
    for name, file, line, code in UNITS:
        assert any(hit[:3] == (file, line, code) for hit in markers(REPOS / name, with_fixtures=True)), (name, file, line)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_DEFECTS[name].why)] if name in KNOWN_DEFECTS else [])
    for name in NAMES
])
def test_as_marked(name: str, repos: dict[str, Path]) -> None:
    """Exactly the markers, each finding once (a strict xfail while a known defect stands)."""
    root = repos[name]
    run = lint([], cwd=root)
    assert (reported(run), repeated(run)) == (markers(root, with_fixtures=False), set())
    run = lint(["--include-fixtures"], cwd=root)
    assert (reported(run), repeated(run)) == (markers(root, with_fixtures=True), set())


# What a few findings say about the objects involved: the rendered object's namespace in its unit,
# and the source line of the other object. (file, line, code) -> (JSON key, text it holds).
WORDS = {
    ("flux-fleet", "apps/base/storefront/configmap.yaml", 4, "FW305"): ("message", "also at apps/production/storefront-config.yaml:5)"),
    ("flux-fleet", "apps/production/storefront-capacity.yaml", 7, "FW301"): ("message", "(apps/base/storefront/hpa.yaml:4)"),
    ("flux-fleet", "apps/base/storefront/deployment.yaml", 18, "FW203"): ("object", "Deployment/storefront/storefront"),
    ("kustomize-app", "deploy/base/api.yaml", 9, "FW105"): ("message", "(deploy/components/canary/api-canary.yaml:5)"),
    ("argocd-apps", "workloads/guestbook/guestbook-ui-deployment.yaml", 5, "FW201"): ("object", "Deployment/guestbook"),
}


def test_messages_name_source_lines_and_unit_namespaces(repos: dict[str, Path]) -> None:
    wrong = []
    for (name, file, line, code), (key, text) in WORDS.items():
        found = [f for f in lint([file], cwd=repos[name]).findings if (f["line"], f["code"]) == (line, code)]
        if not found or text not in str(found[0][key]):
            wrong.append((name, file, line, code, found[0][key] if found else None))
    assert wrong == []
