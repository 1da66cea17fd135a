"""FW303 autoscaler-target-missing."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import FIXTURES, git_repo, lint, write

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers: [{name: web, image: nginx}]
"""


def hpa(target: str = "web", ref_api: str | None = "apps/v1", kind: str = "Deployment", namespace: str = "") -> str:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    api = f"\n    apiVersion: {ref_api}" if ref_api is not None else ""
    return f"""\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web-hpa{ns}
spec:
  maxReplicas: 10
  scaleTargetRef:
    kind: {kind}
    name: {target}{api}
"""


def vpa(target_ref: str) -> str:
    return f"""\
apiVersion: autoscaling.k8s.io/v1
kind: VerticalPodAutoscaler
metadata:
  name: web-vpa
spec:
  targetRef: {target_ref}
"""


def run_one(tmp_path: Path, text: str) -> list[tuple[str, int, int, str]]:
    path = write(tmp_path, "all.yaml", text)
    return lint(["--select", "FW303", "--no-context", str(path)]).hits()


def test_missing_target_points_at_the_name(tmp_path: Path) -> None:
    path = write(tmp_path, "hpa.yaml", hpa("wbe") + "---\n" + DEPLOYMENT)
    run = lint(["--select", "FW303", "--no-context", str(path)])
    assert run.code == 1
    assert run.hits() == [("hpa.yaml", 9, 5, "FW303")]
    assert run.findings[0]["field"] == "spec.scaleTargetRef.name"
    assert run.findings[0]["severity"] == "warning"


def test_target_present_in_the_same_file_passes(tmp_path: Path) -> None:
    path = write(tmp_path, "all.yaml", hpa() + "---\n" + DEPLOYMENT)
    run = lint(["--select", "FW303", "--no-context", str(path)])
    assert (run.code, run.hits()) == (0, [])


def test_target_in_another_file_of_the_repository(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    write(root, "hpa.yaml", hpa())
    write(root, "deploy.yaml", DEPLOYMENT)  # another file of the same apply unit (folder)
    assert lint(["--select", "FW303", "hpa.yaml"], cwd=root).hits() == []
    assert lint(["--select", "FW303", "--no-context", "hpa.yaml"], cwd=root).hits() == [("hpa.yaml", 9, 5, "FW303")]


def test_target_in_another_namespace_is_missing(tmp_path: Path) -> None:
    path = write(tmp_path, "all.yaml", hpa(namespace="prod") + "---\n" + DEPLOYMENT)
    run = lint(["--select", "FW303", "--no-context", str(path)])
    assert run.hits() == [("all.yaml", 10, 5, "FW303")]
    assert "Deployment/default/web" in run.findings[0]["hint"]


def test_unset_namespace_matches_explicit_default(tmp_path: Path) -> None:
    assert run_one(tmp_path, hpa(namespace="default") + "---\n" + DEPLOYMENT) == []
    explicit = DEPLOYMENT.replace("  name: web\n", "  name: web\n  namespace: default\n")
    assert run_one(tmp_path, hpa() + "---\n" + explicit) == []


def test_group_matters_and_extensions_means_apps(tmp_path: Path) -> None:
    assert run_one(tmp_path, hpa(ref_api="extensions/v1beta1") + "---\n" + DEPLOYMENT) == []
    assert run_one(tmp_path, hpa(ref_api="argoproj.io/v1alpha1") + "---\n" + DEPLOYMENT) == [("all.yaml", 9, 5, "FW303")]
    assert run_one(tmp_path, hpa(kind="StatefulSet") + "---\n" + DEPLOYMENT) == [("all.yaml", 9, 5, "FW303")]


def findings(tmp_path: Path, text: str, *extra: str) -> list[tuple[int, int, str, str]]:
    write(tmp_path, "all.yaml", text)
    run = lint(["--select", "FW303", "--no-context", *extra, "all.yaml"], cwd=tmp_path)
    return [(f["line"], f["column"], f["message"], f["hint"]) for f in run.findings]


NO_API_VERSION = (
    "scaleTargetRef has no apiVersion: the HPA reads it as the core API group (v1), which has no {kind}, "
    "so it never finds {kind} {name} and never scales it; newer API servers refuse to create such an HPA"
)


def test_hpa_without_api_version_says_so(tmp_path: Path) -> None:
    # The Deployment is there; the reference is what is broken. The finding points at
    # scaleTargetRef (line 7), where apiVersion belongs, and names what to write.
    assert findings(tmp_path, hpa(ref_api=None) + "---\n" + DEPLOYMENT) == [
        (7, 3, NO_API_VERSION.format(kind="Deployment", name="web"),
         "set scaleTargetRef.apiVersion: apps/v1 (Deployment/default/web is at all.yaml:14)"),
    ]


def test_hpa_without_api_version_and_without_target(tmp_path: Path) -> None:
    assert findings(tmp_path, hpa(ref_api=None, kind="StatefulSet", target="db")) == [
        (7, 3, NO_API_VERSION.format(kind="StatefulSet", name="db"), "set scaleTargetRef.apiVersion: apps/v1"),
    ]
    empty = hpa(ref_api='""')
    assert findings(tmp_path, empty + "---\n" + DEPLOYMENT) == [
        (7, 3, NO_API_VERSION.format(kind="Deployment", name="web").replace("has no apiVersion", "has an empty apiVersion"),
         "set scaleTargetRef.apiVersion: apps/v1 (Deployment/default/web is at all.yaml:15)"),
    ]


def test_hpa_without_api_version_on_a_custom_resource_names_its_api_version(tmp_path: Path) -> None:
    rollout = "apiVersion: argoproj.io/v1alpha1\nkind: Rollout\nmetadata: {name: web}\nspec:\n  replicas: 2\n"
    assert findings(tmp_path, hpa(ref_api=None, kind="Rollout") + "---\n" + rollout) == [
        (7, 3, NO_API_VERSION.format(kind="Rollout", name="web"),
         "set scaleTargetRef.apiVersion: argoproj.io/v1alpha1 (Rollout/default/web is at all.yaml:13)"),
    ]
    assert findings(tmp_path, hpa(ref_api=None, kind="Rollout")) == [
        (7, 3, NO_API_VERSION.format(kind="Rollout", name="web"), "set scaleTargetRef.apiVersion to the target's group and version"),
    ]


def test_replication_controller_needs_no_api_version(tmp_path: Path) -> None:
    rc = "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: web}\nspec: {replicas: 2}\n"
    assert findings(tmp_path, hpa(ref_api=None, kind="ReplicationController") + "---\n" + rc) == []
    assert run_one(tmp_path, hpa(ref_api=None, kind="ReplicationController")) == [("all.yaml", 9, 5, "FW303")]


def test_ignored_kinds_skip_the_api_version_check_too(tmp_path: Path) -> None:
    config = write(tmp_path, "fw.yaml", "rules:\n  FW303: {ignore-kinds: [Deployment]}\n")
    assert findings(tmp_path, hpa(ref_api=None), "--config", str(config)) == []


def test_keda_scaled_object(tmp_path: Path) -> None:
    keda = "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: web}\nspec:\n  scaleTargetRef: {name: web}\n"
    assert run_one(tmp_path, keda + "---\n" + DEPLOYMENT) == []
    assert run_one(tmp_path, keda.replace("name: web}\n", "name: api}\n")) == [("all.yaml", 5, 20, "FW303")]


def test_vpa_target(tmp_path: Path) -> None:
    assert run_one(tmp_path, vpa("{apiVersion: apps/v1, kind: Deployment, name: api}") + "---\n" + DEPLOYMENT) == [
        ("all.yaml", 6, 54, "FW303")
    ]
    # The VPA finds well-known controllers by kind, whatever the apiVersion says.
    assert run_one(tmp_path, vpa("{kind: Deployment, name: web}") + "---\n" + DEPLOYMENT) == []
    assert run_one(tmp_path, vpa("{apiVersion: extensions/v1beta1, kind: Deployment, name: web}") + "---\n" + DEPLOYMENT) == []


def test_ignore_kinds_option(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  FW303:\n    ignore-kinds: [Rollout]\n")
    text = hpa(ref_api="argoproj.io/v1alpha1", kind="Rollout") + "---\n" + hpa(target="api").replace("web-hpa", "api-hpa")
    write(tmp_path, "all.yaml", text)
    run = lint(["--select", "FW303", "--no-context", "all.yaml"], cwd=tmp_path)
    assert run.hits() == [("all.yaml", 20, 5, "FW303")]


def test_ignore_kinds_rejects_a_non_list(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  autoscaler-target-missing:\n    ignore-kinds: Rollout\n")
    write(tmp_path, "all.yaml", hpa())
    run = lint(["--select", "FW303", "--no-context", "all.yaml"], cwd=tmp_path)
    assert run.code == 2
    assert "ignore-kinds" in run.stderr


def test_autoscaler_without_usable_reference_is_not_judged(tmp_path: Path) -> None:
    text = hpa().replace("    name: web\n", "") + "---\n" + vpa("null")
    assert run_one(tmp_path, text) == []


def test_target_in_another_unit_says_where(tmp_path: Path) -> None:
    """examples-folder (tests/fixtures/repos): an HPA in `hpa-php-apache/` names the guestbook's
    `frontend`, which another folder, another apply unit, defines (issue 22): not "not defined"."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "repos" / "examples-folder", root)
    git_repo(root)
    run = lint(["--select", "FW303", "--format", "json", "hpa-php-apache/hpa.yaml"], cwd=root)
    assert (run.code, run.hits()) == (1, [("hpa.yaml", 29, 5, "FW303")])
    message = run.findings[0]["message"]
    assert "not defined" not in message
    assert message == ("target Deployment/default/frontend is not in this apply unit: it is defined in "
                       "guestbook/frontend-deployment.yaml:4 (another unit: guestbook)")
    assert "declare one unit" in run.findings[0]["hint"]
    alone = lint(["--select", "FW303", "--no-context", "hpa-php-apache/hpa.yaml"], cwd=root)
    assert "is not defined in the manifests" in alone.findings[0]["message"]  # no project seen: no claim
