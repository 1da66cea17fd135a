"""`lint --cluster` on fields whose owner the next apply does not change: the HPA's replicas, a co-owned label.

Real kube-apiserver and kube-controller-manager (a live HPA scales the Deployment), real kubectl
for every write, each prediction checked against what `kubectl apply --server-side --dry-run=server`
itself says the apply stores.
"""

from __future__ import annotations

from pathlib import Path

from tests.e2e.cluster import Cluster
from tests.e2e.kubectl import Kubectl
from tests.e2e.processes import wait_for
from tests.e2e.test_live_lint import HPA, OPT_OUT, apply, deployment_text, dry_run, folder, live_findings, live_lint
from tests.helpers import write

__all__ = ["folder"]  # (the fixture, imported for pytest)

LABELS_LINE = 6  # `  labels: ...` in labelled() below


def labelled(namespace: str, labels: str) -> str:
    """deployment_text() with `metadata.labels` on its own line (LABELS_LINE), replicas left out."""
    text = deployment_text(namespace, replicas=None)
    return text.replace(f"  namespace: {namespace}\n", f"  namespace: {namespace}\n  labels: {{{labels}}}\n")


def test_replicas_left_out_under_an_hpa_are_not_a_default_left_behind(
        controller_manager: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    # the state of an object whose managedFields predate its first server-side apply (created before
    # server-side apply, or its managedFields reset): the first apply gives every field to
    # "before-first-apply", the HPA's replicas too
    kubectl("label", "namespace", namespace, f"{OPT_OUT[0]}={OPT_OUT[1]}")  # (fieldwarden's FW403 off here)
    apply(kubectl, deployment_text(namespace, replicas=1), "--server-side", "--field-manager", "deployer")
    apply(kubectl, HPA.format(namespace=namespace).replace("minReplicas: 4", "minReplicas: 5"))
    wait_for(lambda: kubectl.get("deployment", "web", namespace)["spec"]["replicas"] == 5,
             "the HPA to scale web to 5", 60, interval=0.5)
    kubectl("patch", "deployment", "web", "-n", namespace, "--type", "merge", "-p", '{"metadata":{"managedFields":[{}]}}')
    # the next deploy: a new image, replicas left to the HPA (FW301's advice)
    write(folder, "web.yaml", deployment_text(namespace, replicas=None, image="registry.example/web:1.1"))

    # the team's applies take conflicting fields over (Flux, Argo CD's ServerSideApply): the image goes through
    assert live_findings(live_lint(controller_manager, folder, "--field-manager", "ci", "--force-conflicts")) == []
    kept = dry_run(kubectl, folder / "web.yaml", "--server-side", "--field-manager", "ci", "--force-conflicts")
    assert kept["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example/web:1.1"
    assert kept["spec"]["replicas"] == 5  # the apply keeps the HPA's count: nothing is left behind
    shown = kubectl("apply", "--dry-run=server", "--server-side", "--field-manager", "ci", "--force-conflicts",
                    "--show-managed-fields",
                    "-o", "json", "-f", str(folder / "web.yaml")).json()
    managers = {entry["manager"] for entry in shown["metadata"]["managedFields"]}
    assert "before-first-apply" in managers  # (the state this test is about)


def test_a_label_dropped_from_the_manifest_that_another_manager_also_applies_stays(
        cluster: Cluster, kubectl: Kubectl, namespace: str, folder: Path) -> None:
    apply(kubectl, labelled(namespace, "team: a, tier: web"), "--server-side", "--field-manager", "ci")
    # a second applier (another pipeline, a GitOps controller) applies the same label: both own it
    apply(kubectl, "\n".join(["apiVersion: apps/v1", "kind: Deployment", "metadata:", "  name: web",
                              f"  namespace: {namespace}", "  labels: {tier: web}"]) + "\n",
          "--server-side", "--field-manager", "platform")
    write(folder, "web.yaml", labelled(namespace, "team: a"))

    message = ('.metadata.labels.tier stays "web": the manifest no longer sets it, but "platform" owns it too, and an '
               "apply removes only what no other manager owns")
    assert live_findings(live_lint(cluster, folder, "--field-manager", "ci")) == [
        ("web.yaml", LABELS_LINE, 3, "FW510", message)]
    assert dry_run(kubectl, folder / "web.yaml", "--server-side", "--field-manager", "ci")["metadata"]["labels"] == {
        "team": "a", "tier": "web"}  # kubectl agrees: the label stays
    assert live_findings(live_lint(cluster, folder, "--field-manager", "ci", "--read-only")) == [
        ("web.yaml", LABELS_LINE, 3, "FW510", message + " (predicted from managedFields: --read-only)")]

    # the control: a label only the applier owns goes, and nothing is said
    write(folder, "web.yaml", labelled(namespace, "tier: web"))
    assert live_findings(live_lint(cluster, folder, "--field-manager", "ci")) == []
    assert dry_run(kubectl, folder / "web.yaml", "--server-side", "--field-manager", "ci")["metadata"]["labels"] == {
        "tier": "web"}
    # client-side apply removes what its last applied configuration had, whoever else owns it: not FW510's
    assert [f[3] for f in live_findings(live_lint(cluster, folder, "--field-manager", "ci", "--apply-mode", "client"))
            if f[3] == "FW510"] == []
