"""FW402 behind a real kube-apiserver: every way a pod is created gets the gate and label once, and the controller marks it.

The paths: `kubectl apply` (client-side), `kubectl run`, `kubectl create` of a `generateName`
manifest without a namespace, `kubectl apply --server-side`, and a Deployment's ReplicaSet's pods
(kube-controller-manager creates them, through the webhook like any client). Each stored pod has
exactly one `InPlaceUpdateReady` gate and the injected label; re-applying the manifest changes
neither; when a later webhook changes the pod, the API server calls fieldwarden again and it adds
nothing. The controller then sets the condition `"True"` through `pods/status`, which managedFields
records under its own field manager.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.install import Installation
from tests.e2e.kubectl import Kubectl
from tests.e2e.processes import wait_for
from tests.webhook.exposition import value

IMAGE = "registry.example/web:1.0"
CONTROLLER_MANAGER = "fieldwarden-controller"
MARK_TIMEOUT = 15.0
Obj = dict[str, Any]


def pod_manifest(**metadata: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "labels": {"app": "web"}, **metadata},
            "spec": {"containers": [{"name": "app", "image": IMAGE}]}}


def stored(kubectl: Kubectl, namespace: str, name: str) -> Obj:
    pod: Obj = kubectl.json("get", "pod", name, "-n", namespace, "--show-managed-fields")
    return pod


def gates(pod: Obj) -> list[Obj]:
    return list(pod["spec"].get("readinessGates") or [])


def condition(pod: Obj, condition_type: str) -> Obj | None:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == condition_type), None)


def wait_marked(cluster: Cluster, namespace: str, name: str, condition_type: str) -> Obj:
    """The pod once the controller has set its gate's condition (bounded)."""
    def marked() -> Obj | None:
        pod = cluster.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        return pod if condition(pod, condition_type) else None
    return wait_for(marked, f"the controller to mark {namespace}/{name}", MARK_TIMEOUT)


def assert_gated_once(pod: Obj, fieldwarden: Installation, other_gates: tuple[Obj, ...] = ()) -> None:
    key, value = fieldwarden.injected_label
    assert gates(pod) == [*other_gates, {"conditionType": fieldwarden.condition_type}]
    assert pod["metadata"]["labels"][key] == value


def assert_marked_by_controller(pod: Obj, fieldwarden: Installation) -> None:
    marked = condition(pod, fieldwarden.condition_type)
    assert marked is not None and marked["status"] == "True" and marked["reason"] == "PodInitialized", marked
    status_writes = [m for m in pod["metadata"]["managedFields"]
                     if m["manager"] == CONTROLLER_MANAGER and m.get("subresource") == "status"]
    assert len(status_writes) == 1, pod["metadata"]["managedFields"]
    assert status_writes[0]["operation"] == "Update"
    # Its own condition and nothing else: no spec field, not Ready (the kubelet's).
    assert set(status_writes[0]["fieldsV1"]) == {"f:status"}
    assert set(status_writes[0]["fieldsV1"]["f:status"]) == {"f:conditions"}
    owned = set(status_writes[0]["fieldsV1"]["f:status"]["f:conditions"]) - {"."}
    assert owned == {f'k:{{"type":"{fieldwarden.condition_type}"}}'}, owned


def by_apply(kubectl: Kubectl, namespace: str) -> str:
    done = kubectl("apply", "-n", namespace, "-f", "-", stdin=pod_manifest())
    assert done.stdout.strip() == "pod/web created"
    return "web"


def by_run(kubectl: Kubectl, namespace: str) -> str:
    done = kubectl("run", "web", "-n", namespace, f"--image={IMAGE}", "--labels=app=web", "--restart=Never")
    assert done.stdout.strip() == "pod/web created"
    return "web"


def by_generate_name(kubectl: Kubectl, namespace: str) -> str:
    manifest = pod_manifest()
    del manifest["metadata"]["name"]
    manifest["metadata"]["generateName"] = "web-"  # and no namespace in the object: the request names it
    done = kubectl("create", "-n", namespace, "-f", "-", "-o", "name", stdin=manifest)
    name = done.stdout.strip().removeprefix("pod/")
    assert name.startswith("web-") and len(name) > len("web-"), done
    return name


def by_server_side_apply(kubectl: Kubectl, namespace: str) -> str:
    done = kubectl("apply", "--server-side", "-n", namespace, "-f", "-", stdin=pod_manifest())
    assert done.stdout.strip() == "pod/web serverside-applied"
    return "web"


CREATE_PATHS: dict[str, Callable[[Kubectl, str], str]] = {
    "kubectl-apply": by_apply,
    "kubectl-run": by_run,
    "kubectl-create-generate-name": by_generate_name,
    "kubectl-apply-server-side": by_server_side_apply,
}


@pytest.mark.parametrize("path", list(CREATE_PATHS))
def test_every_way_of_creating_a_pod_gets_the_gate_once_and_the_controller_marks_it(
        path: str, fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl, namespace: str) -> None:
    name = CREATE_PATHS[path](kubectl, namespace)
    assert_gated_once(stored(kubectl, namespace, name), fieldwarden)
    wait_marked(cluster, namespace, name, fieldwarden.condition_type)
    pod = stored(kubectl, namespace, name)
    assert_gated_once(pod, fieldwarden)
    assert_marked_by_controller(pod, fieldwarden)


@pytest.mark.parametrize("flags", [[], ["--server-side"]], ids=["client-side", "server-side"])
def test_applying_the_same_manifest_again_keeps_one_gate_and_the_label(
        flags: list[str], fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", *flags, "-n", namespace, "-f", "-", stdin=pod_manifest())
    again = kubectl("apply", *flags, "-n", namespace, "-f", "-", stdin=pod_manifest(), check=False)
    assert again.code == 0, again
    assert again.stdout.strip() in ("pod/web unchanged", "pod/web serverside-applied"), again
    assert_gated_once(stored(kubectl, namespace, "web"), fieldwarden)


def test_a_server_dry_run_shows_the_gate_and_stores_nothing(
        fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    shown = kubectl.json("run", "web", "-n", namespace, f"--image={IMAGE}", "--dry-run=server")
    assert_gated_once(shown, fieldwarden)
    missing = kubectl("get", "pod", "web", "-n", namespace, check=False)
    assert missing.code == 1 and "NotFound" in missing.stderr


def test_a_manifest_that_already_has_gates_keeps_them_in_order_without_a_duplicate(
        fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl, namespace: str) -> None:
    other = {"conditionType": "example.com/warmed-up"}
    own = pod_manifest(name="own")
    own["spec"]["readinessGates"] = [{"conditionType": fieldwarden.condition_type}]
    populated = pod_manifest(name="populated")
    populated["spec"]["readinessGates"] = [other]
    kubectl("apply", "-n", namespace, "-f", "-", stdin=[own, populated])

    assert_gated_once(wait_marked(cluster, namespace, "populated", fieldwarden.condition_type), fieldwarden,
                      other_gates=(other,))
    # Gated by its author: left exactly as written (no label), so the controller does not watch it.
    own_pod = stored(kubectl, namespace, "own")
    assert gates(own_pod) == [{"conditionType": fieldwarden.condition_type}]
    assert fieldwarden.injected_label[0] not in own_pod["metadata"]["labels"]
    assert condition(own_pod, fieldwarden.condition_type) is None


def test_pods_the_chart_excludes_get_no_gate(fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl,
                                             namespace: str) -> None:
    opted_out = f"{namespace}-off"
    cluster.ensure_namespace(opted_out, labels={"fieldwarden.io/admission": "disabled"})
    cluster.ensure_namespace("kube-system")
    off = "disabled"
    cases = [  # (namespace, pod, gated)
        (fieldwarden.namespace, pod_manifest(name=f"{namespace}-in-release-namespace"), False),  # its own
        ("kube-system", pod_manifest(name=f"{namespace}-in-kube-system"), False),
        (opted_out, pod_manifest(name="in-opted-out-namespace"), False),
        (namespace, pod_manifest(name="opted-out-by-label", labels={"fieldwarden.io/admission": off}), False),
        (namespace, pod_manifest(name="opted-out-by-annotation", annotations={"fieldwarden.io/readiness-gate": off}),
         False),
        (namespace, pod_manifest(name="gated"), True),
    ]
    try:
        for where, pod, _ in cases:
            kubectl("apply", "-n", where, "-f", "-", stdin=pod)
        for where, pod, gated in cases:
            found = gates(stored(kubectl, where, pod["metadata"]["name"]))
            assert found == ([{"conditionType": fieldwarden.condition_type}] if gated else []), (where, pod)
    finally:
        for where, pod, _ in cases[:2]:  # the namespaces other tests share
            kubectl("delete", "pod", pod["metadata"]["name"], "-n", where, "--ignore-not-found", "--wait=false")
        cluster.api.request("DELETE", f"/api/v1/namespaces/{opted_out}")


def deployment_manifest(replicas: int) -> Obj:
    template = pod_manifest()
    del template["metadata"]["name"]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": template["metadata"], "spec": template["spec"]}}}


def pods_of(cluster: Cluster, namespace: str, selector: str) -> list[Obj]:
    items: list[Obj] = cluster.api.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=selector)["items"]
    return items


def test_the_pods_of_a_deployments_replicasets_are_gated_once_and_marked_but_the_templates_are_not(
        fieldwarden: Installation, controller_manager: Cluster, kubectl: Kubectl, namespace: str) -> None:
    cluster = controller_manager
    kubectl("apply", "-n", namespace, "-f", "-", stdin=deployment_manifest(replicas=2))
    kubectl("scale", "deployment/web", "-n", namespace, "--replicas=3")

    def all_marked(count: int, image: str) -> list[Obj] | None:
        pods = [p for p in pods_of(cluster, namespace, "app=web") if p["spec"]["containers"][0]["image"] == image]
        ready = [p for p in pods if condition(p, fieldwarden.condition_type)]
        return pods if len(pods) == count and len(ready) == count else None

    pods = wait_for(lambda: all_marked(3, IMAGE), "3 pods of the Deployment, marked", 30)
    # A new ReplicaSet (a new template) makes new pods: they get the gate as well.
    kubectl("set", "image", "deployment/web", "-n", namespace, "app=registry.example/web:2.0")
    pods += wait_for(lambda: all_marked(1, "registry.example/web:2.0"), "a pod of the new ReplicaSet, marked", 30)
    for pod in pods:
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        full = stored(kubectl, namespace, pod["metadata"]["name"])
        assert_gated_once(full, fieldwarden)
        assert_marked_by_controller(full, fieldwarden)
    # Never injected into the templates: that would roll every workload.
    deployment = kubectl.get("deployment", "web", namespace)
    assert "readinessGates" not in deployment["spec"]["template"]["spec"]
    assert fieldwarden.injected_label[0] not in deployment["spec"]["template"]["metadata"]["labels"]
    for replica_set in kubectl.json("get", "replicasets", "-n", namespace)["items"]:
        assert "readinessGates" not in replica_set["spec"]["template"]["spec"]


class Labeller:
    """A second mutating webhook, called after fieldwarden's: it labels new pods, so the API server
    calls fieldwarden again (`reinvocationPolicy: IfNeeded`). It records the pods it was sent."""

    LABEL = "e2e.fieldwarden.io/labelled"

    def __init__(self, cluster: Cluster) -> None:
        self.seen: list[Obj] = []
        labeller = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                pod = review["request"]["object"]
                labeller.seen.append(pod)
                response: Obj = {"uid": review["request"]["uid"], "allowed": True}
                if labeller.LABEL not in (pod["metadata"].get("labels") or {}):
                    patch = [{"op": "add", "path": f"/metadata/labels/{labeller.LABEL.replace('/', '~1')}",
                              "value": "yes"}]
                    response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(patch).encode()).decode())
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(cluster.webhook_cert), str(cluster.webhook_key))
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.configuration: Obj = {
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "zz-e2e-labeller"},  # configurations are called in name order: after fieldwarden's
            "webhooks": [{
                "name": "labeller.e2e.fieldwarden.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail", "timeoutSeconds": 5, "reinvocationPolicy": "Never",
                "clientConfig": {"url": f"https://127.0.0.1:{self.server.server_address[1]}/",
                                 "caBundle": cluster.ca_bundle},
                "objectSelector": {"matchLabels": {"e2e.fieldwarden.io/reinvoke": "yes"}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}],
            }],
        }

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def admitted_pod_creations(fieldwarden: Installation) -> dict[str, float]:
    """fieldwarden's count of pod CREATE reviews it answered, by decision (its /metrics)."""
    assert fieldwarden.webhook is not None
    text = fieldwarden.webhook.api.get("/metrics")
    counts = {}
    for decision in ("patched", "allowed"):
        try:
            counts[decision] = value(text, "fieldwarden_admission_requests_total", endpoint="mutate",
                                     operation="CREATE", kind="Pod", decision=decision)
        except KeyError:  # no such request yet
            counts[decision] = 0.0
    return counts


def test_when_a_later_webhook_changes_the_pod_fieldwarden_is_called_again_and_adds_nothing(
        fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl, namespace: str) -> None:
    labeller = Labeller(cluster)
    try:
        kubectl("apply", "-f", "-", stdin=labeller.configuration)
        probe = pod_manifest(name="probe", labels={"e2e.fieldwarden.io/reinvoke": "yes"})
        wait_for(lambda: Labeller.LABEL in kubectl.json("apply", "-n", namespace, "--dry-run=server", "-f", "-",
                                                        stdin=probe)["metadata"]["labels"],
                 "the second webhook to be called", 20, interval=0.2)
        before = admitted_pod_creations(fieldwarden)
        kubectl("apply", "-n", namespace, "-f", "-", stdin=pod_manifest(labels={"e2e.fieldwarden.io/reinvoke": "yes"}))
        after = admitted_pod_creations(fieldwarden)
    finally:
        kubectl("delete", "mutatingwebhookconfiguration", "zz-e2e-labeller", "--ignore-not-found")
        labeller.stop()
    pod = stored(kubectl, namespace, "web")
    assert_gated_once(pod, fieldwarden)
    assert pod["metadata"]["labels"][Labeller.LABEL] == "yes"
    assert gates(labeller.seen[-1]) == [{"conditionType": fieldwarden.condition_type}]  # it came second
    # Called twice for the one pod: the first call patched, the second (reinvoked) had nothing to add.
    assert (after["patched"] - before["patched"], after["allowed"] - before["allowed"]) == (1, 1)
