"""FW401 behind a real kube-apiserver: on a pod, only images change, whatever kubectl command is used.

Allowed, and stored: `kubectl set image`, `label`, `annotate`, a status write (`kubectl patch
--subresource=status`), `kubectl debug` (an ephemeral container, through
pods/ephemeralcontainers; no kubelet runs it, but the API write is kept) and an in-place resize
(pods/resize). The chart never sends those subresources to the webhook, and FW401 would deny the
last two as spec changes if it judged them.

Denied, with kubectl's exit code 1 and the paths named: what the API server's own
`ValidatePodUpdate` lets through on a pod update — `spec.activeDeadlineSeconds` set or lowered,
tolerations added — through `kubectl patch`, `apply` and `replace`. What the API server refuses
itself (raising the deadline, `kubectl set env`) never reaches the webhook. A negative
`terminationGracePeriodSeconds` is stored as 1 on create by this API server (v1.32), so its
"negative to 1" update cannot be made. On a pod that still has scheduling gates, a queue
controller's edits (nodeSelector, node affinity, tolerations, gates removed) pass, anything
else does not, and once the last gate is gone the pod is ordinary. `--dry-run=server` gives the
same verdicts and stores nothing.

Exemptions cannot be self-granted: the issue's `kubectl patch` that adds `fieldwarden.io/ignore:
FW401` and a toleration in one request is denied, and so is labelling the pod
`fieldwarden.io/admission=disabled` (through the pod or its status) before changing it. Subjects
FW401 exempts (a user, a group: a cluster of this module's own with that configuration) still
can; there `subresources: [ephemeralcontainers]` makes `kubectl debug` denied too.

The API-fake counterparts (tests/webhook/server, on AdmissionReview fixtures) keep what a real
server cannot be made to send: images with whitespace, reordered or added containers, specs
deeper than the recursion limit.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any, Callable

from pathlib import Path
from typing import Iterator

import pytest

from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.install import Installation
from tests.e2e.kubectl import Kubectl, Result, find_kubectl
from tests.e2e.own_cluster import new_namespace, own_installation

IMAGE = "registry.example/web:1.0"
NEW_IMAGE = "registry.example/web:2.0"
WEBHOOK = "image-only-pod-updates.fieldwarden.io"
DENIED = f'admission webhook "{WEBHOOK}" denied the request: [FW401 pod-update-not-image-only] '
TOLERATION = {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}
Obj = dict[str, Any]


def pod_manifest(name: str = "web", **spec: Any) -> Obj:
    """A Burstable pod (requests below limits), so that an in-place resize keeps its QoS class."""
    resources = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": IMAGE, "resources": resources}], **spec}}


def create(kubectl: Kubectl, namespace: str, manifest: Obj) -> Obj:
    kubectl("apply", "-n", namespace, "-f", "-", stdin=manifest)
    return stored(kubectl, namespace, manifest["metadata"]["name"])


def stored(kubectl: Kubectl, namespace: str, name: str = "web") -> Obj:
    pod: Obj = kubectl.get("pod", name, namespace)
    return pod


def denied_paths(result: Result) -> list[str]:
    """The field paths FW401's denial names, in order (an AssertionError when it is no FW401 denial)."""
    assert result.code == 1, result
    assert DENIED in result.stderr, result
    found = re.search(r"this one also changes (.*) \(roll the workload", result.stderr)
    assert found is not None, result
    return found.group(1).split(", ")


def without(spec: Obj, *keys: str) -> Obj:
    return {k: v for k, v in spec.items() if k not in keys}


# -- allowed: each edit's kubectl command, then what must have changed (and nothing else in the spec) --

def check_image(before: Obj, after: Obj) -> None:
    assert after["spec"]["containers"][0]["image"] == NEW_IMAGE
    expected = copy.deepcopy(before["spec"])
    expected["containers"][0]["image"] = NEW_IMAGE
    assert after["spec"] == expected


def check_label(before: Obj, after: Obj) -> None:
    assert after["metadata"]["labels"] == {**before["metadata"]["labels"], "tier": "frontend"}
    assert after["spec"] == before["spec"]


def check_annotation(before: Obj, after: Obj) -> None:
    assert after["metadata"]["annotations"]["example.com/owner"] == "team-a"
    assert after["spec"] == before["spec"]


def check_status(before: Obj, after: Obj) -> None:
    conditions = {c["type"]: c["status"] for c in after["status"]["conditions"]}
    assert conditions["example.com/Warm"] == "True"
    assert after["spec"] == before["spec"]


def check_ephemeral(before: Obj, after: Obj) -> None:
    debugger = after["spec"]["ephemeralContainers"]
    assert [(c["name"], c["image"]) for c in debugger] == [("debugger", "registry.example/busybox:1.36")]
    assert without(after["spec"], "ephemeralContainers") == before["spec"]


def check_resize(before: Obj, after: Obj) -> None:
    expected = copy.deepcopy(before["spec"])
    expected["containers"][0]["resources"]["requests"]["cpu"] = "150m"
    assert after["spec"] == expected


STATUS_PATCH = json.dumps({"status": {"conditions": [{"type": "example.com/Warm", "status": "True"}]}})
RESIZE_PATCH = json.dumps({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "150m"}}}]}})
ALLOWED: dict[str, tuple[list[str], str, Callable[[Obj, Obj], None]]] = {
    "set-image": (["set", "image", "pod/web", f"app={NEW_IMAGE}"], "pod/web image updated", check_image),
    "label": (["label", "pod/web", "tier=frontend"], "pod/web labeled", check_label),
    "annotate": (["annotate", "pod/web", "example.com/owner=team-a"], "pod/web annotated", check_annotation),
    "status-subresource": (["patch", "pod/web", "--subresource=status", "-p", STATUS_PATCH], "pod/web patched",
                           check_status),
    "debug-ephemeral-container": (["debug", "web", "--image=registry.example/busybox:1.36", "--container=debugger"],
                                  "", check_ephemeral),
    "resize-subresource": (["patch", "pod/web", "--subresource=resize", "-p", RESIZE_PATCH], "pod/web patched",
                           check_resize),
}


@pytest.mark.parametrize("edit", list(ALLOWED))
def test_image_metadata_and_subresource_writes_are_allowed_and_stored(
        edit: str, fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    argv, printed, check = ALLOWED[edit]
    before = create(kubectl, namespace, pod_manifest())
    done = kubectl(*argv, "-n", namespace, check=False)
    assert done.code == 0 and "FW401" not in done.stderr, done
    assert done.stdout.strip() == printed, done
    check(before, stored(kubectl, namespace))


# -- denied: what the API server lets through on a pod update, FW401 does not --

def patch(*argv: str) -> Callable[[Kubectl, str], Result]:
    def run(kubectl: Kubectl, namespace: str) -> Result:
        return kubectl("patch", "pod/web", "-n", namespace, *argv, check=False)
    return run


def apply_changed_manifest(kubectl: Kubectl, namespace: str) -> Result:
    """A new image, and a deadline and a toleration someone added to the manifest."""
    manifest = pod_manifest(activeDeadlineSeconds=600, tolerations=[TOLERATION])
    manifest["spec"]["containers"][0]["image"] = NEW_IMAGE
    return kubectl("apply", "-n", namespace, "-f", "-", stdin=manifest, check=False)


def replace_edited(kubectl: Kubectl, namespace: str) -> Result:
    """What `kubectl edit` amounts to: the stored pod, changed, sent back whole."""
    pod = stored(kubectl, namespace)
    pod["spec"]["activeDeadlineSeconds"] = 600
    del pod["metadata"]["resourceVersion"]  # unconditional: the controller may mark the pod meanwhile
    return kubectl("replace", "-n", namespace, "-f", "-", stdin=pod, check=False)


ADD_TOLERATION = json.dumps([{"op": "add", "path": "/spec/tolerations/-", "value": TOLERATION}])
DENIED_EDITS: dict[str, tuple[Obj, Callable[[Kubectl, str], Result], list[str]]] = {
    # name: (spec of the pod created, the edit, the paths the denial names)
    "deadline-set": ({}, patch("-p", '{"spec": {"activeDeadlineSeconds": 600}}'), ["spec.activeDeadlineSeconds"]),
    "deadline-lowered": ({"activeDeadlineSeconds": 3600}, patch("-p", '{"spec": {"activeDeadlineSeconds": 600}}'),
                         ["spec.activeDeadlineSeconds"]),
    "toleration-added": ({}, patch("--type=json", "-p", ADD_TOLERATION), ["spec.tolerations"]),
    "apply-image-deadline-and-toleration": ({}, apply_changed_manifest,
                                            ["spec.activeDeadlineSeconds", "spec.tolerations"]),
    "replace-with-deadline": ({}, replace_edited, ["spec.activeDeadlineSeconds"]),
}


@pytest.mark.parametrize("edit", list(DENIED_EDITS))
def test_spec_changes_the_api_server_allows_are_denied_naming_the_paths(
        edit: str, fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    spec, change, paths = DENIED_EDITS[edit]
    before = create(kubectl, namespace, pod_manifest(**spec))
    assert denied_paths(change(kubectl, namespace)) == paths
    assert stored(kubectl, namespace)["spec"] == before["spec"]  # the image too, where it was part of the edit


@pytest.mark.parametrize("argv, reason", [
    (["patch", "pod/web", "-p", '{"spec": {"activeDeadlineSeconds": 7200}}'],
     "spec.activeDeadlineSeconds: Invalid value: 7200: must be less than or equal to previous value"),
    (["set", "env", "pod/web", "LOG_LEVEL=debug"],
     "spec: Forbidden: pod updates may not change fields other than"),
], ids=["deadline-raised", "set-env"])
def test_what_the_api_server_refuses_itself_never_reaches_the_webhook(
        argv: list[str], reason: str, fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    before = create(kubectl, namespace, pod_manifest(activeDeadlineSeconds=3600))
    refused = kubectl(*argv, "-n", namespace, check=False)
    assert refused.code == 1 and f'Pod "web" is invalid: {reason}' in refused.stderr, refused
    assert "FW401" not in refused.stderr
    assert stored(kubectl, namespace)["spec"] == before["spec"]


def test_a_gated_pod_takes_a_queue_controllers_scheduling_edits_then_only_images(
        fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    gates = [{"name": "example.com/queue"}, {"name": "example.com/quota"}]
    create(kubectl, namespace, pod_manifest(schedulingGates=gates))
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "example.com/pool", "operator": "In", "values": ["batch"]}]}]}}}
    admitted = [  # what Kueue does to a gated pod it admits: place it, then lift its gate
        ["-p", json.dumps({"spec": {"nodeSelector": {"topology.kubernetes.io/zone": "zone-a"}}})],
        ["--type=json", "-p", json.dumps([{"op": "add", "path": "/spec/affinity", "value": affinity}])],
        ["--type=json", "-p", ADD_TOLERATION],
        ["--type=json", "-p", json.dumps([{"op": "remove", "path": "/spec/schedulingGates/0"}])],
    ]
    for argv in admitted:
        kubectl("patch", "pod/web", "-n", namespace, *argv)
    pod = stored(kubectl, namespace)
    assert pod["spec"]["nodeSelector"] == {"topology.kubernetes.io/zone": "zone-a"}
    assert pod["spec"]["affinity"] == affinity
    assert TOLERATION in pod["spec"]["tolerations"]
    assert pod["spec"]["schedulingGates"] == [{"name": "example.com/quota"}]

    # Gated or not, the rest of the spec is not the queue's: denied.
    deadline = patch("-p", '{"spec": {"activeDeadlineSeconds": 600}}')
    assert denied_paths(deadline(kubectl, namespace)) == ["spec.activeDeadlineSeconds"]

    kubectl("patch", "pod/web", "-n", namespace, "--type=json",
            "-p", json.dumps([{"op": "remove", "path": "/spec/schedulingGates"}]))
    ungated = stored(kubectl, namespace)
    assert "schedulingGates" not in ungated["spec"]
    # An ordinary pod now: another toleration is denied, as on any pod.
    another = {"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    more = patch("--type=json", "-p", json.dumps([{"op": "add", "path": "/spec/tolerations/-", "value": another}]))
    assert denied_paths(more(kubectl, namespace)) == ["spec.tolerations"]
    assert stored(kubectl, namespace)["spec"] == ungated["spec"]


def test_a_server_dry_run_gets_the_same_verdicts_and_stores_nothing(
        fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    before = create(kubectl, namespace, pod_manifest())
    shown = kubectl.json("set", "image", "pod/web", "-n", namespace, f"app={NEW_IMAGE}", "--dry-run=server")
    assert shown["spec"]["containers"][0]["image"] == NEW_IMAGE
    deadline = ["patch", "pod/web", "-n", namespace, "-p", '{"spec": {"activeDeadlineSeconds": 600}}']
    dry = kubectl(*deadline, "--dry-run=server", check=False)
    assert denied_paths(dry) == ["spec.activeDeadlineSeconds"]
    after = stored(kubectl, namespace)
    assert after["spec"] == before["spec"]  # neither the image nor the deadline
    real = kubectl(*deadline, check=False)
    assert denied_paths(real) == denied_paths(dry) and real.stderr == dry.stderr


# -- exemptions: whoever is policed cannot grant them --

SELF_EXEMPT = json.dumps({"metadata": {"annotations": {"fieldwarden.io/ignore": "FW401"}},
                          "spec": {"tolerations": [TOLERATION]}})
NOT_GRANTED = "a pod update may not grant exemptions; this one "


def grants_refused(result: Result, what: str) -> None:
    assert result.code == 1, result
    assert f"{DENIED}{NOT_GRANTED}{what} (only subjects exempt" in result.stderr, result


def test_the_pods_updater_cannot_exempt_it_with_the_ignore_annotation(
        fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    before = create(kubectl, namespace, pod_manifest())
    refused = kubectl("patch", "pod/web", "-n", namespace, "-p", SELF_EXEMPT, check=False)
    grants_refused(refused, "adds the annotation fieldwarden.io/ignore")
    assert "also changes spec.tolerations" in refused.stderr
    annotate = kubectl("annotate", "pod/web", "-n", namespace, "fieldwarden.io/ignore=all", check=False)
    grants_refused(annotate, "adds the annotation fieldwarden.io/ignore")
    through_status = kubectl("patch", "pod/web", "-n", namespace, "--subresource=status", "-p",
                             json.dumps({"metadata": {"annotations": {"fieldwarden.io/ignore": "FW401"}}}), check=False)
    grants_refused(through_status, "adds the annotation fieldwarden.io/ignore")
    after = stored(kubectl, namespace)
    assert after["spec"] == before["spec"] and "fieldwarden.io/ignore" not in after["metadata"]["annotations"]


@pytest.mark.parametrize("subresource", [[], ["--subresource=status"]], ids=["pod", "status"])
def test_labelling_the_pod_out_of_the_webhook_then_changing_it_is_denied(
        subresource: list[str], fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    before = create(kubectl, namespace, pod_manifest())
    label = {"metadata": {"labels": {"fieldwarden.io/admission": "disabled"}}}
    refused = kubectl("patch", "pod/web", "-n", namespace, *subresource, "-p", json.dumps(label), check=False)
    grants_refused(refused, "sets the opt-out label fieldwarden.io/admission=disabled")
    assert denied_paths(patch("--type=json", "-p", ADD_TOLERATION)(kubectl, namespace)) == ["spec.tolerations"]
    after = stored(kubectl, namespace)
    assert after["spec"] == before["spec"] and "fieldwarden.io/admission" not in after["metadata"]["labels"]
    # A status write that leaves the exemptions alone is not even sent (the match condition).
    kubectl("patch", "pod/web", "-n", namespace, "--subresource=status", "-p", STATUS_PATCH)


EXEMPT_USER, EXEMPT_GROUP = "alice@example.com", "example:pod-admins"


@pytest.fixture(scope="module")
def exempting(start_cluster: Callable[[ClusterOptions], Cluster], failure_logs: list[Any],
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Kubectl, str]]:
    """An installation whose FW401 exempts a user and a group and judges kubectl debug; kubectl, a namespace."""
    values = {"config": {"rules": {"FW401": {"exempt-users": [EXEMPT_USER], "exempt-groups": [EXEMPT_GROUP],
                                             "subresources": ["ephemeralcontainers"]}}}}
    folder = tmp_path_factory.mktemp("exempting")
    with own_installation(start_cluster, failure_logs, "fw401-exempting", folder, values) as installed:
        binary = find_kubectl(installed.cluster.assets.kubectl)
        assert binary is not None
        kubectl = Kubectl(binary, installed.cluster.kubeconfig, Path(folder) / "kubectl-cache")
        namespace = new_namespace(installed.cluster, "fw401-exempting")
        # The impersonated subjects may do anything in the namespace (RBAC); only FW401 tells them apart.
        kubectl("create", "rolebinding", "admins", "-n", namespace, "--clusterrole=cluster-admin", f"--user={EXEMPT_USER}",
                f"--group={EXEMPT_GROUP}", "--user=bob@example.com")
        yield kubectl, namespace


@pytest.mark.parametrize("who", [
    ["--as", EXEMPT_USER],
    ["--as", "carol@example.com", "--as-group", EXEMPT_GROUP],
], ids=["exempt-user", "exempt-group"])
def test_an_exempt_subject_can_still_exempt_a_pod(who: list[str], exempting: tuple[Kubectl, str]) -> None:
    kubectl, namespace = exempting
    name = f"web-{who[1].split('@')[0]}"
    create(kubectl, namespace, pod_manifest(name))
    kubectl("patch", f"pod/{name}", "-n", namespace, *who, "-p", SELF_EXEMPT)
    kubectl("label", f"pod/{name}", "-n", namespace, *who, "fieldwarden.io/admission=disabled")
    pod = stored(kubectl, namespace, name)
    assert pod["metadata"]["annotations"]["fieldwarden.io/ignore"] == "FW401"
    assert pod["metadata"]["labels"]["fieldwarden.io/admission"] == "disabled"
    assert TOLERATION in pod["spec"]["tolerations"]
    # Exempt now, for anyone: the stored annotation counts.
    kubectl("patch", f"pod/{name}", "-n", namespace, "-p", '{"spec": {"activeDeadlineSeconds": 600}}')


def test_others_still_cannot_and_kubectl_debug_is_judged_when_configured(exempting: tuple[Kubectl, str]) -> None:
    kubectl, namespace = exempting
    create(kubectl, namespace, pod_manifest("web-bob"))
    as_bob = ["--as", "bob@example.com"]
    refused = kubectl("patch", "pod/web-bob", "-n", namespace, *as_bob, "-p", SELF_EXEMPT, check=False)
    grants_refused(refused, "adds the annotation fieldwarden.io/ignore")
    debug = kubectl("debug", "web-bob", "-n", namespace, *as_bob, "--image=registry.example/busybox:1.36",
                    "--container=debugger", check=False)
    assert denied_paths(debug) == ["spec.ephemeralContainers"]
    kubectl("debug", "web-bob", "-n", namespace, "--as", EXEMPT_USER, "--image=registry.example/busybox:1.36",
            "--container=debugger")
    assert [c["name"] for c in stored(kubectl, namespace, "web-bob")["spec"]["ephemeralContainers"]] == ["debugger"]
