"""The registry's lines say of each rule what its module says, and a lookup imports only what it needs."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from fieldwarden.policies.registry import BY_NAME, RULES
from fieldwarden.policies.rule import ADMISSION, INPUT, LIVE, OBJECT, SET


@pytest.mark.parametrize("code", sorted(RULES))
def test_each_line_matches_its_module(code: str) -> None:
    rule = RULES[code]
    module = importlib.import_module(rule.__name__)
    assert (rule.CODE, rule.NAME, rule.SEVERITY, rule.SCOPE) == (module.CODE, module.NAME, module.SEVERITY, module.SCOPE)
    assert rule.SCOPE in (OBJECT, SET, INPUT, ADMISSION, LIVE)
    assert BY_NAME[rule.NAME] is rule
    if "KINDS" in vars(rule):  # an object rule whose module is imported only for objects of these kinds
        assert rule.SCOPE == OBJECT and rule.KINDS == module.KINDS
    else:
        assert not hasattr(module, "KINDS") or rule.SCOPE != OBJECT, "give the line the module's KINDS"


def test_every_rule_module_has_its_line() -> None:
    import pkgutil

    import fieldwarden.policies.rules as package

    modules = {f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")}
    assert modules == {rule.__name__ for rule in RULES.values()}


def test_the_rest_of_a_rule_comes_from_its_module() -> None:
    rule = RULES["FW101"]
    module = importlib.import_module(rule.__name__)
    assert rule.check is module.check and rule.DEFAULTS == module.DEFAULTS and rule.OPTIONS == module.OPTIONS
    assert rule.__doc__ == module.__doc__ and rule.__doc__
    with pytest.raises(AttributeError):
        rule.no_such_constant  # noqa: B018


def test_metadata_alone_imports_no_rule_module() -> None:
    code = (
        "import sys\n"
        "from fieldwarden.policies.registry import RULES, resolve\n"
        "assert resolve('apply-rejected-invalid').SEVERITY == 'error'\n"
        "assert [r.SCOPE for r in RULES.values()].count('live') == 10\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('fieldwarden.policies.rules.'))\n"
        "assert not loaded, loaded\n"
        "RULES['FW509'].check\n"
        "assert 'fieldwarden.policies.rules.kind_not_served' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
