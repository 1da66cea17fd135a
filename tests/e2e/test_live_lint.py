"""`fieldwarden lint --cluster` behind a real kube-apiserver: the cluster's own answer, on the manifest's line.

Each test sets the live state up the way teams get there (`kubectl apply`, client- or server-side,
with field managers of their own; a live HPA that kube-controller-manager scales; a
ValidatingAdmissionPolicy; fieldwarden's own webhook), then lints a changed manifest with
`--cluster` and checks code, line and the API server's exact words: in JSON (every field), and
for one case in every output format. Where kubectl can say what the next apply does, the test
asks it too (`kubectl apply --dry-run=server`), so the prediction is checked against the tool
the team runs. RBAC: the chart's lint-reader and lint-dryrun ClusterRoles, checked with
`kubectl auth can-i` and by linting as a ServiceAccount bound to each.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import uuid
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from fieldwarden.cli import main
from tests.e2e.cluster import Cluster
from tests.e2e.install import Installation
from tests.e2e.kubectl import Kubectl
from tests.e2e.processes import wait_for
from tests.helm.chart import render
from tests.helpers import Run, git_repo, lint, web_deployment, write

Obj = dict[str, Any]
RECREATE_MESSAGE = "Forbidden: may not be specified when strategy `type` is 'Recreate'"


def deployment_text(namespace: str, *, name: str = "web", replicas: int | None = 2, strategy: str = "",
                    app: str = "web", image: str = "registry.example/web:1.0") -> str:
    """A Deployment's YAML; the line of each field is fixed (see the comments) whatever is left out."""
    return "\n".join([
        "apiVersion: apps/v1",                                     # 1
        "kind: Deployment",                                        # 2
        "metadata:",                                               # 3
        f"  name: {name}",                                         # 4
        f"  namespace: {namespace}",                               # 5
        "spec:",                                                   # 6
        f"  replicas: {replicas}" if replicas is not None else "  minReadySeconds: 0",  # 7
        f"  strategy: {{type: {strategy}}}" if strategy else "  revisionHistoryLimit: 10",  # 8
        "  selector:",                                             # 9
        f"    matchLabels: {{app: {app}}}",                         # 10
        "  template:",                                             # 11
        "    metadata:",                                           # 12
        f"      labels: {{app: {app}}}",                            # 13
        "    spec:",                                               # 14
        "      containers:",                                       # 15
        "        - name: web",                                     # 16
        f"          image: {image}",                               # 17
    ]) + "\n"


def live_lint(cluster: Cluster, folder: Path, *args: str, kubeconfig: Path | None = None) -> Run:
    """`fieldwarden lint --cluster` (JSON) on the files of `folder`, against `cluster`."""
    return lint(["--cluster", "--kubeconfig", str(kubeconfig or cluster.kubeconfig), "--no-context", *args, "."],
                cwd=folder)


def live_findings(run: Run) -> list[tuple[str, int, int, str, str]]:
    """(file, line, column, code, message) of the unsuppressed FW5xx findings."""
    return sorted((f["file"], f["line"], f["column"], f["code"], f["message"]) for f in run.findings
                  if f["code"].startswith("FW5") and not f["suppressed"])


def apply(kubectl: Kubectl, text: str, *args: str) -> None:
    kubectl("apply", *args, "-f", "-", stdin=text)


def dry_run(kubectl: Kubectl, path: Path, *args: str) -> Any:
    """What kubectl itself says the next apply does (`--dry-run=server`): the object, or the failed result."""
    result = kubectl("apply", "--dry-run=server", *args, "-f", str(path), "-o", "json", check=False)
    return result.json() if result.code == 0 else result


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "manifests"
    path.mkdir()
    return path


# --- the API server's verdict -------------------------------------------------------------------

def test_a_defaulted_rolling_update_under_recreate_fails_on_the_strategy_line_in_every_format(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, deployment_text(namespace), "--server-side")  # no strategy: the server defaults RollingUpdate
    write(folder, "web.yaml", deployment_text(namespace, strategy="Recreate"))
    run = live_lint(cluster, folder)
    message = f"the API server refuses the apply: spec.strategy.rollingUpdate: {RECREATE_MESSAGE}"
    assert live_findings(run) == [("web.yaml", 8, 3, "FW501", message)]
    assert run.code == 1
    finding = next(f for f in run.findings if f["code"] == "FW501")
    assert finding["field"] == "spec.strategy" and finding["name"] == "apply-rejected-invalid"
    assert finding["object"] == f"Deployment/{namespace}/web"
    assert ("""--type=merge -p '{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}'""" in finding["hint"])
    assert f"--cluster: 1 object checked against {cluster.url}" in run.stderr
    # kubectl's own server-side apply fails the same way
    failed = dry_run(kubectl, folder / "web.yaml", "--server-side")
    assert RECREATE_MESSAGE in failed.stderr

    outputs = {}
    for name in ("text", "sarif", "github"):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["lint", "--cluster", "--kubeconfig", str(cluster.kubeconfig), "--no-context", "--select", "FW5",
                         "--format", name, str(folder / "web.yaml")])
        assert code == 1, err.getvalue()
        outputs[name] = out.getvalue()
    shown = str(folder / "web.yaml")
    assert outputs["text"].splitlines()[0] == (
        f"{shown}:8:3: FW501 error: Deployment/{namespace}/web: {message} [apply-rejected-invalid]")
    sarif = json.loads(outputs["sarif"])["runs"][0]
    result = sarif["results"][0]
    assert (result["ruleId"], result["locations"][0]["physicalLocation"]["region"]) == (
        "FW501", {"startLine": 8, "startColumn": 3})
    assert RECREATE_MESSAGE in result["message"]["text"]
    rule = sarif["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == "FW501" and rule["properties"]["tags"] == ["live"]
    assert outputs["github"].startswith(f"::error file={shown},line=8,col=3,title=FW501 apply-rejected-invalid::")
    assert "may not be specified when strategy `type` is 'Recreate'" in outputs["github"]


def test_client_side_apply_clears_the_defaulted_rolling_update_and_passes(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, deployment_text(namespace))  # client-side this time
    write(folder, "web.yaml", deployment_text(namespace, strategy="Recreate"))
    run = live_lint(cluster, folder, "--apply-mode", "client")
    assert live_findings(run) == []  # kubectl sends $retainKeys for strategy: the server drops rollingUpdate
    stored = dry_run(kubectl, folder / "web.yaml")
    assert stored["spec"]["strategy"] == {"type": "Recreate"}


def test_a_changed_selector_is_immutable_from_the_dry_run_and_predicted_read_only(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, deployment_text(namespace), "--server-side")
    write(folder, "web.yaml", deployment_text(namespace, app="web2"))
    run = live_lint(cluster, folder)
    assert [f[:4] for f in live_findings(run)] == [("web.yaml", 10, 19, "FW502")]  # `app: web2` in matchLabels
    assert live_findings(run)[0][4] == (
        'the API server refuses the apply: spec.selector: Invalid value: {"matchLabels":{"app":"web2"}}: field is '
        'immutable (spec.selector.matchLabels.app: live "web", the manifest "web2")')
    predicted = live_lint(cluster, folder, "--read-only")
    assert live_findings(predicted) == [(
        "web.yaml", 10, 19, "FW502",
        'spec.selector cannot change once the object exists (live {"matchLabels":{"app":"web"}}, the manifest '
        '{"matchLabels":{"app":"web2"}}): the apply will be refused (predicted from the live object: --read-only)')]
    assert "FW501, FW504, FW507 need a dry run and were not checked" in predicted.stderr


def test_a_conflict_with_another_field_manager_names_it_and_forcing_takes_the_field_over(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, deployment_text(namespace, replicas=5), "--server-side", "--field-manager=other-team")
    write(folder, "web.yaml", deployment_text(namespace, replicas=3))
    run = live_lint(cluster, folder)
    assert live_findings(run) == [("web.yaml", 7, 3, "FW503", 'the API server refuses the apply: conflict with '
                                   '"other-team": .spec.replicas (live 5, the manifest 3)')]
    failed = dry_run(kubectl, folder / "web.yaml", "--server-side")
    assert 'conflict with "other-team": .spec.replicas' in failed.stderr
    predicted = live_lint(cluster, folder, "--read-only")
    assert live_findings(predicted) == [("web.yaml", 7, 3, "FW503", 'conflict with "other-team": .spec.replicas (live 5, '
                                         'the manifest 3): the apply will be refused (predicted from managedFields: '
                                         '--read-only)')]
    forced = live_lint(cluster, folder, "--force-conflicts")
    assert live_findings(forced) == [("web.yaml", 7, 3, "FW506", 'takes .spec.replicas over from "other-team" (live 5); '
                                      "the apply would store 3")]
    # the team's own manager, with its own apply: nothing to say
    assert live_findings(live_lint(cluster, folder, "--field-manager", "other-team")) == []


def test_a_new_object_is_checked_with_a_dry_run_create(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    write(folder, "new.yaml", deployment_text(namespace, name="fresh"))
    write(folder, "broken.yaml", deployment_text(namespace, name="broken").replace(
        "labels: {app: broken}", "labels: {app: other}").replace("labels: {app: web}", "labels: {app: other}"))
    run = live_lint(cluster, folder, "--select", "FW5")
    assert live_findings(run) == [(
        "broken.yaml", 13, 7, "FW501",
        'the API server refuses the apply: spec.template.metadata.labels: Invalid value: {"app":"other"}:'
        " `selector` does not match template `labels`")]
    assert kubectl("get", "deployment", "fresh", "-n", namespace, check=False).code == 1  # a dry run: nothing stored
    read_only = live_lint(cluster, folder, "--read-only", "--select", "FW5")
    assert live_findings(read_only) == []
    assert "2 objects not in the cluster yet, not checked" in read_only.stderr
    assert live_findings(live_lint(cluster, folder, "--select", "FW5", "--apply-mode", "client"))[0][:4] == (
        "broken.yaml", 13, 7, "FW501")  # client-side: a create (POST), refused the same way


def test_a_missing_namespace_is_reported_once_on_the_first_object(cluster: Cluster, folder: Path) -> None:
    missing = f"absent-{uuid.uuid4().hex[:6]}"
    write(folder, "a.yaml", "\n".join([
        "apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: one", f"  namespace: {missing}", "data: {a: '1'}",
        "---",
        "apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: two", f"  namespace: {missing}", "data: {a: '2'}",
    ]) + "\n")
    expected = [("a.yaml", 5, 3, "FW508", f'the namespace does not exist in the cluster (namespaces "{missing}" not '
                 'found): 2 objects of these manifests go there, and the apply fails for each')]
    assert live_findings(live_lint(cluster, folder)) == expected
    assert live_findings(live_lint(cluster, folder, "--read-only")) == expected
    # created by the same manifests: not missing, its objects not checked
    write(folder, "ns.yaml", f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {missing}\n")
    run = live_lint(cluster, folder)
    assert live_findings(run) == []
    assert f"namespace {missing} is created by these manifests: its 2 objects not checked" in run.stderr


def test_an_api_version_the_cluster_does_not_serve(cluster: Cluster, namespace: str, folder: Path) -> None:
    write(folder, "hpa.yaml", "\n".join([
        "apiVersion: autoscaling/v2beta2", "kind: HorizontalPodAutoscaler", "metadata:", "  name: web",
        f"  namespace: {namespace}", "spec:", "  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}",
        "  maxReplicas: 3"]) + "\n")
    assert live_findings(live_lint(cluster, folder, "--select", "FW5")) == [(
        "hpa.yaml", 1, 1, "FW509", 'the cluster serves no kind "HorizontalPodAutoscaler" in version "autoscaling/v2beta2": '
        "the apply fails (no matches for kind); it serves autoscaling/v2, autoscaling/v1")]


# --- harm that does not fail ----------------------------------------------------------------------

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: web, namespace: {namespace}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  minReplicas: 4
  maxReplicas: 8
  metrics: [{{type: Resource, resource: {{name: cpu, target: {{type: Utilization, averageUtilization: 60}}}}}}]
"""


OPT_OUT = ("fieldwarden.io/admission", "disabled")  # the chart's admission.optOutLabel


def scaled_by_hpa(kubectl: Kubectl, namespace: str) -> None:
    """Deployment web applied client-side with replicas 2, and an HPA (minReplicas 4) that scaled it to 4."""
    apply(kubectl, deployment_text(namespace, replicas=2))  # client-side: replicas 2 in last-applied
    apply(kubectl, HPA.format(namespace=namespace))
    # the HPA controller raises the Deployment to minReplicas through the scale subresource
    wait_for(lambda: kubectl.get("deployment", "web", namespace)["spec"]["replicas"] == 4,
             "the HPA to scale web to 4", 60, interval=0.5)


def test_a_manifest_dropping_replicas_under_a_live_hpa(
        controller_manager: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    cluster = controller_manager
    # fieldwarden's own webhook (FW403), when another test installed it, would keep the HPA's count:
    # this namespace opts out (the next test shows the live check seeing that protection)
    kubectl("label", "namespace", namespace, f"{OPT_OUT[0]}={OPT_OUT[1]}")
    scaled_by_hpa(kubectl, namespace)
    write(folder, "web.yaml", deployment_text(namespace, replicas=None))

    run = live_lint(cluster, folder, "--apply-mode", "client")
    message = "spec.replicas: HorizontalPodAutoscaler web scales this Deployment (live 4); the apply would store 1"
    assert live_findings(run) == [("web.yaml", 6, 1, "FW505", message)]  # no replicas: on `spec:`
    assert dry_run(kubectl, folder / "web.yaml")["spec"]["replicas"] == 1  # what kubectl apply would do
    predicted = live_lint(cluster, folder, "--apply-mode", "client", "--read-only")
    assert live_findings(predicted) == [("web.yaml", 6, 1, "FW505",
                                         message + " (predicted from the live object: --read-only)")]

    # server-side apply leaves a field it does not own: no harm, and kubectl agrees
    assert live_findings(live_lint(cluster, folder)) == []
    assert dry_run(kubectl, folder / "web.yaml", "--server-side")["spec"]["replicas"] == 4
    # keeping replicas: 2 conflicts with the HPA's writes, with the server-side apply's words
    write(folder, "web.yaml", deployment_text(namespace, replicas=2))
    conflict = ('conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas')
    assert live_findings(live_lint(cluster, folder)) == [
        ("web.yaml", 7, 3, "FW503", f"the API server refuses the apply: {conflict} (live 4, the manifest 2)")]
    assert conflict in dry_run(kubectl, folder / "web.yaml", "--server-side").stderr
    assert live_findings(live_lint(cluster, folder, "--read-only"))[0][:4] == ("web.yaml", 7, 3, "FW503")
    # and client-side, it resets the count the HPA set
    assert live_findings(live_lint(cluster, folder, "--apply-mode", "client")) == [
        ("web.yaml", 7, 3, "FW505", "spec.replicas: HorizontalPodAutoscaler web scales this Deployment (live 4); the "
         "apply would store 2")]


def test_with_fieldwardens_webhook_the_dry_run_keeps_the_hpas_count_and_nothing_is_reported(
        fieldwarden: Installation, controller_manager: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    scaled_by_hpa(kubectl, namespace)
    write(folder, "web.yaml", deployment_text(namespace, replicas=None))
    # FW403 keeps live replicas on every UPDATE of a workload an HPA targets, dry runs included, once
    # its inventory has seen the HPA (a watch: a moment)
    wait_for(lambda: dry_run(kubectl, folder / "web.yaml")["spec"]["replicas"] == 4,
             "fieldwarden's webhook to keep the HPA's replicas", 30, interval=0.5)
    assert live_findings(live_lint(controller_manager, folder, "--apply-mode", "client")) == []


def test_a_defaulted_image_pull_policy_stays_after_pinning_the_image(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, deployment_text(namespace, image="registry.example/web:latest"))  # imagePullPolicy: Always
    write(folder, "web.yaml", deployment_text(namespace, image="registry.example/web:1.0"))
    run = live_lint(cluster, folder, "--apply-mode", "client")
    assert live_findings(run) == [(
        "web.yaml", 16, 11, "FW507", 'spec.template.spec.containers[name=web].imagePullPolicy stays "Always" (the server '
        'set it when the object was created); a new object from this manifest gets "IfNotPresent"')]
    assert dry_run(kubectl, folder / "web.yaml")["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"


def test_a_client_side_apply_takes_over_an_image_set_by_kubectl_set(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, deployment_text(namespace))
    kubectl("set", "image", "deployment/web", "web=registry.example/web:1.1", "-n", namespace)
    write(folder, "web.yaml", deployment_text(namespace))
    assert live_findings(live_lint(cluster, folder, "--apply-mode", "client")) == [(
        "web.yaml", 17, 11, "FW506", 'takes .spec.template.spec.containers[name="web"].image over from "kubectl-set" '
        'using apps/v1 (live "registry.example/web:1.1"); the apply would store "registry.example/web:1.0"')]


# --- admission ------------------------------------------------------------------------------------

@pytest.fixture
def no_latest_policy(cluster: Cluster, namespace: str) -> Iterator[str]:
    """A ValidatingAdmissionPolicy refusing `:latest` images in the test's namespace; its name."""
    name = f"no-latest-{namespace}"[:60]
    api = cluster.api
    api.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
            "apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))",
                             "messageExpression": "'image ' + object.spec.template.spec.containers[0].image + "
                                                  "' uses the latest tag'"}]}})
    api.create("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"], "matchResources": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}}})
    probe = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "probe", "namespace": namespace},
             "spec": yaml.safe_load(deployment_text(namespace, image="x:latest"))["spec"]}

    def active() -> bool:  # the API server loads policies a moment after they are stored
        answer = api.request("POST", f"/apis/apps/v1/namespaces/{namespace}/deployments", probe, query={"dryRun": "All"})
        return answer.status == 422 and "ValidatingAdmissionPolicy" in str(answer.body)
    wait_for(active, "the ValidatingAdmissionPolicy to deny", 30, interval=0.2)
    yield name
    api.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{name}")
    api.request("DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}")


def test_a_validating_admission_policy_denial(cluster: Cluster, namespace: str, folder: Path, no_latest_policy: str) -> None:
    write(folder, "web.yaml", deployment_text(namespace, image="registry.example/web:latest"))
    run = live_lint(cluster, folder)
    assert live_findings(run) == [(
        "web.yaml", 17, 11, "FW504", f'the cluster\'s admission control denies the apply: deployments.apps "web" is '
        f"forbidden: ValidatingAdmissionPolicy '{no_latest_policy}' with binding '{no_latest_policy}' denied request: "
        "image registry.example/web:latest uses the latest tag")]
    assert live_findings(live_lint(cluster, folder, "--read-only")) == []  # only the cluster knows its policies


def test_a_denial_by_fieldwardens_own_webhook_is_placed_on_the_field_it_names(
        fieldwarden: Installation, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    pod = ["apiVersion: v1", "kind: Pod", "metadata:", "  name: web", f"  namespace: {namespace}", "spec:",
           "  containers:", "    - name: app", "      image: registry.example/web:1.0"]
    apply(kubectl, "\n".join(pod) + "\n")
    write(folder, "pod.yaml", "\n".join([*pod, "  activeDeadlineSeconds: 600"]) + "\n")
    findings = live_findings(live_lint(fieldwarden.cluster, folder, "--select", "FW5"))
    assert [f[:4] for f in findings] == [("pod.yaml", 10, 3, "FW504")]
    assert findings[0][4].startswith('the cluster\'s admission control denies the apply: admission webhook '
                                     '"image-only-pod-updates.fieldwarden.io" denied the request: [FW401 '
                                     'pod-update-not-image-only]')


# --- suppression, RBAC, and failures ---------------------------------------------------------------

def test_live_findings_obey_ignore_comments_and_plain_lints_do_not_call_them_unused(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, deployment_text(namespace), "--server-side")
    text = deployment_text(namespace, strategy="Recreate").replace(
        "  strategy: {type: Recreate}", "  strategy: {type: Recreate}  # fieldwarden: ignore[FW501]")
    write(folder, "web.yaml", text)
    run = live_lint(cluster, folder)
    assert [(f["code"], f["suppressed"]) for f in run.findings if f["code"] in ("FW501", "FW003")] == [
        ("FW501", "comment at line 8")]
    plain = lint(["--no-context", "."], cwd=folder)
    assert not [f for f in plain.findings if f["code"] in ("FW003", "FW501")]


def test_the_charts_lint_roles_grant_what_each_mode_needs(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    roles = [o for o in render({"lintReader": {"create": True, "dryRun": True}}) if o["kind"] == "ClusterRole"
             and o["metadata"]["name"].startswith("fieldwarden-lint-")]
    assert sorted(r["metadata"]["name"] for r in roles) == ["fieldwarden-lint-dryrun", "fieldwarden-lint-reader"]
    suffix = uuid.uuid4().hex[:5]
    for role in roles:
        role["metadata"]["name"] += f"-{suffix}"
    kubectl("apply", "-f", "-", stdin=roles)
    reader, dryrun = (f"fieldwarden-lint-reader-{suffix}", f"fieldwarden-lint-dryrun-{suffix}")
    kubectl("create", "serviceaccount", "lint-ci", "-n", namespace)
    kubectl("create", "clusterrolebinding", f"lint-ci-{suffix}", f"--clusterrole={reader}",
            f"--serviceaccount={namespace}:lint-ci")
    who = f"system:serviceaccount:{namespace}:lint-ci"

    def can(verb: str, resource: str) -> bool:
        result = kubectl("auth", "can-i", verb, resource, "-n", namespace, f"--as={who}", check=False)
        return result.stdout.strip() == "yes"

    try:
        assert all(can(verb, r) for verb in ("get", "list") for r in ("deployments.apps", "configmaps", "namespaces"))
        assert can("list", "horizontalpodautoscalers.autoscaling")
        assert not any(can(verb, "deployments.apps") for verb in ("patch", "create", "update", "delete"))
        assert not can("get", "secrets") and not can("list", "secrets")

        apply(kubectl, deployment_text(namespace), "--server-side")
        write(folder, "web.yaml", deployment_text(namespace, app="web2"))
        token = cluster.service_account_token(namespace, "lint-ci")
        config = cluster.write_kubeconfig(folder.parent / "lint-ci.kubeconfig", token=token, namespace=namespace)
        assert live_findings(live_lint(cluster, folder, "--read-only", kubeconfig=config))[0][:4] == (
            "web.yaml", 10, 19, "FW502")
        refused = live_lint(cluster, folder, kubeconfig=config)
        assert refused.code == 2 and refused.findings == []
        assert f"fieldwarden: --cluster: not allowed to dry-run the apply of Deployment/{namespace}/web" in refused.stderr
        assert "bind the chart's lint-dryrun role, or use --read-only" in refused.stderr

        kubectl("create", "clusterrolebinding", f"lint-ci-dryrun-{suffix}", f"--clusterrole={dryrun}",
                f"--serviceaccount={namespace}:lint-ci")
        assert can("patch", "deployments.apps") and can("create", "deployments.apps")
        assert not can("update", "deployments.apps") and not can("delete", "deployments.apps")
        assert not can("get", "secrets")
        wait_for(lambda: live_lint(cluster, folder, kubeconfig=config).code == 1, "the dry-run role to take effect", 20)
        assert live_findings(live_lint(cluster, folder, kubeconfig=config))[0][:4] == ("web.yaml", 10, 19, "FW502")
        # a Secret manifest: not readable, so not checked, and said
        write(folder, "secret.yaml", f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: {namespace}\n")
        skipped = live_lint(cluster, folder, kubeconfig=config)
        assert f"not allowed to get secrets in {namespace}: 1 object not checked" in skipped.stderr
    finally:
        for binding in (f"lint-ci-{suffix}", f"lint-ci-dryrun-{suffix}"):
            kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found")
        kubectl("delete", "clusterrole", reader, dryrun, "--ignore-not-found")


def test_an_unreachable_api_server_is_a_message_and_exit_2(cluster: Cluster, folder: Path) -> None:
    write(folder, "web.yaml", deployment_text("default"))
    dead = folder.parent / "dead.kubeconfig"
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    from tests.e2e.cluster import free_ports

    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_ports(1)[0]}"
    dead.write_text(json.dumps(config))
    done = subprocess.run([sys.executable, "-m", "fieldwarden", "lint", "--cluster", "--kubeconfig", str(dead),
                           "--no-context", "web.yaml"], cwd=folder, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("fieldwarden: --cluster: cannot reach the API server at https://127.0.0.1:")
    assert "Traceback" not in done.stderr and done.stdout == ""


# --- apply units: what is applied is the render -----------------------------------------------------

# the overlays' base: `web` with no namespace (the overlay or the release gives it one) and no strategy
BASE_DEPLOYMENT = web_deployment(replicas=2, image="registry.example/web:1.0")
RECREATE_PATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  strategy:
    type: Recreate
"""


def overlay_tree(folder: Path, namespace: str) -> None:
    """base/ (a Deployment without a namespace) and overlays/prod/ putting it in `namespace`, patched to Recreate."""
    write(folder, "base/deploy.yaml", BASE_DEPLOYMENT)
    write(folder, "base/kustomization.yaml", "resources: [deploy.yaml]\n")
    write(folder, "overlays/prod/kustomization.yaml",
          f"namespace: {namespace}\nresources: [../../base]\npatches:\n  - path: strategy.yaml\n")
    write(folder, "overlays/prod/strategy.yaml", RECREATE_PATCH)


def test_an_overlays_patch_to_recreate_fails_on_the_patch_line(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    live = BASE_DEPLOYMENT.replace("  name: web\n", f"  name: web\n  namespace: {namespace}\n")
    apply(kubectl, live, "--server-side")  # no strategy: the server defaults RollingUpdate
    overlay_tree(folder, namespace)
    run = live_lint(cluster, folder)
    message = f"the API server refuses the apply: spec.strategy.rollingUpdate: {RECREATE_MESSAGE}"
    assert live_findings(run) == [("overlays/prod/strategy.yaml", 6, 3, "FW501", message)]
    finding = next(f for f in run.findings if f["code"] == "FW501")
    assert (finding["object"], finding["unit"], finding["approximate"]) == (
        f"Deployment/{namespace}/web", "overlays/prod (kustomize)", False)
    # the rendered Deployment alone is dry-run: not the base in `default`, not the patch fragment
    assert f"--cluster: 1 object checked against {cluster.url}" in run.stderr
    # kubectl's server-side apply of the same render fails the same way
    rendered = kubectl("kustomize", str(folder / "overlays/prod"))
    failed = kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", stdin=rendered.stdout, check=False)
    assert RECREATE_MESSAGE in failed.stderr

    # an ignore comment at the place the finding is reported suppresses it (and is no unused suppression)
    write(folder, "overlays/prod/strategy.yaml", RECREATE_PATCH.replace(
        "  strategy:\n", "  strategy:  # fieldwarden: ignore[FW501]\n"))
    run = live_lint(cluster, folder)
    assert [(f["code"], f["suppressed"]) for f in run.findings if f["code"] in ("FW501", "FW003")] == [
        ("FW501", "comment at line 6")]
    # so does the annotation of the rendered object, written in the base
    write(folder, "overlays/prod/strategy.yaml", RECREATE_PATCH)
    write(folder, "base/deploy.yaml", BASE_DEPLOYMENT.replace(
        "  name: web\n", "  name: web\n  annotations: {fieldwarden.io/ignore: apply-rejected-invalid}\n", 1))
    run = live_lint(cluster, folder)
    assert [(f["code"], f["suppressed"]) for f in run.findings if f["code"] in ("FW501", "FW003")] == [
        ("FW501", "annotation fieldwarden.io/ignore")]


INCOMPLETE_BASE = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  template:
    spec:
      containers:
        - name: api
          image: registry.example/api:1.0
"""


def test_an_incomplete_base_is_checked_only_as_its_overlay_renders_it(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    # the base has no namespace, no selector and no pod labels: the overlay adds them
    write(folder, "base/deploy.yaml", INCOMPLETE_BASE)
    write(folder, "base/kustomization.yaml", "resources: [deploy.yaml]\n")
    write(folder, "overlays/prod/kustomization.yaml", "\n".join([
        f"namespace: {namespace}", "resources: [../../base]", "labels:", "  - pairs: {app: api}",
        "    includeSelectors: true", "    includeTemplates: true", "patches:", "  - path: replicas.yaml"]) + "\n")
    write(folder, "overlays/prod/replicas.yaml",
          "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  replicas: 3\n")
    # the base alone is refused (no selector); as rendered, the overlay's Deployment is a valid new object
    alone = kubectl("apply", "--dry-run=server", "-n", namespace, "-f", str(folder / "base/deploy.yaml"), check=False)
    assert "spec.selector: Required value" in alone.stderr
    run = live_lint(cluster, folder)
    assert live_findings(run) == []
    assert f"--cluster: 1 object checked against {cluster.url}" in run.stderr

    # the render (namespace, selector, labels of the overlay) is what is dry-run: another manager's live
    # replicas conflict with the patch's, on the patch's line
    rendered = yaml.safe_load(kubectl("kustomize", str(folder / "overlays/prod")).stdout)
    assert rendered["metadata"]["namespace"] == namespace and rendered["spec"]["selector"] == {"matchLabels": {"app": "api"}}
    rendered["spec"]["replicas"] = 5
    kubectl("apply", "--server-side", "--field-manager=other-team", "-f", "-", stdin=yaml.safe_dump(rendered))
    run = live_lint(cluster, folder)
    assert live_findings(run) == [("overlays/prod/replicas.yaml", 6, 3, "FW503", 'the API server refuses the apply: '
                                   'conflict with "other-team": .spec.replicas (live 5, the manifest 3)')]
    assert not [f for f in run.findings if f["file"].startswith("base/") and f["code"].startswith("FW5")]


CHART_DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ .Values.replicas }}
  strategy:
    type: {{ .Values.strategy }}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: {{ .Chart.Name }}}
    spec:
      containers:
        - name: web
          image: {{ .Values.image | quote }}
"""


def test_a_charts_rendered_object_is_checked_in_its_release_namespace_on_the_template_line(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    live = BASE_DEPLOYMENT.replace("  name: web\n", f"  name: web\n  namespace: {namespace}\n", 1)
    apply(kubectl, live, "--server-side")
    write(folder, ".fieldwarden.yaml", f"default-namespace: {namespace}\n")  # the release namespace
    write(folder, "charts/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n")
    write(folder, "charts/web/values.yaml", "replicas: 2\nstrategy: Recreate\nimage: registry.example/web:1.0\n")
    write(folder, "charts/web/templates/deployment.yaml", CHART_DEPLOYMENT)
    run = live_lint(cluster, folder)
    message = f"the API server refuses the apply: spec.strategy.rollingUpdate: {RECREATE_MESSAGE}"
    assert live_findings(run) == [("charts/web/templates/deployment.yaml", 7, 3, "FW501", message)]
    finding = next(f for f in run.findings if f["code"] == "FW501")
    assert (finding["object"], finding["unit"]) == (f"Deployment/{namespace}/web", "charts/web (helm)")
    assert f"--cluster: 1 object checked against {cluster.url}" in run.stderr


# --- a pull request from a stranger: no write, no Secret value ---------------------------------------

def test_the_issues_path_injection_does_not_touch_the_live_deployment(
        cluster: Cluster, kubectl: Kubectl, namespace: str, tmp_path: Path) -> None:
    """Issue 20 item 1: a namespace with `..` segments and a `#` aimed a client-side "dry run" PATCH at a live object."""
    apply(kubectl, deployment_text(namespace))
    before = settled(kubectl, namespace)
    hostile = f"x/../../../../../apis/apps/v1/namespaces/{namespace}/deployments/web#"
    root = git_repo(tmp_path / "pr", {
        ".fieldwarden.yaml": "cluster: {apply-mode: client}\n",
        "argocd/web.yaml": "\n".join([
            "apiVersion: argoproj.io/v1alpha1", "kind: Application", "metadata: {name: web, namespace: argocd}",
            "spec:", "  project: default", "  source: {repoURL: https://example.com/deploy.git, path: app}",
            f"  destination: {{server: https://kubernetes.default.svc, namespace: '{hostile}'}}"]) + "\n",
        "app/deploy.yaml": deployment_text(namespace, image="attacker.example/backdoor:1").replace(
            f"  namespace: {namespace}\n", ""),
    })
    run = lint(["--cluster", "--kubeconfig", str(cluster.kubeconfig), "--select", "FW5", "."], cwd=root)
    after = kubectl("get", "deployment", "web", "-n", namespace, "-o", "json").json()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["metadata"]["generation"] == before["metadata"]["generation"]
    assert after["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/web:1.0"
    assert ("app/deploy.yaml", "FW501") in [(f["file"], f["code"]) for f in run.findings]
    assert "with a name or namespace the API server refuses not checked" in run.stderr


def settled(kubectl: Kubectl, namespace: str) -> Obj:
    """Deployment web once the controllers have stopped writing its status (its resourceVersion holds for 2 s)."""
    seen: list[Obj] = []

    def steady() -> Obj | None:
        seen.append(kubectl("get", "deployment", "web", "-n", namespace, "-o", "json").json())
        old = [d for d in seen if d["metadata"]["resourceVersion"] == seen[-1]["metadata"]["resourceVersion"]]
        return seen[-1] if len(old) >= 5 else None

    return wait_for(steady, "deployment web's status to settle", timeout=30, interval=0.5)


LIVE_PASSWORD = "live-Pa55word-from-the-cluster"
PR_PASSWORD = "pr-guess-0f-the-password"


def secret_text(namespace: str, password: str, name: str = "db") -> str:
    encoded = base64.b64encode(password.encode()).decode()
    return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: {namespace}\n"
            f"data:\n  password: {encoded}\n")


def test_live_secret_values_are_never_printed_in_any_format(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, secret_text(namespace, LIVE_PASSWORD), "--server-side", "--field-manager=vault-operator")
    apply(kubectl, "\n".join(["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: settings",
                              f"  namespace: {namespace}", "data:", f"  token: {LIVE_PASSWORD}-cm", ""]),
          "--server-side", "--field-manager=vault-operator")
    write(folder, "secret.yaml", secret_text(namespace, PR_PASSWORD))
    write(folder, "settings.yaml", "\n".join(["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: settings",
                                              f"  namespace: {namespace}", "data:", f"  token: {PR_PASSWORD}-cm", ""]))
    write(folder, ".fieldwarden.yaml", "cluster: {sensitive-fields: ['ConfigMap:data']}\n")
    secrets = [LIVE_PASSWORD, PR_PASSWORD, base64.b64encode(LIVE_PASSWORD.encode()).decode(),
               base64.b64encode(PR_PASSWORD.encode()).decode()]
    seen = []
    for args in ([], ["--read-only"], ["--force-conflicts"]):
        run = live_lint(cluster, folder, "--select", "FW5", *args)
        found = live_findings(run)
        seen.append([(file, code) for file, _, _, code, _ in found])
        assert all("<redacted>" in message for *_, message in found), found
        text = json.dumps(run.findings) + run.stderr
        assert not [s for s in secrets if s in text]
        for name in ("text", "sarif", "github"):
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                main(["lint", "--cluster", "--kubeconfig", str(cluster.kubeconfig), "--no-context", "--select", "FW5",
                      "--format", name, *args, str(folder)])
            assert not [s for s in secrets if s in out.getvalue() + err.getvalue()], out.getvalue() + err.getvalue()
    assert seen == [[("secret.yaml", "FW503"), ("settings.yaml", "FW503")]] * 2 + [
        [("secret.yaml", "FW506"), ("settings.yaml", "FW506")]]


def test_an_rbac_name_that_is_no_dns_name_is_encoded_into_the_path(
        cluster: Cluster, kubectl: Kubectl, folder: Path) -> None:
    name = f"e2e:lint reader {uuid.uuid4().hex[:5]}"  # a ':' and spaces: a valid ClusterRole name

    def role(verbs: str) -> str:
        return (f"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: '{name}'\n"
                f"rules:\n  - apiGroups: ['']\n    resources: [configmaps]\n    verbs: [{verbs}]\n")

    apply(kubectl, role("get"), "--server-side", "--field-manager=other-team")
    try:
        write(folder, "role.yaml", role("get, list"))
        run = live_lint(cluster, folder, "--select", "FW5")
        assert [(file, code) for file, _, _, code, _ in live_findings(run)] == [("role.yaml", "FW503")]
        assert "1 object checked" in run.stderr
    finally:
        kubectl("delete", "clusterrole", name)
