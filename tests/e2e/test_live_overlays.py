"""`lint --cluster` of an overlay alone reports what it causes in its base (issue 24, part 2, last item).

An overlay that sends its base's Deployment to a namespace where `web` already runs with another
selector makes the next apply change an immutable selector: the API server's FW502 lands on the
base's selector, written in a file that is not named when pre-commit or a user lints
`overlays/prod`. The overlay is the unit being linted, so the finding is reported in that run, at
that place, once whichever of base and overlay are named; an ignore comment on that line of the
base holds (and is used); `--format github` and SARIF name the base's file. The same holds for the
plain folder an Argo CD Application deploys when only the Application is named: its destination
decides where the folder's objects go. The live state is set up with real kubectl on the real
kube-apiserver, and kubectl's own dry run is asked for the same verdict. Where in the selector
the finding goes is the placing's business (policies/live.py): each run is compared with the run
that names every file.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from urllib.parse import unquote

import pytest

from fieldwarden.cli import main
from tests.e2e.cluster import Cluster
from tests.e2e.kubectl import Kubectl
from tests.helpers import WEB_DEPLOYMENT, Run, git_repo, lint, write

# WEB_DEPLOYMENT's selector block: `selector:` (line 6) and `matchLabels: {app: web}` (line 7); where in it a
# live finding goes is policies/live.py's and the rules' business, which file it goes to is this test's
SELECTOR_LINES = (6, 7)


def overlay_tree(root: Path, namespace: str) -> Path:
    """base/ (WEB_DEPLOYMENT, `app: web`, no namespace) and overlays/prod/, deploying it to `namespace`."""
    return git_repo(root, {
        "base/deploy.yaml": WEB_DEPLOYMENT,
        "base/kustomization.yaml": "resources: [deploy.yaml]\n",
        "overlays/prod/kustomization.yaml": f"namespace: {namespace}\nresources: [../../base]\n",
    })


def live_lint(cluster: Cluster, cwd: Path, *args: str) -> Run:
    return lint(["--cluster", "--kubeconfig", str(cluster.kubeconfig), "--select", "FW5,FW003", *args], cwd=cwd)


Placed = tuple[str, int, int, str, str, "str | None"]


def placed(run: Run) -> list[Placed]:
    return [(f["file"], f["line"], f["column"], f["code"], f["message"], f["suppressed"]) for f in run.findings]


def in_the_bases_selector(finding: Placed) -> bool:
    return finding[0] == "base/deploy.yaml" and finding[1] in SELECTOR_LINES and finding[3] == "FW502"


@pytest.fixture
def live_legacy(kubectl: Kubectl, namespace: str) -> str:
    """`web` as it runs in the namespace the overlay deploys to: applied (server-side) long ago, `app: legacy`."""
    legacy = WEB_DEPLOYMENT.replace("app: web", "app: legacy")
    kubectl("apply", "--server-side", "-n", namespace, "-f", "-", stdin=legacy)
    return namespace


def test_what_the_overlay_causes_in_its_base_is_reported_whichever_files_are_named(
        cluster: Cluster, kubectl: Kubectl, live_legacy: str, tmp_path: Path) -> None:
    """The overlay sends the base's `web` to a namespace where `web` runs with another selector: the base's
    `app: web` is what the API server refuses, on the base's line, the overlay's doing."""
    root = overlay_tree(tmp_path / "repo", live_legacy)
    rendered = kubectl("kustomize", str(root / "overlays/prod")).stdout
    refused = kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", stdin=rendered, check=False)
    assert "spec.selector: Invalid value" in refused.stderr and "field is immutable" in refused.stderr

    whole = live_lint(cluster, root, ".")  # every file named: the reference
    [finding] = placed(whole)
    assert in_the_bases_selector(finding) and finding[5] is None, finding
    assert "field is immutable" in finding[4] and "legacy" in finding[4]  # the live value
    assert (whole.code, whole.findings[0]["unit"], whole.findings[0]["object"]) == (
        1, "overlays/prod (kustomize)", f"Deployment/{live_legacy}/web")
    for named in (["overlays/prod"], ["overlays/prod/kustomization.yaml"], ["overlays/prod", "base"], ["base"]):
        run = live_lint(cluster, root, *named)
        assert (run.code, placed(run)) == (1, [finding]), named  # there, and once though base and overlay are named
        assert f"--cluster: 1 object checked against {cluster.url}" in run.stderr
    # predicted from the live object alone, it goes to the base too
    predicted = live_lint(cluster, root, "--read-only", "overlays/prod")
    assert predicted.code == 1 and [in_the_bases_selector(f) for f in placed(predicted)] == [True]


def with_comment(text: str, line: int, comment: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n") + f"  {comment}\n"
    return "".join(lines)


def test_an_ignore_comment_on_the_bases_line_suppresses_it_and_is_used(
        cluster: Cluster, live_legacy: str, tmp_path: Path) -> None:
    root = overlay_tree(tmp_path / "repo", live_legacy)
    [(file, line, column, code, said, _)] = placed(live_lint(cluster, root, "overlays/prod"))
    write(root, file, with_comment(WEB_DEPLOYMENT, line, "# fieldwarden: ignore[FW502]"))
    for named in (["overlays/prod"], ["overlays/prod", "base"], ["."]):
        run = live_lint(cluster, root, *named)
        # suppressed, and the comment is no "unused suppression" (FW003) where the base is linted
        assert (run.code, placed(run)) == (0, [(file, line, column, code, said, f"comment at line {line}")]), named


def formatted(cluster: Cluster, cwd: Path, name: str, *paths: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    try:
        os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["lint", "--cluster", "--kubeconfig", str(cluster.kubeconfig), "--select", "FW5",
                         "--format", name, *paths])
    finally:
        os.chdir(old)
    assert code == 1, err.getvalue()
    return out.getvalue()


def sarif_place(text: str) -> tuple[dict[str, str], dict[str, int]]:
    [result] = json.loads(text)["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    return location["artifactLocation"], location["region"]


def test_github_and_sarif_name_the_bases_file(cluster: Cluster, live_legacy: str, tmp_path: Path) -> None:
    root = overlay_tree(tmp_path / "repo", live_legacy)
    [(file, line, column, *_)] = placed(live_lint(cluster, root, "overlays/prod"))
    github = formatted(cluster, root, "github", "overlays/prod")
    assert github.startswith(
        f"::error file={file},line={line},col={column},title=FW502 apply-changes-immutable-field::")
    assert sarif_place(formatted(cluster, root, "sarif", "overlays/prod")) == (
        {"uri": file, "uriBaseId": "%SRCROOT%"}, {"startLine": line, "startColumn": column})
    # linted from inside the overlay, the base is above the current folder: shown by its absolute path (as the
    # lint's own findings there are), which SARIF gives as a file URI, not as a path under %SRCROOT%
    base = str(root / file)
    text = formatted(cluster, root / "overlays/prod", "text", ".")
    assert text.startswith(f"{base}:{line}:{column}: FW502 error: Deployment/{live_legacy}/web: ")
    location, region = sarif_place(formatted(cluster, root / "overlays/prod", "sarif", "."))
    assert (unquote(location["uri"]), region) == (f"file://{base}", {"startLine": line, "startColumn": column})
    assert "uriBaseId" not in location


APPLICATION = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://github.com/acme/deploy.git
    path: apps/web
  destination:
    server: https://kubernetes.default.svc
    namespace: {namespace}
"""


def test_a_named_application_checks_the_plain_folder_it_deploys_in_its_namespace(
        cluster: Cluster, kubectl: Kubectl, live_legacy: str, tmp_path: Path) -> None:
    """Only the Application changed (pre-commit names it): its folder's Deployment, going to the destination
    namespace where `web` runs with another selector, is refused; reported on that folder's file."""
    root = git_repo(tmp_path / "repo", {"argocd/web.yaml": APPLICATION.format(namespace=live_legacy),
                                        "apps/web/deploy.yaml": WEB_DEPLOYMENT})
    refused = kubectl("apply", "--server-side", "--dry-run=server", "-n", live_legacy, "-f",
                      str(root / "apps/web/deploy.yaml"), check=False)
    assert "field is immutable" in refused.stderr
    whole = live_lint(cluster, root, "--ignore", "FW509", ".")  # (the cluster serves no Application kind)
    [finding] = placed(whole)
    assert finding[0] == "apps/web/deploy.yaml" and finding[1] in SELECTOR_LINES and finding[3] == "FW502", finding
    assert whole.findings[0]["object"] == f"Deployment/{live_legacy}/web"
    for named in (["argocd/web.yaml"], ["argocd/web.yaml", "apps/web"], ["apps/web"]):
        run = live_lint(cluster, root, "--ignore", "FW509", *named)
        assert (run.code, placed(run)) == (1, [finding]), named
