"""What gets imported: `fieldwarden lint` stays light for pre-commit, and the layers stay apart.

Import-layering tests, not timing tests: they run real interpreters and read the modules
they loaded (`python -X importtime` lists every one, lazily imported ones included).
tests/test_meta.py checks the same layering statically, in the source text.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import write

WEBHOOK_STACK = ("flask", "gunicorn", "kubernetes", "werkzeug", "jsonschema")
# Standard modules a small lint has no use for; each costs 1-8 ms of a ~70 ms pre-commit run.
HEAVY_STDLIB = ("multiprocessing", "concurrent", "hashlib", "_hashlib", "json", "decimal", "subprocess", "pickle")

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  strategy: {type: RollingUpdate}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
"""


def imported(args: list[str], cwd: Path, codes: tuple[int, ...] = (0, 1)) -> set[str]:
    """Every module a `python -X importtime ARGS` run imported (top-level package names too)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "COVERAGE_"))}  # (.ci/coverage's)
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in codes, done.stderr
    modules = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "imported package" not in line:
            name = line.rsplit("|", 1)[1].strip()
            modules.add(name)
            modules.add(name.split(".")[0])
    assert "fieldwarden" in modules or "yaml" in modules  # the output was what we think it is
    return modules


def test_lint_without_configuration_imports_no_webhook_stack(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    modules = imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)
    assert "fieldwarden.linter.engine" in modules
    assert not modules & set(WEBHOOK_STACK)


def test_small_lint_imports_no_heavy_standard_modules(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    modules = imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)
    assert not modules & set(HEAVY_STDLIB), "import them where they are needed, not at the top"


def test_configuration_is_validated_once_then_jsonschema_stays_out(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    write(tmp_path, ".fieldwarden.yaml", "fail-on: error\n")
    first = imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)
    assert "jsonschema" in first  # the first run validates the configuration ...
    again = imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)
    assert not again & set(WEBHOOK_STACK)  # ... later runs remember it was valid


def test_policies_import_neither_front_end_nor_frameworks(tmp_path: Path) -> None:
    code = (
        "import pkgutil, fieldwarden.policies as p\n"
        "for m in pkgutil.walk_packages(p.__path__, 'fieldwarden.policies.'):\n"
        "    __import__(m.name)  # (-X importtime times import statements, not importlib.import_module)\n"
    )
    modules = imported(["-c", code], tmp_path)
    assert "fieldwarden.policies.registry" in modules
    assert "fieldwarden.policies.rules.duplicate_object" in modules
    forbidden = {m for m in modules if m.startswith(("fieldwarden.linter", "fieldwarden.webhook"))}
    assert not forbidden
    assert not modules & {"flask", "gunicorn", "kubernetes", "werkzeug"}


# What each run may load of fieldwarden, beyond the package and its command line.
LINTER = "fieldwarden.linter"
POLICIES = "fieldwarden.policies"


def _ours(modules: set[str]) -> set[str]:
    return {m for m in modules if m.startswith("fieldwarden.")} - {"fieldwarden.cli", "fieldwarden.__main__"}


def test_version_imports_nothing_but_the_command_line(tmp_path: Path) -> None:
    modules = imported(["-m", "fieldwarden", "--version"], tmp_path)
    assert "fieldwarden.cli" in modules
    assert _ours(modules) == set(), "--version needs neither the linter nor the rules"
    assert not modules & {"yaml", "json", *WEBHOOK_STACK, *HEAVY_STDLIB}


def test_rules_and_explain_import_the_rules_but_not_the_linter(tmp_path: Path) -> None:
    for args in (["rules"], ["explain", "FW101"]):
        modules = imported(["-m", "fieldwarden", *args], tmp_path)
        assert "fieldwarden.policies.registry" in modules, args
        assert not {m for m in modules if m.startswith(LINTER)}, args
        assert not modules & {"yaml", *WEBHOOK_STACK}, args


def test_a_plain_lint_command_line_is_read_without_argparse(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    modules = imported(["-m", "fieldwarden", "lint", "--format", "json", "-q", "deploy.yaml"], tmp_path)
    assert "fieldwarden.linter.engine" in modules
    assert not modules & {"argparse", "gettext", "locale"}
    helped = imported(["-m", "fieldwarden", "lint", "--fromat", "json", "deploy.yaml"], tmp_path, codes=(2,))
    assert "argparse" in helped  # a mistake gets argparse's usage and message


def test_one_file_lint_imports_no_fixer_cache_or_configuration_validator(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    modules = imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)
    assert {"yaml", "fieldwarden.linter.cli", "fieldwarden.linter.engine", "fieldwarden.policies.registry"} <= modules
    # --fix, the context cache and the configuration's JSON Schema are for other runs
    unused = {"fieldwarden.linter.fix", "fieldwarden.linter.cache", "jsonschema", "difflib", "hmac"}
    # nor the webhook's request model: the admission rules are read for their options only
    unused |= {"fieldwarden.policies.admission", "fieldwarden.policies.draft"}
    assert not modules & unused


def test_a_lint_that_reads_the_context_cache_loads_neither_openssl_nor_json(tmp_path: Path) -> None:
    # a git repository whose other manifests are large enough to go through the cache
    for index in range(80):  # ~26 kB: above engine.CACHE_MIN_BYTES
        write(tmp_path, f"apps/app{index}.yaml", DEPLOYMENT.replace("web", f"web{index}"))
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)  # fills the cache
    modules = imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)
    assert "fieldwarden.linter.cache" in modules
    assert not modules & {"hmac", "_hashlib", "hashlib"}, "the cache's MAC check needs no OpenSSL"
    assert not modules & {"json", "encodings.utf_8_sig", "fieldwarden.policies.managed_fields"}


# What a one-file lint defers: each is imported where it is needed, never by a clean plain lint.
DEFERRED = (
    "argparse", "gettext", "json", "jsonschema", "dataclasses", "concurrent.futures", "multiprocessing", "subprocess",
    "hashlib", "pickle", "decimal", "difflib", "inspect", "textwrap",
    "fieldwarden.terminal",  # (escapes what is printed: a clean run prints nothing of the tree)
    "fieldwarden.linter.fix", "fieldwarden.linter.units.renders", "fieldwarden.linter.units.helm",
    "fieldwarden.linter.units.kustomize", "fieldwarden.linter.live", "fieldwarden.policies.live",
    "fieldwarden.policies.managed_fields", "fieldwarden.policies.admission", "fieldwarden.policies.draft",
    # (read only when the project holds a test runner's manifest, an mkdocs configuration or a Go test)
    "fieldwarden.linter.units.testruns", "fieldwarden.linter.units.gotests", "fieldwarden.linter.units.docexamples",
    "fieldwarden.linter.units.reading",
    "fieldwarden.linter.units.not_linted",  # (FW007's record: with renders only)
    "fieldwarden.linter.units.gitops",  # (with an Argo CD or Flux object only: plan.py says which objects name units)
    "fieldwarden.linter.unitrun",  # (when something renders, or for `lint --cluster`: engine._PlainRun otherwise)
    "fieldwarden.linter.units.alternatives",  # (when two files of a plain folder share an object: engine._shares_objects)
)


def _loaded_by(code: str, cwd: Path) -> set[str]:
    """sys.modules at the end of `python -c CODE` (run as pre-commit runs the console script)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "COVERAGE_"))}  # (.ci/coverage's)
    listing = cwd.parent / f"{cwd.name}-modules.txt"
    dump = f"open({str(listing)!r}, 'w').write('\\n'.join(sys.modules))"
    # (a lint may end with os._exit: fieldwarden/cli.py's _exit_now; the listing is written first)
    ending = f"import os\ndef ending(code, end=os._exit):\n    {dump}\n    end(code)\nos._exit = ending\n"
    done = subprocess.run([sys.executable, "-c", f"import sys\n{ending}{code}\n{dump}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(listing.read_text().split())


def test_one_clean_file_lint_imports_none_of_the_deferred_modules(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo, "deploy.yaml", DEPLOYMENT)
    write(repo, "other.yaml", DEPLOYMENT.replace("web", "api"))
    subprocess.run(["git", "init", "-q", str(repo)], check=True,
                   env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")})
    lint = ("from fieldwarden.cli import main\nsys.argv = ['fieldwarden', 'lint', 'deploy.yaml']\n"
            "assert main() == 0, 'a clean file'")
    modules = _loaded_by(lint, repo) - _loaded_by("import yaml", repo)  # (what site imported is not the lint's)
    assert {"fieldwarden.linter.engine", "fieldwarden.policies.registry"} <= modules
    assert not modules & set(DEFERRED)
    assert not {m for m in modules if m.startswith(DEFERRED)}  # nor their submodules
    # rules that do not run in a lint (input, admission, live): their registry lines say enough
    from fieldwarden.policies.registry import RULES

    not_run = {rule.__name__ for rule in RULES.values() if rule.SCOPE not in ("object", "set")}
    assert len(not_run) == 20 and not modules & not_run


# What a one-file lint does without, as installed (regular install, nothing imported by `site`):
# each is a few ms of a ~45 ms pre-commit run (issue 23 row a); policies/records.py builds the
# NamedTuple classes without typing. pathlib (with urllib.parse, ipaddress, fnmatch, ntpath: ~15 M
# instructions, 7% of the run): file names are strings on this path (cli, discover, resolve, cache).
NOT_ON_THE_ONE_FILE_PATH = ("typing", "tempfile", "shutil", "threading", "zipfile", "importlib.resources",
                            "dataclasses", "argparse", "hashlib", "subprocess", "json", "pathlib", "urllib",
                            "ipaddress", "fnmatch", "ntpath")


def _installed_layout(target: Path) -> Path:
    """fieldwarden laid out as a wheel installs it (pyproject's package-dir), in target."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    root = Path(__file__).resolve().parents[2]
    layout = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, source in layout.items():
        folder = target.joinpath(*package.split("."))
        folder.mkdir(parents=True, exist_ok=True)
        for module in (root / source).iterdir():
            if module.suffix in (".py", ".json"):
                (folder / module.name).write_bytes(module.read_bytes())
    return target


def test_one_file_lint_as_installed_imports_no_typing(tmp_path: Path) -> None:
    import yaml

    repo = tmp_path / "repo"
    write(repo, "deploy.yaml", DEPLOYMENT)
    write(repo, "other.yaml", DEPLOYMENT.replace("web", "api").replace("strategy: {type: RollingUpdate}", "replicas: 2"))
    # a context over engine.CACHE_MIN_BYTES: it goes through the context cache (cache.py), as in most projects
    write(repo, "sub/settings.yaml", "".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n"
                                             f"data: {{key: {'v' * 200}}}\n" for i in range(80)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    site = _installed_layout(tmp_path / "site")
    # -S: no site, so no .pth file of the development environment imports anything first
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(Path(yaml.__file__).parent.parent)])
    listing = tmp_path / "modules.txt"
    # what is loaded when the lint ends (os._exit, fieldwarden/cli.py's _exit_now, or returning)
    dump = f"open({str(listing)!r}, 'w').write('\\n'.join([sys.modules['fieldwarden'].__file__, *sys.modules]))"
    code = ("import os, sys\nfrom fieldwarden.cli import main\nsys.argv = ['fieldwarden', 'lint', 'deploy.yaml']\n"
            f"def ending(code, end=os._exit):\n    {dump}\n    end(code)\nos._exit = ending\n"
            f"code = main()\n{dump}\nsys.exit(code)")
    for _ in range(2):  # the first run writes the context cache (tempfile); pre-commit's next runs read it
        done = subprocess.run([sys.executable, "-S", "-c", code], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0 and done.stdout == "All checks passed!\n", done.stdout + done.stderr
    package, *names = listing.read_text().split("\n")
    assert Path(package).is_relative_to(site)  # the laid-out copy, not the development checkout
    modules = set(names)
    assert {"yaml", "fieldwarden.linter.engine", "fieldwarden.policies.records", "fieldwarden.linter.cache"} <= modules
    assert (repo / ".fieldwarden_cache" / "context.cache").is_file()
    loaded = {m for m in modules if m in NOT_ON_THE_ONE_FILE_PATH or m.startswith(tuple(f"{n}." for n in NOT_ON_THE_ONE_FILE_PATH))}
    assert not loaded, "import them where they are needed (or only under TYPE_CHECKING), not at the top"


def test_object_rules_of_other_kinds_are_not_imported(tmp_path: Path) -> None:
    # a file of a Job and a ConfigMap: the strategy rules (Deployments, StatefulSets, DaemonSets) stay out
    write(tmp_path, "job.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\nspec:\n  template:\n"
          "    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n---\n"
          "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n")
    modules = imported(["-m", "fieldwarden", "lint", "job.yaml"], tmp_path)
    rules = "fieldwarden.policies.rules."
    assert rules + "selector_missing" in modules and rules + "live_object_export" in modules
    assert not {rules + name for name in ("strategy_type_missing", "rolling_update_without_rolling_type",
                                          "rollout_cannot_progress", "strategy_value_invalid",
                                          "partition_above_replicas")} & modules
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    assert rules + "strategy_type_missing" in imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)


def test_the_engine_reads_test_runs_for_every_name_they_act_on() -> None:
    # engine._read_tests leaves units/testruns.py out when no file has one of these names: a superset
    from fieldwarden.linter import engine
    from fieldwarden.linter.units import docexamples, gotests, testruns

    acted_on = {*testruns.CHAINSAW_TEST_FILES, *testruns.KYVERNO_TEST_FILES, *docexamples.MKDOCS_FILES}
    assert set(engine._TEST_NAMES) == acted_on
    assert gotests.GO_TEST_SUFFIX == "_test.go"
    assert engine._read_tests("/nowhere", ["a/kyverno-test.yaml"], []) == (frozenset({"a/kyverno-test.yaml"}), {})
    assert engine._read_tests("/nowhere", ["a/deploy.yaml"], ["main.go"]) == (frozenset(), {})


def test_a_one_file_lint_compiles_no_pattern_of_its_own(tmp_path: Path) -> None:
    # the loader's, the label syntax's and the placeholders' patterns: ~0.5 ms of a ~45 ms pre-commit run
    # (issue 23 row a). A Service and a budget beside a workload: the selector rules read every label.
    repo = tmp_path / "repo"
    write(repo, "deploy.yaml", DEPLOYMENT)
    write(repo, "service.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}}\n"
          "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, labels: {app.kubernetes.io/name: web}}\n"
          "spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True,
                   env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")})
    patterns = ("import re\nopen('patterns.txt', 'w').write('\\n'.join(repr(key) for key in re._cache))\n")
    lint = "from fieldwarden.cli import main\nassert main(['lint', 'service.yaml']) == 0, 'a clean file'\n"
    _loaded_by(f"import yaml\n{patterns}", repo)
    own = set((repo / "patterns.txt").read_text().splitlines())
    _loaded_by(f"{lint}{patterns}", repo)
    from fieldwarden.linter.loader import _DEEP_BLOCK  # (searched in every file: a line of 200 indents)

    compiled = set((repo / "patterns.txt").read_text().splitlines()) - own
    assert compiled == {repr((str, _DEEP_BLOCK.pattern, 0))}
