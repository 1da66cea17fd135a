"""Imports only go downwards: the policy core is at the bottom, the exporter and the webhook above it.

Every import of every module is read with `ast` (at module level and inside functions, relative
ones resolved as the installed package `fieldwarden` sees them) and held to these rules:

- policies/ (policies/export/ included) imports nothing of fieldwarden but the policy core itself
  (and `__version__` from the top package): not the linter, the webhook, nor fieldwarden's command
  line (`fieldwarden.cli`, `fieldwarden.commands`, `fieldwarden.export`), and none of the webhook's or
  the cluster's libraries (Flask, gunicorn, the kubernetes client, ...);
- the policy core outside policies/export/ does not import the exporter (which is called by the
  command line and the Helm scripts, not by the rules);
- webhook/ imports neither the linter nor the exporter (`fieldwarden.policies.export`);
- `fieldwarden export` (fieldwarden/export.py) imports no webhook module: it reads its
  configuration through the policy core's loader (policies.config.load_settings).

The linter's own rules are in tests/linter/test_layers.py.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[2]
# The repository folders as pyproject.toml installs them under the one import name.
FOLDERS = {"fieldwarden": "fieldwarden", "policies": "fieldwarden.policies", "webhook": "fieldwarden.webhook",
           "linter": "fieldwarden.linter"}
CLI_MODULES = ("fieldwarden.cli", "fieldwarden.commands", "fieldwarden.export")
# What the webhook and `lint --cluster` bring; the policy core starts without any of them.
CLUSTER_LIBRARIES = ("flask", "werkzeug", "gunicorn", "gevent", "kubernetes", "orjson", "prometheus_client",
                     "cryptography")


class Import(NamedTuple):
    line: int
    name: str  # absolute and dotted: `fieldwarden.webhook.server.serve`, or `fieldwarden.__version__` for a name


def module_name(path: Path) -> str:
    """The dotted name a repository file installs as: policies/export/cel.py -> fieldwarden.policies.export.cel."""
    parts = path.relative_to(REPO).with_suffix("").parts
    dotted = [FOLDERS[parts[0]], *parts[1:]]
    if dotted[-1] == "__init__":
        dotted.pop()
    return ".".join(dotted)


def imports(source: str, module: str, is_package: bool = False) -> Iterator[Import]:
    """Every import in `source` (module `module`), relative ones made absolute.

    `from A import B` yields `A.B` (B may be a module or a name in A: both are checked as
    prefixes, so that `from fieldwarden import cli` counts as importing fieldwarden.cli).
    """
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                if node.level - 1 > len(package) or not base:
                    raise AssertionError(f"{module}:{node.lineno}: a relative import beyond the top package")
                origin = ".".join([*base, node.module] if node.module else base)
            else:
                origin = node.module or ""
            if origin != "__future__":
                for alias in node.names:
                    yield Import(node.lineno, origin if alias.name == "*" else f"{origin}.{alias.name}")


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


# A rule: (which files, what an import must not be, why).
Rule = tuple[str, Callable[[str], bool], str]


def core_forbids(name: str) -> bool:
    if name.split(".")[0] in CLUSTER_LIBRARIES:
        return True
    if not under(name, "fieldwarden"):
        return False  # the standard library, PyYAML, jsonschema
    return not (under(name, "fieldwarden.policies") or name == "fieldwarden.__version__")


RULES: list[Rule] = [
    ("policies/**/*.py", core_forbids,
     "the policy core (and its exporter) imports only itself: no linter, webhook, command line or cluster library"),
    ("policies/*.py", lambda name: under(name, "fieldwarden.policies.export"),
     "the policy core does not import its exporter"),
    ("policies/rules/**/*.py", lambda name: under(name, "fieldwarden.policies.export"),
     "the policy core does not import its exporter"),
    ("webhook/**/*.py", lambda name: under(name, "fieldwarden.linter") or under(name, "fieldwarden.policies.export"),
     "the webhook imports neither the linter nor the exporter"),
    ("fieldwarden/export.py", lambda name: under(name, "fieldwarden.webhook"),
     "`fieldwarden export` reads its configuration through policies.config, not the webhook"),
]


def violations(path: Path, source: str, forbids: Callable[[str], bool]) -> list[str]:
    module = module_name(path)
    return [f"{path.relative_to(REPO)}:{found.line}: {found.name}"
            for found in imports(source, module, path.name == "__init__.py")
            if forbids(found.name)]


def files(pattern: str) -> list[Path]:
    found = sorted(REPO.glob(pattern))
    assert found, f"no file matches {pattern}: the layout changed, update this test"
    return found


@pytest.mark.parametrize("pattern, forbids, why", RULES, ids=[rule[0] for rule in RULES])
def test_imports_only_go_downwards(pattern: str, forbids: Callable[[str], bool], why: str) -> None:
    bad = [line for path in files(pattern) for line in violations(path, path.read_text(encoding="utf-8"), forbids)]
    assert not bad, why + ":\n" + "\n".join(bad)


def test_the_exporter_is_covered() -> None:
    assert REPO / "policies" / "export" / "assemble.py" in files("policies/**/*.py")


@pytest.mark.parametrize("file, source", [
    ("policies/config.py", "from ..linter import engine\n"),
    ("policies/export/assemble.py", "def f():\n    from ...webhook.server.serve import load_settings\n"),
    ("policies/export/cel.py", "from ... import cli\n"),
    ("policies/rules/pod_update_not_image_only.py", "import fieldwarden.export\n"),
    ("policies/selectors.py", "def f():\n    import kubernetes.client\n"),
    ("policies/selectors.py", "from fieldwarden.commands import main\n"),
])
def test_the_check_catches_a_bad_import_in_the_policy_core(file: str, source: str) -> None:
    assert violations(REPO / file, source, core_forbids)
    assert all(core_forbids(name) for name in CLI_MODULES)


@pytest.mark.parametrize("file, source, rule", [
    ("policies/registry.py", "from .export import assemble\n", 1),
    ("policies/rules/pod_without_readiness_gate.py", "from ..export.cel import literal\n", 2),
    ("webhook/server/serve.py", "from ...policies import export\n", 3),
    ("webhook/gate/process.py", "def f():\n    from ...linter.engine import lint\n", 3),
    ("fieldwarden/export.py", "def run():\n    from .webhook.server.serve import load_settings\n", 4),
])
def test_the_check_catches_a_bad_import_across_layers(file: str, source: str, rule: int) -> None:
    pattern, forbids, _ = RULES[rule]
    assert REPO / file in files(pattern)
    assert violations(REPO / file, source, forbids)


@pytest.mark.parametrize("file, source", [
    ("policies/export/fw401.py", "from ..rules import pod_update_not_image_only as rule\nfrom .cel import literal\n"),
    ("policies/config.py", "from .. import __version__\nimport yaml\nimport json\n"),
    ("webhook/server/serve.py", "from ...policies.config import load_settings\n"),
])
def test_the_check_lets_allowed_imports_through(file: str, source: str) -> None:
    assert not violations(REPO / file, source, core_forbids if file.startswith("policies") else RULES[3][1])


def test_relative_imports_are_resolved_as_installed() -> None:
    found = [i.name for i in imports("from . import fw401\nfrom ..config import Settings\nfrom .. import rules\n",
                                     "fieldwarden.policies.export.assemble")]
    assert found == ["fieldwarden.policies.export.fw401", "fieldwarden.policies.config.Settings",
                     "fieldwarden.policies.rules"]
    assert [i.name for i in imports("from .cel import x\n", "fieldwarden.policies.export", is_package=True)] == [
        "fieldwarden.policies.export.cel.x"]
