"""The linter's layers, read from the source: imports only go downwards.

- the lint core (linter/*.py) imports the live checks (linter/live/) only from cli.py, and
  there only inside a function (a lint without `--cluster` loads none of them);
- units/ imports, of the rest of the linter, only the core's readers (loader, cache): never
  the engine, the command line, the lint's rules over files and sets, or live/;
- nothing in linter/ imports the webhook.

Every import counts, at module level or inside a function. tests/linter/test_imports.py checks
what real runs load; this checks what the code could load.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINTER = "fieldwarden.linter"
LIVE = f"{LINTER}.live"
UNITS = f"{LINTER}.units"
UNITS_MAY_IMPORT = (UNITS, f"{LINTER}.loader", f"{LINTER}.cache")  # units/__init__.py says why


def is_under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def imports(module: str, source: str, is_package: bool = False) -> list[tuple[str, bool]]:
    """(absolute name, at module level) for every import of `source`, the module `module`.

    `from X import a` gives X and X.a (a may be a module of X)."""
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    top = {id(node) for node in tree.body}
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                source_module = f"{base}.{node.module}" if node.module else base
            else:
                source_module = node.module or ""
            found.append((source_module, id(node) in top))
            found += [(f"{source_module}.{alias.name}", id(node) in top) for alias in node.names]
    return found


def violations(modules: dict[str, tuple[str, bool]]) -> list[str]:
    """What breaks the layering, for {module name: (source, is a package's __init__)}."""
    bad = []
    for module, (source, is_package) in sorted(modules.items()):
        in_units, in_live = is_under(module, UNITS), is_under(module, LIVE)
        for name, module_level in imports(module, source, is_package):
            if is_under(name, "fieldwarden.webhook") or name.split(".")[0] == "webhook":
                bad.append(f"{module} imports the webhook ({name})")
            if in_units and is_under(name, LINTER) and not any(is_under(name, p) for p in UNITS_MAY_IMPORT):
                bad.append(f"{module} (units/) imports {name}")
            if not in_units and not in_live and is_under(name, LIVE):
                if module != f"{LINTER}.cli":
                    bad.append(f"{module} (core) imports the live checks ({name}): only cli.py may")
                elif module_level:
                    bad.append(f"{module} imports the live checks at module level ({name}): only inside a function")
            if in_units and is_under(name, LIVE):
                bad.append(f"{module} (units/) imports the live checks ({name})")
    return sorted(set(bad))


def linter_modules() -> dict[str, tuple[str, bool]]:
    modules = {}
    for path in sorted((REPO / "linter").rglob("*.py")):
        parts = path.relative_to(REPO / "linter").with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join((LINTER, *(parts[:-1] if is_package else parts)))
        modules[name] = (path.read_text(), is_package)
    return modules


def test_the_linter_imports_only_downwards() -> None:
    modules = linter_modules()
    # the walk found the three layers (the test is not vacuous)
    assert {f"{LINTER}.cli", f"{LINTER}.engine", f"{UNITS}.helm", f"{UNITS}.render_cache", f"{LIVE}.run"} <= set(modules)
    assert violations(modules) == []


def test_the_cli_reaches_the_live_checks_and_units_the_readers() -> None:
    # the allowed edges are there, so the rules above are read against real imports
    edges = {name for name, _ in imports(f"{LINTER}.cli", linter_modules()[f"{LINTER}.cli"][0])}
    assert f"{LIVE}.run" in edges
    render_cache, _ = linter_modules()[f"{UNITS}.render_cache"]
    assert f"{LINTER}.cache" in {name for name, _ in imports(f"{UNITS}.render_cache", render_cache)}


def test_the_checker_catches_each_kind_of_wrong_import() -> None:
    cases = {
        # the core reaching live/, at module level or in a function, relative or absolute
        f"{LINTER}.engine": ("from .live.checks import check\n", False),
        f"{LINTER}.sets": ("def f():\n    from . import live\n", False),
        f"{LINTER}.analyse": ("import fieldwarden.linter.live.run\n", False),
        # cli.py may, but only lazily
        f"{LINTER}.cli": ("from .live.run import run\n", False),
        # units/ reaching above the readers
        f"{UNITS}.helm": ("def f():\n    from ..engine import lint\n", False),
        f"{UNITS}.renders": ("from .. import sets\n", False),
        f"{UNITS}.gitops": ("from ..live import checks\n", False),
        f"{UNITS}.kustomize": ("from fieldwarden.linter.formats import text\n", False),
        # the webhook, from anywhere
        f"{LIVE}.cluster": ("from ...webhook.kube import client\n", False),
        f"{LINTER}.fix": ("import webhook\n", False),
        f"{UNITS}": ("from ...webhook import server\n", True),
    }
    found = violations(cases)
    for module in cases:
        assert any(line.startswith(module + " ") for line in found), (module, found)


def test_the_checker_lets_the_allowed_imports_pass() -> None:
    allowed = {
        f"{LINTER}.cli": ("def main():\n    from .live.run import run\n    from .live.checks import LiveError\n", False),
        f"{LINTER}.engine": ("from .units.plan import plan\nfrom ..policies.config import Settings\n", False),
        f"{UNITS}.render_cache": ("from ... import __version__\nfrom ..cache import digest\nfrom .plan import RenderJob\n",
                                  False),
        f"{UNITS}.helm": ("from . import helm_child\nfrom ..loader import load\n", False),
        f"{LIVE}.run": ("from ..engine import Report\nfrom ..units.plan import Unit\nfrom .checks import check\n", False),
    }
    assert violations(allowed) == []
