"""The GitHub Action (action.yml) and the GitLab CI example (docs/examples/gitlab-ci.yml), run locally.

Each `run:` step of the action is executed as the runner executes a `shell: bash` step
(`bash --noprofile --norc -eo pipefail FILE`), with its `env:` expressions evaluated from the
inputs, and `$GITHUB_OUTPUT` read back for the next steps; the `uses:` steps (setup-python,
upload-sarif) are GitHub's own and are checked for what they are given. The install step really
installs this working tree, with the default extras, into a virtualenv that sees the system's
packages (so the extras' dependencies are there already). The GitLab job's script lines run the
same way, one after the other until one fails, as GitLab runs them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from lxml import etree

from tests.helpers import FIXTURES, write

REPO = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
GITLAB = yaml.safe_load((REPO / "docs" / "examples" / "gitlab-ci.yml").read_text(encoding="utf-8"))
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")

BROKEN = (FIXTURES / "formats" / "no-selector.yaml").read_text(encoding="utf-8")  # FW101, FW201
CLEAN = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"


def _steps() -> list[dict[str, Any]]:
    return list(ACTION["runs"]["steps"])


def test_the_action_is_composite_and_every_input_is_used() -> None:
    assert ACTION["runs"]["using"] == "composite"
    text = (REPO / "action.yml").read_text(encoding="utf-8")
    used = set(re.findall(r"\$\{\{\s*inputs\.([\w-]+)", text))
    assert used == set(ACTION["inputs"])  # none declared and forgotten, none used and not declared
    for step in _steps():
        if "run" in step:
            assert step["shell"] == "bash"
            assert "${{" not in step["run"], step["name"]  # inputs reach scripts as environment only
    uses = {step["uses"].split("@")[0]: step for step in _steps() if "uses" in step}
    assert set(uses) == {"actions/setup-python", "github/codeql-action/upload-sarif"}
    lint = next(step for step in _steps() if step.get("id") == "lint")
    for name, output in ACTION["outputs"].items():  # each output is one the lint step writes
        assert output["value"] == f"${{{{ steps.lint.outputs.{name} }}}}"
        assert f'echo "{name}=' in lint["run"]


class Runner:
    """Runs the action's steps as a runner would, on one workspace."""

    def __init__(self, workspace: Path, env: dict[str, str], inputs: dict[str, str]) -> None:
        self.workspace, self.env = workspace, env
        self.inputs = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
        unknown = set(inputs) - set(self.inputs)
        assert not unknown, unknown
        self.inputs.update(inputs)
        self.outputs: dict[str, dict[str, str]] = {}

    def value(self, expression: str) -> str:
        """An expression of the forms action.yml uses: inputs.X, github.action_path, steps.ID.outputs.X."""
        parts = expression.split(".")
        if parts[0] == "inputs":
            return self.inputs[parts[1]]
        if parts[:2] == ["github", "action_path"]:
            return str(REPO)
        if parts[0] == "steps" and parts[2] == "outputs":
            return self.outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"an expression the test does not know: {expression}")

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.value(m.group(1)), text)

    def condition(self, text: str) -> bool:
        match = re.fullmatch(r"\$\{\{\s*inputs\.([\w-]+) == '([^']*)'\s*\}\}", text)
        assert match, text
        return self.inputs[match.group(1)] == match.group(2)

    def run(self, step: dict[str, Any], tmp: Path) -> subprocess.CompletedProcess[str]:
        script = tmp / f"{step.get('id', 'step')}.sh"
        script.write_text(step["run"], encoding="utf-8")
        output = tmp / f"{step.get('id', 'step')}.out"
        output.write_text("", encoding="utf-8")
        env = {**self.env, **{k: self.substitute(str(v)) for k, v in step.get("env", {}).items()},
               "GITHUB_OUTPUT": str(output), "GITHUB_ACTIONS": "true", "GITHUB_ACTION_PATH": str(REPO)}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=self.workspace, env=env, capture_output=True, text=True, timeout=600)
        if "id" in step:
            self.outputs[step["id"]] = dict(
                line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines() if "=" in line)
        return done


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_", "CI_"))}
    return {**env, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment after the action's install step ran with its default inputs (this working tree)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    env = {**_git_env(), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    install = next(step for step in _steps() if step.get("id") == "install")
    runner = Runner(tmp_path_factory.mktemp("workspace"), env, {})
    done = runner.run(install, tmp_path_factory.mktemp("steps"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("fieldwarden ")  # `fieldwarden --version`, from the virtualenv
    where = subprocess.run(["python", "-c", "import fieldwarden; print(fieldwarden.__file__)"], env=env, cwd=venv,
                           capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(venv)), where  # the action's install, not the editable one
    return env


def _workspace(root: Path, files: dict[str, str]) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=_git_env())
    for name, text in files.items():
        write(root, name, text)
    return root


def _run_action(workspace: Path, env: dict[str, str], inputs: dict[str, str], tmp: Path) -> tuple[Runner, list[str]]:
    """Every step after the install; the names of the `uses:` steps that would run."""
    runner = Runner(workspace, env, inputs)
    would_use, log = [], []
    for step in _steps():
        if step.get("id") == "install":
            continue
        if "if" in step and not runner.condition(step["if"]):
            continue
        if "uses" in step:
            would_use.append(step["uses"].split("@")[0])
            if step["uses"].startswith("github/codeql-action/upload-sarif"):
                sarif = workspace / runner.substitute(step["with"]["sarif_file"])
                assert json.loads(sarif.read_text(encoding="utf-8"))["version"] == "2.1.0"
            continue
        done = runner.run(step, tmp)
        log.append(done.stdout)
        runner.outputs.setdefault("_codes", {})[step["name"]] = str(done.returncode)
    runner.outputs["_log"] = {"stdout": "".join(log)}
    return runner, would_use


def test_the_action_annotates_uploads_sarif_and_fails_on_findings(installed: dict[str, str], tmp_path: Path) -> None:
    workspace = _workspace(tmp_path / "repo", {"k8s/web.yaml": BROKEN, "k8s/ok.yaml": CLEAN, "other/web.yaml": BROKEN})
    runner, would_use = _run_action(
        workspace, installed, {"paths": "k8s", "sarif": "true", "args": "--select FW101 --no-context"}, tmp_path)
    assert would_use == ["actions/setup-python", "github/codeql-action/upload-sarif"]
    assert runner.outputs["lint"]["exit-code"] == "1"
    annotations = [line for line in runner.outputs["_log"]["stdout"].splitlines() if line.startswith("::")]
    assert len(annotations) == 1 and annotations[0].startswith(
        "::error file=k8s/web.yaml,line=5,col=1,title=FW101 selector-missing::")  # only the paths asked for
    assert annotations[0].endswith("%0Ahttps://fieldwarden.github.io/fieldwarden/rules/FW101/")
    sarif = json.loads((workspace / runner.outputs["lint"]["sarif-file"]).read_text(encoding="utf-8"))
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "FW101"
    assert runner.outputs["_codes"] == {"Lint": "0", "Fail on findings": "1"}  # the upload comes before the failure


def test_the_action_passes_a_clean_tree_and_writes_no_sarif_unless_asked(
    installed: dict[str, str], tmp_path: Path
) -> None:
    workspace = _workspace(tmp_path / "repo", {"k8s/ok.yaml": CLEAN})
    runner, would_use = _run_action(workspace, installed, {}, tmp_path)
    assert would_use == ["actions/setup-python"]
    assert runner.outputs["lint"] == {"exit-code": "0"}
    assert not (workspace / "fieldwarden.sarif").exists()
    assert runner.outputs["_codes"] == {"Lint": "0", "Fail on findings": "0"}


def test_the_gitlab_example_writes_both_reports_and_fails_the_job(installed: dict[str, str], tmp_path: Path) -> None:
    job = GITLAB["fieldwarden"]
    install, *script = job["script"]
    assert install == "python -m pip install --quiet 'fieldwarden[render,schemas]'"  # (this tree is installed instead)
    workspace = _workspace(tmp_path / "repo", {"deploy/web.yaml": BROKEN, "deploy/ok.yaml": CLEAN})
    env = {**installed, **{k: str(v) for k, v in job.get("variables", {}).items()},
           "GITLAB_CI": "true", "CI": "true", "CI_PROJECT_DIR": str(workspace)}
    codes = []
    for line in script:  # as GitLab runs them: the job stops at the first line that fails
        done = subprocess.run(["bash", "-eo", "pipefail", "-c", line], cwd=workspace, env=env,
                              capture_output=True, text=True, timeout=300)
        codes.append(done.returncode)
        if done.returncode:
            break
    assert codes == [0, 0, 1]
    assert "deploy/web.yaml:5:1: FW101" in done.stdout  # the findings in the job log
    reports = job["artifacts"]["reports"]
    assert job["artifacts"]["when"] == "always"
    quality = json.loads((workspace / reports["codequality"]).read_text(encoding="utf-8"))
    jsonschema.validate(quality, json.loads((FIXTURES / "formats" / "gitlab-code-quality.schema.json").read_text()))
    assert ("deploy/web.yaml", 5, "major") in {(i["location"]["path"], i["location"]["lines"]["begin"], i["severity"])
                                               for i in quality}
    junit = etree.parse(str(workspace / reports["junit"]))
    etree.XMLSchema(etree.parse(str(FIXTURES / "formats" / "junit-10.xsd"))).assertValid(junit)
    assert "deploy/web.yaml" in {case.get("classname") for case in junit.iter("testcase") if case.find("failure") is not None}


def test_the_docs_workflow_gives_the_action_only_its_inputs_and_includes_the_tested_gitlab_job() -> None:
    page = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", page, re.S) if "jobs:" in block]
    steps = [step for block in blocks for job in block["jobs"].values() for step in job["steps"]]
    [uses] = [step for step in steps if step.get("uses", "").startswith("fieldwarden/fieldwarden@")]
    assert set(uses["with"]) <= set(ACTION["inputs"])
    assert '--8<-- "docs/examples/gitlab-ci.yml"' in page  # the page shows the file the test above runs
    # every input and output of the action is in the page's tables
    for name in [*ACTION["inputs"], *ACTION["outputs"]]:
        assert f"| `{name}` |" in page, name
