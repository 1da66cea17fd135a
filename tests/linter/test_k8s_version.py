"""`--k8s-version` and the configuration's `kubernetes-version`: the target of the schema rules (FW6)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from fieldwarden.policies.config import DEFAULT_KUBERNETES_VERSION
from fieldwarden.policies.schemas import builtin
from tests.helpers import lint, write

# resizePolicy came with Kubernetes 1.27: 1.26 does not know it, 1.27 does
MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: app
    image: nginx
    resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]
"""
UNKNOWN = ("pod.yaml", 9, 5, "FW602")


def test_the_option_chooses_the_version(tmp_path: Path) -> None:
    write(tmp_path, "pod.yaml", MANIFEST)
    assert lint(["--select", "FW6", "--k8s-version", "1.26", "pod.yaml"], cwd=tmp_path).hits() == [UNKNOWN]
    assert lint(["--select", "FW6", "--k8s-version", "v1.27.3", "pod.yaml"], cwd=tmp_path).hits() == []


def test_the_configuration_chooses_it_and_the_option_wins(tmp_path: Path) -> None:
    write(tmp_path, "pod.yaml", MANIFEST)
    write(tmp_path, ".fieldwarden.yaml", 'kubernetes-version: "1.26"\n')
    assert lint(["--select", "FW6", "pod.yaml"], cwd=tmp_path).hits() == [UNKNOWN]
    assert lint(["--select", "FW6", "--k8s-version", "1.30", "pod.yaml"], cwd=tmp_path).hits() == []


def test_the_default_is_stated_and_carried_by_the_lowest_schemas_allowed(tmp_path: Path) -> None:
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert f'"kubernetes-validate>={DEFAULT_KUBERNETES_VERSION}"' in pyproject
    assert DEFAULT_KUBERNETES_VERSION in builtin.versions()
    page = (Path(__file__).parents[2] / "docs" / "schema-validation.md").read_text()
    assert f"else **{DEFAULT_KUBERNETES_VERSION}**" in page
    write(tmp_path, "pod.yaml", MANIFEST)
    run = subprocess.run([sys.executable, "-m", "fieldwarden", "lint", "--show-settings", "pod.yaml"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert f"kubernetes-version: {DEFAULT_KUBERNETES_VERSION}\n" in run.stdout


def test_a_version_the_schemas_do_not_carry_is_exit_2(tmp_path: Path) -> None:
    write(tmp_path, "pod.yaml", MANIFEST)
    carried = builtin.versions()
    run = lint(["--k8s-version", "1.24", "pod.yaml"], cwd=tmp_path)
    assert (run.code, run.findings) == (2, [])
    assert run.stderr == (f"fieldwarden: --k8s-version 1.24: the installed schemas (kubernetes-validate) carry Kubernetes "
                          f"{carried[0]} to {carried[-1]}\n")
    write(tmp_path, ".fieldwarden.yaml", 'kubernetes-version: "1.99"\n')
    run = lint(["pod.yaml"], cwd=tmp_path)
    assert run.code == 2 and run.stderr.startswith("fieldwarden: ") and ".fieldwarden.yaml: kubernetes-version 1.99" in run.stderr
    assert lint(["--ignore", "FW6", "pod.yaml"], cwd=tmp_path).code == 0  # (the schema rules off: the version is moot)


def test_what_is_no_version_is_exit_2(tmp_path: Path) -> None:
    write(tmp_path, "pod.yaml", MANIFEST)
    run = lint(["--k8s-version", "latest", "pod.yaml"], cwd=tmp_path)
    assert (run.code, run.stderr) == (2, "fieldwarden: --k8s-version 'latest': expected a Kubernetes version such as 1.32\n")
    write(tmp_path, ".fieldwarden.yaml", "kubernetes-version: latest\n")
    run = lint(["pod.yaml"], cwd=tmp_path)
    assert run.code == 2 and "kubernetes-version" in run.stderr and "does not match" in run.stderr


# An install without the extra: this environment's packages but kubernetes-validate (linked into a folder
# of their own; .ci/clean-install makes a real one)
WITHOUT_SCHEMAS = """\
import site, sys
sys.path = [p for p in sys.path if "-packages" not in p]
site.addsitedir(sys.argv.pop(1))
from fieldwarden.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def without_schemas(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    source = Path(sysconfig.get_paths()["purelib"])
    for entry in source.iterdir():
        if not entry.name.startswith("kubernetes_validate"):
            (site / entry.name).symlink_to(entry)
    return site


def test_without_the_schemas_a_notice_once_and_no_traceback(tmp_path: Path) -> None:
    site = str(without_schemas(tmp_path))
    write(tmp_path, "pod.yaml", MANIFEST)
    write(tmp_path, "more.yaml", MANIFEST.replace("name: p", "name: q"))
    run = subprocess.run([sys.executable, "-S", "-c", WITHOUT_SCHEMAS, site, "lint", "--k8s-version", "1.26", "pod.yaml", "more.yaml"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert (run.returncode, run.stdout) == (0, "All checks passed!\n")
    assert run.stderr == ("fieldwarden: schema validation (FW601, FW602) not run: the Kubernetes schemas are not installed "
                          "(pip install 'fieldwarden[schemas]'; or ignore FW6 to silence this)\n")
    quiet = subprocess.run([sys.executable, "-S", "-c", WITHOUT_SCHEMAS, site, "lint", "--ignore", "FW6", "pod.yaml"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert (quiet.returncode, quiet.stderr) == (0, "")
