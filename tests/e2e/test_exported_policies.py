"""The exported policies decide as the webhook does: the same cases through both, on a real kube-apiserver.

A cluster of this module's own (`ClusterOptions(mutating_admission_policy=True)`: the
MutatingAdmissionPolicy alpha of Kubernetes 1.32) holds, configuration by configuration, a
`fieldwarden serve` with its webhook configurations (the chart's) and the objects `fieldwarden
export` writes for the same configuration, each side bound to a namespace of its own
(tests/e2e/differential.py). The case table is the webhook's: the AdmissionReviews captured from a
kube-apiserver (tests/fixtures/admission, copies of ../shared/samples/admission) and every variant
of them the rule tests send (tests/policies/rules/test_*: their own helpers build the requests),
replayed as API calls. Rule by rule (one rule selected per configuration), every case must get the
same verdict (status code), the same message, the same answer and the same stored object from both
sides, and the same warnings except where the exactness report says why not (FW403's keep-live
warnings: a MutatingAdmissionPolicy cannot add one). Every policy object is created for real, so
the API server accepts them all; `test_the_report_names_every_difference` then checks that each
difference found is one the report explains, and writes the table of them
(`differences.txt` in the module's temporary folder).

Not replayable here, and why (the rule tests keep them): requests the API server never sends
(malformed objects, another kind under a subresource), KEDA ScaledObjects and autoscaling/v2beta2
HPAs (no such API in this cluster: both sides see HPAs only), HPAs with minReplicas 0 (the
HPAScaleToZero gate is off) and nesting deeper than the API server decodes. About a minute and a half.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from fieldwarden.policies.admission import AdmissionRequest
from fieldwarden.policies.config import Settings
from fieldwarden.policies.export.assemble import export, report_text, target
from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.differential import (
    POLICIES, WEBHOOK, Case, Client, Outcome, Variant, delta, differences, resource_path, show,
)
from tests.e2e.processes import wait_for
from tests.policies.rules import test_autoscaler_owned_field_reset as fw403
from tests.policies.rules import test_pod_update_not_image_only as fw401
from tests.policies.rules.admission_samples import review as captured

Obj = dict[str, Any]
VPA_CRD = Path(__file__).parent / "crds" / "vertical-pod-autoscaler.yaml"
ROLLOUT_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "rollouts.argoproj.io"},
    "spec": {"group": "argoproj.io", "scope": "Namespaced",
             "names": {"kind": "Rollout", "listKind": "RolloutList", "plural": "rollouts", "singular": "rollout"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object",
                                                           "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}
MAP_API = "admissionregistration.k8s.io/v1alpha1"
KEPT_WARNING = re.compile(r"^\[FW403 autoscaler-owned-field-reset\] (kept |set |left |\d+ more )")
RESULTS: dict[str, dict[str, tuple[Outcome, Outcome]]] = {}  # variant -> case -> (webhook's, policies')


# -- the cluster ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(start_cluster: Callable[[ClusterOptions], Cluster]) -> Cluster:
    started = start_cluster(ClusterOptions(mutating_admission_policy=True, name="exported-policies"))
    api = started.api
    import yaml

    for crd in (yaml.safe_load(VPA_CRD.read_text(encoding="utf-8")), ROLLOUT_CRD):
        api.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd, exist_ok=True)
    for name in ("verticalpodautoscalers.autoscaling.k8s.io", "rollouts.argoproj.io"):
        wait_for(lambda: _established(started, name), f"CRD {name}", 30)
    # A kube-apiserver without the fix of kubernetes/kubernetes#130887 stops a built-in paramKind's informer for
    # good (until it restarts) once no binding names that kind: the HPAs of FW403's policies, deleted with each
    # configuration here. A policy with HPA params bound to nothing, kept for the cluster's life, keeps it running.
    api.create(f"/apis/{MAP_API}/mutatingadmissionpolicies", {
        "apiVersion": MAP_API, "kind": "MutatingAdmissionPolicy", "metadata": {"name": "e2e-keep-hpa-informer"},
        "spec": {"paramKind": {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"},
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE"], "resources": ["configmaps"]}]},
                 "mutations": [{"patchType": "JSONPatch", "jsonPatch": {
                     "expression": "[JSONPatch{op: 'test', path: '/kind', value: 'ConfigMap'}].filter(p, false)"}}],
                 "failurePolicy": "Ignore", "reinvocationPolicy": "Never"}}, exist_ok=True)
    api.create(f"/apis/{MAP_API}/mutatingadmissionpolicybindings", {
        "apiVersion": MAP_API, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "e2e-keep-hpa-informer"},
        "spec": {"policyName": "e2e-keep-hpa-informer",
                 "paramRef": {"selector": {}, "parameterNotFoundAction": "Allow"},
                 "matchResources": {"namespaceSelector": {"matchLabels": {"e2e-keep-hpa-informer": "none"}}}}},
        exist_ok=True)
    # Users the exemption cases impersonate may do anything: only fieldwarden may refuse them.
    api.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "e2e-differential-users"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}
                     for kind, name in (("User", "alice"), ("User", "bob"), ("Group", "team-x"))]}, exist_ok=True)
    return started


def _established(cluster: Cluster, name: str) -> bool:
    crd = cluster.api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    conditions = (crd.get("status") or {}).get("conditions") or []  # null on a CRD just created
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def client(cluster: Cluster) -> Client:
    return Client(cluster)


# -- cases: FW401 -----------------------------------------------------------------------------------------

def review_of(request: AdmissionRequest) -> Obj:
    """The AdmissionReview request a rule test built, as the API server would send it."""
    return {"operation": request.operation, "subResource": request.sub_resource, "dryRun": request.dry_run,
            "kind": {"group": request.group, "version": request.version, "kind": request.kind},
            "object": copy.deepcopy(request.object), "oldObject": copy.deepcopy(request.old_object)}


def pod_update(name: str, note: str = "", **edits: Any) -> Case:
    request = review_of(fw401.update(**edits))
    status = (request["oldObject"] or {}).get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    return Case(name, request, status=status if conditions else None, note=note)


def spec_edit(**fields: Any) -> Callable[[Obj], None]:
    return lambda pod: pod["spec"].update(copy.deepcopy(fields))


def add_toleration(pod: Obj) -> None:
    pod["spec"]["tolerations"].append({"key": "dedicated", "operator": "Exists"})


def edit_metadata(pod: Obj) -> None:
    meta = pod["metadata"]
    meta["annotations"]["example.com/note"] = "x"
    meta["finalizers"] = ["example.com/keep"]


def requests(cpu: str) -> Callable[[Obj], None]:
    return lambda pod: fw401.container(pod).update(resources={"requests": {"cpu": cpu, "memory": "64Mi"}})


def many(pod: Obj) -> None:
    fw401.container(pod)["image"] = "nginx:1.27"
    fw401.container(pod)["env"] = [{"name": "A", "value": "1"}]
    add_toleration(pod)
    pod["spec"]["activeDeadlineSeconds"] = 60
    pod["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "n1"}


def both(*edits: Callable[[Obj], None]) -> Callable[[Obj], None]:
    def edit(pod: Obj) -> None:
        for each in edits:
            each(pod)

    return edit


def annotated(value: str) -> Callable[[Obj], None]:
    return lambda pod: pod["metadata"]["annotations"].update({"fieldwarden.io/ignore": value})


def opt_out(value: str) -> Callable[[Obj], None]:
    return lambda pod: pod["metadata"].setdefault("labels", {}).update({"fieldwarden.io/admission": value})


def two_gates(pod: Obj) -> None:
    pod["spec"]["schedulingGates"] = [fw401.GATE, {"name": "example.com/quota"}]


def with_pod_affinity(pod: Obj) -> None:
    fw401.kueue_admits(pod)
    pod["spec"]["affinity"]["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "x"}}}]}


def subresource(case: Case, sub: str) -> Case:
    case.review["subResource"] = sub
    return case


def resize(pod: Obj) -> None:
    fw401.container(pod)["resources"] = {"requests": {"cpu": "2"}}


def debug(pod: Obj) -> None:
    pod["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox", "stdin": True, "tty": True,
                                           "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}]


def dry(case: Case) -> Case:
    case.review["dryRun"] = True
    return case


def fw401_cases() -> list[Case]:
    deadline, lower = spec_edit(activeDeadlineSeconds=60), spec_edit(activeDeadlineSeconds=30)
    return [
        pod_update("set-image", "captured: kubectl set image"),
        pod_update("label", "captured: kubectl label", sample="pod-update-label.json"),
        pod_update("metadata-edits", new=edit_metadata),
        pod_update("init-image", old=fw401.add_init("busybox:1.36"), new=fw401.add_init("busybox:1.37")),
        pod_update("deadline-set", new=deadline),
        pod_update("deadline-lowered", both=deadline, new=lower),
        pod_update("deadline-raised", both=lower, new=deadline),
        pod_update("toleration-added", new=add_toleration),
        pod_update("toleration-and-deadline", new=both(add_toleration, deadline)),
        pod_update("toleration-and-image", new=both(add_toleration, lambda p: fw401.container(p).update(image="x:2"))),
        pod_update("env", new=fw401.env_change),
        pod_update("resources-set", new=requests("200m")),
        pod_update("resources-changed", old=requests("100m"), new=requests("200m")),
        pod_update("many", new=many),
        pod_update("security-context", new=lambda p: p["spec"]["securityContext"].update(runAsUser=1000)),
        pod_update("sidecar-added", new=fw401.add_sidecar),
        pod_update("sidecar-removed", old=fw401.add_sidecar),
        pod_update("reordered", both=fw401.add_sidecar, new=lambda p: p["spec"]["containers"].reverse()),
        pod_update("renamed", new=lambda p: fw401.container(p).update(name="web")),
        pod_update("init-env", old=fw401.add_init("busybox:1.36"),
                   new=both(fw401.add_init("busybox:1.36"),
                            lambda p: p["spec"]["initContainers"][0].update(env=[{"name": "A", "value": "1"}]))),
        pod_update("image-padded", new=lambda p: fw401.container(p).update(image=" nginx:1.26")),
        pod_update("image-empty", new=lambda p: fw401.container(p).update(image="")),
        subresource(pod_update("status-subresource", new=both(resize, lambda p: p["status"].update(phase="Running"))),
                    "status"),
        subresource(pod_update("ephemeral-containers", new=debug), "ephemeralcontainers"),
        subresource(pod_update("resize-subresource", new=resize), "resize"),
        pod_update("gated-admitted", both=fw401.gated, new=fw401.kueue_admits),
        pod_update("ungated-admitted", new=fw401.kueue_admits),
        pod_update("gated-one-gate-removed", old=two_gates,
                   new=lambda p: p["spec"].update(schedulingGates=[{"name": "example.com/quota"}])),
        pod_update("gated-gate-added", both=fw401.gated,
                   new=lambda p: p["spec"]["schedulingGates"].append({"name": "example.com/new"})),
        pod_update("gated-pod-affinity", both=fw401.gated, new=with_pod_affinity),
        pod_update("gated-deadline", both=fw401.gated, new=both(fw401.kueue_admits, deadline)),
        # The stored pod's annotation exempts it; one the update adds (or changes) is itself denied.
        pod_update("ignore-annotation", both=annotated("FW401"), new=deadline),
        pod_update("ignore-annotation-by-name", both=annotated(" pod-update-not-image-only, FW999 "), new=deadline),
        pod_update("ignore-annotation-all", both=annotated("all"), new=deadline),
        pod_update("ignore-annotation-other-rule", both=annotated("FW402"), new=deadline),
        pod_update("ignore-annotation-added", new=both(deadline, annotated("FW401"))),
        pod_update("ignore-annotation-changed", both=annotated("FW402"), new=annotated("FW401")),
        pod_update("ignore-annotation-removed", both=annotated("FW401"),
                   new=lambda p: p["metadata"]["annotations"].pop("fieldwarden.io/ignore")),
        pod_update("opt-out-label-set", new=opt_out("disabled")),
        pod_update("opt-out-label-other-value", new=opt_out("enabled")),
        subresource(pod_update("status-ignore-annotation-added", new=annotated("FW401")), "status"),
        subresource(pod_update("status-opt-out-label-set", new=opt_out("disabled")), "status"),
        dry(pod_update("deadline-dry-run", new=deadline)),
        Case("deleted", {"operation": "DELETE", "object": None, "oldObject": captured("pod-delete.json")["request"]
                         ["oldObject"]}, note="captured: kubectl delete pod"),
    ]


def fw401_strict_cases() -> list[Case]:
    deadline = spec_edit(activeDeadlineSeconds=60)
    return [
        pod_update("image-gate-false", both=fw401.condition("False")),
        pod_update("image-gate-true", both=fw401.condition("True")),
        pod_update("image-gate-unknown", both=fw401.condition("Unknown")),
        pod_update("image-gate-absent"),
        pod_update("label-gate-true", both=fw401.condition("True"), sample="pod-update-label.json"),
        pod_update("image-and-deadline-gate-true", both=fw401.condition("True"), new=deadline),
        pod_update("gated-admitted-not-allowed", both=fw401.gated, new=fw401.kueue_admits),
        pod_update("gated-one-gate-removed", old=two_gates,
                   new=lambda p: p["spec"].update(schedulingGates=[{"name": "example.com/quota"}])),
        pod_update("gated-nodeselector-only", both=fw401.gated,
                   new=lambda p: p["spec"].update(nodeSelector={"pool": "gpu", "zone": "a"})),
        pod_update("gated-tolerations-only", both=fw401.gated, new=add_toleration),
        # subresources: [ephemeralcontainers, resize]: kubectl debug judged here (a resize of this BestEffort
        # pod would change its QoS class, which the API server refuses itself: the rule tests keep that one).
        subresource(pod_update("ephemeral-containers-judged", new=debug), "ephemeralcontainers"),
    ]


def enforcement_cases() -> list[Case]:
    deadline = spec_edit(activeDeadlineSeconds=60)
    return [pod_update("set-image"), pod_update("deadline-set", new=deadline),
            pod_update("toleration-added", new=add_toleration), dry(pod_update("deadline-dry-run", new=deadline)),
            pod_update("env", new=fw401.env_change)]


def as_user(case: Case, user: str, *groups: str) -> Case:
    case.user, case.groups = user, groups
    return case


def exempt_cases() -> list[Case]:
    deadline = spec_edit(activeDeadlineSeconds=60)
    exempt = pod_update("exempt-namespace", new=deadline)
    exempt.exempt_namespace = True
    return [
        as_user(pod_update("exempt-user", new=deadline), "alice"),
        as_user(pod_update("other-user", new=deadline), "bob"),
        as_user(pod_update("exempt-group", new=deadline), "bob", "team-x", "system:authenticated"),
        as_user(pod_update("other-group", new=deadline), "bob", "team-y", "system:authenticated"),
        as_user(pod_update("exempt-user-exempts", new=annotated("FW401")), "alice"),
        as_user(pod_update("exempt-group-opts-out", new=opt_out("disabled")), "bob", "team-x", "system:authenticated"),
        as_user(pod_update("other-user-exempts", new=annotated("FW401")), "bob"),
        exempt,
        pod_update("admin", new=deadline),
    ]


# -- cases: FW402 -------------------------------------------------------------------------------------------

def pod_create(name: str, edit: Callable[[Obj], None] | None = None, sample: str = "pod-create.json",
               note: str = "") -> Case:
    request = captured(sample)["request"]
    if edit is not None:
        edit(request["object"])
    return Case(name, request, note=note)


def gates(value: Any) -> Callable[[Obj], None]:
    return lambda pod: pod["spec"].update(readinessGates=copy.deepcopy(value))


def annotate(key: str, value: str) -> Callable[[Obj], None]:
    return lambda pod: pod["metadata"]["annotations"].update({key: value})


def fw402_cases() -> list[Case]:
    others = [{"conditionType": "example.com/LoadBalancerReady"}, {"conditionType": "example.com/Warm"}]
    gate = {"conditionType": "InPlaceUpdateReady"}
    update = Case("update-not-touched", captured("pod-update-set-image.json")["request"])
    update.review["oldObject"]["spec"]["readinessGates"] = [gate]
    update.review["object"]["spec"]["readinessGates"] = [gate]
    status = Case("status-not-touched", copy.deepcopy(update.review))
    status.review["subResource"] = "status"
    status.review["object"]["status"]["phase"] = "Running"
    deployment = Case("deployment-template", captured("deployment-create-apply.json")["request"])
    return [
        pod_create("created", note="captured: kubectl apply"),
        pod_create("generate-name", sample="pod-create-generatename.json", note="captured: generateName"),
        pod_create("gates-null", gates(None)),
        pod_create("gates-empty", gates([])),
        pod_create("gates-populated", gates(others)),
        pod_create("gate-present", gates([others[1], gate])),
        pod_create("labels-null", lambda pod: pod["metadata"].update(labels=None)),
        pod_create("label-taken", lambda pod: pod["metadata"]["labels"].update(
            {"fieldwarden.io/readiness-gate": "mine"})),
        pod_create("opted-out", annotate("fieldwarden.io/readiness-gate", "disabled")),
        pod_create("opt-out-other-value", annotate("fieldwarden.io/readiness-gate", "enabled")),
        pod_create("ignore-annotation", annotate("fieldwarden.io/ignore", "pod-without-readiness-gate")),
        dry(pod_create("dry-run")),
        update, status, deployment,
    ]


def fw402_custom_cases() -> list[Case]:
    return [
        pod_create("created"),
        pod_create("default-gate-present", gates([{"conditionType": "InPlaceUpdateReady"}])),
        pod_create("custom-gate-present", gates([{"conditionType": "example.com/Swapped"}])),
        pod_create("custom-opt-out", annotate("example.com/no-gate", "disabled")),
        pod_create("default-opt-out-ignored", annotate("fieldwarden.io/readiness-gate", "disabled")),
    ]


# -- cases: FW403 -------------------------------------------------------------------------------------------

def scaled(name: str, body: Obj, scalers: list[Obj] = (), status: Obj | None = None,  # type: ignore[assignment]
           note: str = "") -> Case:
    """A rule-test review with its autoscalers, their targets renamed for the case."""
    setup = []
    for scaler in scalers:
        copied = copy.deepcopy(scaler)
        ref = copied["spec"].get("scaleTargetRef") or copied["spec"]["targetRef"]
        ref["name"] = name if ref.get("name") == "web" else f"{name}-{ref.get('name')}"
        if copied["apiVersion"] == "autoscaling/v1":
            copied["spec"].pop("metrics", None)
        setup.append(copied)
    return Case(name, copy.deepcopy(case_request_of(body)), setup, status, note=note)


def case_request_of(body: Obj) -> Obj:
    return body["request"] if "request" in body else body


def rename_target_kind(scaler: Obj, kind: str, api_version: str) -> Obj:
    copied = copy.deepcopy(scaler)
    copied["spec"]["targetRef"] = {"apiVersion": api_version, "kind": kind, "name": "web"}
    return copied


def fw403_cases() -> list[Case]:
    hpa, vpa, res, reps, edit = fw403.hpa, fw403.vpa, fw403.resources, fw403.replicas, fw403.edit
    update, live, asked = fw403.UPDATE, fw403.LIVE, fw403.ASKED
    only = fw403.REQUESTS_ONLY

    def without_replicas(req: Obj) -> None:
        annotations = req["object"]["metadata"]["annotations"]
        key = "kubectl.kubernetes.io/last-applied-configuration"
        applied = json.loads(annotations[key])
        del applied["spec"]["replicas"]
        annotations[key] = json.dumps(applied)
        req["object"]["spec"]["replicas"] = 1

    def to_daemonset(req: Obj) -> None:
        req["kind"] = {"group": "apps", "version": "v1", "kind": "DaemonSet"}
        for key in ("object", "oldObject"):
            req[key]["kind"] = "DaemonSet"
            del req[key]["spec"]["strategy"]
            req[key]["spec"].pop("replicas", None)
            req[key]["spec"].pop("progressDeadlineSeconds", None)

    def to_rc(req: Obj) -> None:
        req["kind"] = {"group": "", "version": "v1", "kind": "ReplicationController"}
        for key in ("object", "oldObject"):
            obj = req[key]
            obj.update(apiVersion="v1", kind="ReplicationController")
            spec = obj["spec"]
            obj["spec"] = {"replicas": spec["replicas"], "selector": spec["selector"]["matchLabels"],
                           "template": spec["template"]}

    def sidecars(count: int, name: str = "side") -> Callable[[Obj], None]:
        def change(req: Obj) -> None:
            for key, values in (("object", asked), ("oldObject", live)):
                containers = req[key]["spec"]["template"]["spec"]["containers"]
                containers += [{"name": f"{name}-{i}", "image": "busybox", "resources": copy.deepcopy(values)}
                               for i in range(count)]
        return change

    def new_container_and_storage(req: Obj) -> None:
        fw403.container(req["object"])["resources"]["requests"]["ephemeral-storage"] = "1Gi"
        req["object"]["spec"]["template"]["spec"]["containers"].append(
            {"name": "proxy", "image": "envoy:1", "resources": copy.deepcopy(asked)})

    def status_replicas(req: Obj) -> None:
        req["oldObject"]["spec"]["replicas"] = 4
        req["object"]["spec"]["replicas"] = 1

    def no_resources(req: Obj) -> None:
        fw403.container(req["object"]).pop("resources")

    def restart_never(req: Obj) -> None:
        fw403.to_cronjob(req)
        for key in ("object", "oldObject"):
            req[key]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"

    # kubectl scale (captured): the Scale request, on a Deployment at the Scale's old count.
    scale = copy.deepcopy(fw403.SCALE)
    deployment = copy.deepcopy(update["request"]["oldObject"])
    deployment["spec"]["replicas"] = scale["request"]["oldObject"]["spec"]["replicas"]
    scale["request"]["oldObject"] = deployment
    return [
        scaled("apply-hpa-v2", update, [hpa()], note="captured apply under an HPA"),
        scaled("apply-hpa-v1", update, [hpa(version="autoscaling/v1")]),
        scaled("apply-hpa-extensions-ref", update, [hpa(api_version="extensions/v1beta1")]),
        scaled("server-side-apply", fw403.SSA, [hpa()], note="captured: apply --server-side"),
        scaled("dry-run", fw403.DRYRUN, [hpa()], note="captured: apply --dry-run=server"),
        scaled("manifest-without-replicas", edit(update, without_replicas), [hpa()]),
        scaled("live-zero", reps(update, new=3, old=0), [hpa()]),
        scaled("status-replicas-unused", edit(update, status_replicas), [hpa()],
               status={"replicas": 5, "readyReplicas": 4}),
        scaled("unchanged", reps(update, new=3, old=3), [hpa()]),
        scaled("hpa-other-namespace", update, [hpa(namespace="other")]),
        scaled("hpa-other-name", update, [hpa(target="api")]),
        scaled("hpa-other-kind", update, [hpa(kind="StatefulSet")]),
        scaled("hpa-core-group", update, [hpa(api_version=None)]),
        scaled("hpa-other-group", update, [hpa(api_version="argoproj.io/v1alpha1", kind="Rollout")]),
        scaled("no-autoscaler", update),
        scaled("replicas-missing", reps(update, new=None, old=3), [hpa()]),
        scaled("scale-subresource", scale, [hpa()], note="captured: kubectl scale"),
        scaled("status-subresource", edit(update, lambda r: r.update(subResource="status")), [hpa(), vpa()]),
        scaled("deleted", edit(update, lambda r: r.update(operation="DELETE", object=None)), [hpa()]),
        scaled("daemonset", edit(update, to_daemonset), [hpa(kind="DaemonSet"), vpa(kind="DaemonSet")]),
        scaled("replication-controller", edit(update, to_rc), [hpa(kind="ReplicationController", api_version="v1")]),
        scaled("create-keeps-manifest", fw403.CREATE, [hpa(minReplicas=3)], note="captured: kubectl apply"),
        scaled("vpa-keeps-live", res(update, asked, live), [vpa()]),
        *(scaled(f"vpa-mode-{mode.lower()}", res(update, asked, live), [vpa(mode)])
          for mode in ("Auto", "Recreate", "InPlaceOrRecreate", "Initial", "Off")),
        scaled("vpa-requests-only", res(update, asked, live), [vpa(policies=only)]),
        scaled("vpa-cpu-only", res(update, asked, live), [vpa(policies=[{"containerName": "web",
                                                                          "controlledResources": ["cpu"]}])]),
        scaled("vpa-container-off", res(update, asked, live),
               [vpa(policies=[{"containerName": "*"}, {"containerName": "web", "mode": "Off"}])]),
        scaled("vpa-name-beats-star", res(update, asked, live),
               [vpa(policies=[{"containerName": "*", "mode": "Off"},
                              {"containerName": "web", "controlledResources": ["memory"]}])]),
        scaled("vpa-value-removed-and-restored", res(update, {"requests": {"memory": "128Mi"}, "limits": {"cpu": "1"}},
                                                     {"requests": {"cpu": "250m"}}), [vpa()]),
        scaled("vpa-requests-only-keeps-live-limit", res(update, {"requests": {"cpu": "50m"}, "limits": {"cpu": "80m"}},
                                                         {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}),
               [vpa(policies=only)]),
        scaled("vpa-requests-only-no-live-limit",
               res(update, {"requests": {"cpu": "50m", "memory": "256Mi"}, "limits": {"cpu": "80m", "memory": "2Gi"}},
                   {"requests": {"cpu": "100m", "memory": "1Gi"}}), [vpa(policies=only)]),
        scaled("vpa-quantities-not-strings",
               res(update, {"requests": {"cpu": "10m", "memory": "1Mi"}, "limits": {"cpu": "100m", "memory": "1073741824"}},
                   {"requests": {"cpu": "0.1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "4Gi"}}),
               [vpa(policies=only)]),
        scaled("vpa-one-side-only", res(update, {"requests": {"memory": "2Gi"}, "limits": {"cpu": "250m"}},
                                        {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}), [vpa(policies=only)]),
        scaled("vpa-live-pair-fits", res(update, {"requests": {"cpu": "300m"}, "limits": {"cpu": "400m"}},
                                         {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}), [vpa()]),
        scaled("vpa-many-containers", edit(res(update, {"requests": {"cpu": "10m", "memory": "1Mi"},
                                                        "limits": {"cpu": "20m", "memory": "2Mi"}},
                                               {"requests": {"cpu": "100m", "memory": "1Gi"},
                                                "limits": {"cpu": "1", "memory": "2Gi"}}), sidecars(3)),
               [vpa(policies=only)]),
        scaled("vpa-resources-added", edit(res(update, {}, live), no_resources), [vpa()]),
        scaled("vpa-uncontrolled-and-new", edit(res(update, asked, live), new_container_and_storage), [vpa()]),
        scaled("vpa-other-namespace", res(update, asked, live), [vpa(namespace="other")]),
        scaled("vpa-on-create", edit(fw403.CREATE, lambda r: fw403.container(r["object"]).update(resources=asked)),
               [vpa()]),
        scaled("hpa-and-vpa", edit(res(update, asked, live), sidecars(6)), [hpa(name="a"), vpa(name="b")]),
        scaled("cronjob", edit(res(update, asked, live), restart_never),
               [vpa(kind="CronJob"), hpa(kind="CronJob", api_version="batch/v1")]),
        scaled("rollout-not-configured", edit(res(update, asked, live), fw403.rollout),
               [fw403.ROLLOUT_HPA, rename_target_kind(vpa(), "Rollout", "argoproj.io/v1alpha1")]),
    ]


def create_cases() -> list[Case]:
    hpa, create = fw403.hpa, fw403.CREATE

    def asking(count: int) -> Obj:
        return fw403.edit(create, lambda req: req["object"]["spec"].update(replicas=count))

    return [
        scaled("below-min", asking(1), [hpa(minReplicas=3)]),
        scaled("above-max", asking(20), [hpa(minReplicas=3)]),
        scaled("within", asking(5), [hpa(minReplicas=3)]),
        scaled("default-min", asking(1), [hpa()]),
        scaled("default-min-five", asking(5), [hpa()]),
        scaled("no-hpa", asking(5)),
        scaled("hpa-elsewhere", asking(5), [hpa(namespace="other", minReplicas=3)]),
        scaled("generate-name", fw403.edit(asking(5), lambda req: req["object"]["metadata"].update(
            name=None, generateName="web-")), [hpa(minReplicas=3)]),
        scaled("update-keeps-live", fw403.UPDATE, [hpa(minReplicas=3)]),
    ]


def custom_cases() -> list[Case]:
    res, edit, update, live, asked = fw403.resources, fw403.edit, fw403.UPDATE, fw403.LIVE, fw403.ASKED

    def nest(req: Obj) -> None:
        fw403.rollout(req)
        for key in ("object", "oldObject"):
            spec = req[key]["spec"]
            req[key]["spec"] = {"workers": {"count": spec["replicas"], "podTemplate": spec["template"]}}

    rollout_vpa = rename_target_kind(fw403.vpa(), "Rollout", "argoproj.io/v1alpha1")
    return [
        scaled("rollout", edit(res(update, asked, live), fw403.rollout), [fw403.ROLLOUT_HPA, rollout_vpa]),
        scaled("rollout-dry-run", edit(res(update, asked, live), lambda r: (fw403.rollout(r), r.update(dryRun=True))),
               [fw403.ROLLOUT_HPA, rollout_vpa]),
        scaled("rollout-create", edit(fw403.CREATE, lambda r: (r.update(kind={"group": "argoproj.io", "version": "v1alpha1",
                                                                              "kind": "Rollout"}),
                                                                r["object"].update(apiVersion="argoproj.io/v1alpha1",
                                                                                   kind="Rollout"))),
               [fw403.ROLLOUT_HPA]),
        scaled("pool-own-paths", edit(res(update, asked, live), nest),
               [fw403.hpa(api_version="argoproj.io/v1alpha1", kind="Rollout"), rollout_vpa]),
        scaled("deployment-still", update, [fw403.hpa()]),
    ]


# -- probes: a request each side must act on once it is loaded ------------------------------------------------

def probe_pod(client: Client, namespace: str) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
           "spec": {"containers": [{"name": "app", "image": "registry.example/probe:1"}]}}
    client.call("POST", resource_path("", "Pod", namespace), pod)


def fw401_acted(variant: Variant, client: Client, enforcement: str) -> Callable[[str, str], bool]:
    def acted(side: str, namespace: str) -> bool:
        probe_pod(client, namespace)
        answer = client.call("PATCH", resource_path("", "Pod", namespace, "probe"),
                             {"spec": {"activeDeadlineSeconds": 30}}, query={"dryRun": "All"},
                             content_type="application/merge-patch+json")
        if enforcement == "deny":
            return answer.status == 403 and "FW401" in json.dumps(answer.body)
        if enforcement == "warn":
            return answer.status == 200 and any("FW401" in w for w in answer.warnings)
        if side == WEBHOOK:  # dryrun: only counted
            assert variant.webhook is not None
            text = variant.webhook.api.request("GET", "/metrics").body
            return bool(re.search(r'fieldwarden_rule_results_total\{[^}]*result="dryrun"[^}]*\} [1-9]', str(text)))
        metrics = str(variant.cluster.api.request("GET", "/metrics").body)
        return f'enforcement_action="audit",error_type="invalid_error",policy="fw-{variant.name}-fw401' in metrics
    return acted


def fw402_acted(client: Client, condition_type: str) -> Callable[[str, str], bool]:
    def acted(side: str, namespace: str) -> bool:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
               "spec": {"containers": [{"name": "app", "image": "registry.example/probe:1"}]}}
        answer = client.call("POST", resource_path("", "Pod", namespace), pod, query={"dryRun": "All"})
        gates = answer.body.get("spec", {}).get("readinessGates") or [] if answer.status == 201 else []
        return any(g.get("conditionType") == condition_type for g in gates)
    return acted


def fw403_acted(client: Client) -> Callable[[str, str], bool]:
    """A sentinel Deployment with an HPA and a VPA, made last: once both are honoured, every earlier one is."""
    def acted(side: str, namespace: str) -> bool:
        path = resource_path("apps", "Deployment", namespace)
        labels = {"app": "sentinel"}
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sentinel"},
                      "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {
                          "metadata": {"labels": labels}, "spec": {"containers": [
                              {"name": "app", "image": "registry.example/web:1",
                               "resources": {"requests": {"cpu": "100m"}}}]}}}}
        if client.call("GET", f"{path}/sentinel").status == 404:
            client.call("POST", path, deployment)
            target_ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sentinel"}
            client.call("POST", resource_path("autoscaling", "HorizontalPodAutoscaler", namespace), {
                "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "sentinel"},
                "spec": {"scaleTargetRef": target_ref, "maxReplicas": 5}})
            client.call("POST", resource_path("autoscaling.k8s.io", "VerticalPodAutoscaler", namespace), {
                "apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": {"name": "sentinel"},
                "spec": {"targetRef": target_ref}})
        answer = client.call("PATCH", f"{path}/sentinel", {"spec": {"replicas": 4, "template": {"spec": {"containers": [
            {"name": "app", "resources": {"requests": {"cpu": "300m"}}}]}}}}, query={"dryRun": "All"},
            content_type="application/strategic-merge-patch+json")
        if answer.status != 200:
            return False
        spec = answer.body["spec"]
        return bool(spec["replicas"] == 2 and spec["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"]
                    == "100m")
    return acted


# -- the variants -------------------------------------------------------------------------------------------

CUSTOM = [{"group": "argoproj.io", "kind": "Rollout"}]
POOL = {"group": "argoproj.io", "kind": "Rollout", "replicas-path": ["spec", "workers", "count"],
        "template-path": ["spec", "workers", "podTemplate"]}
VARIANTS: dict[str, tuple[Obj, Callable[[], list[Case]]]] = {
    "fw401-default": ({"select": ["FW401"]}, fw401_cases),
    "fw401-strict": ({"select": ["FW401"], "rules": {"FW401": {
        "allow-gated-pod-scheduling-changes": False, "require-gate-false": True,
        "subresources": ["ephemeralcontainers", "resize"]}}}, fw401_strict_cases),
    "fw401-warn": ({"select": ["FW401"], "rules": {"FW401": {"enforcement": "warn"}}}, enforcement_cases),
    "fw401-dryrun": ({"select": ["FW401"], "rules": {"FW401": {"enforcement": "dryrun"}}}, enforcement_cases),
    "fw401-exempt": ({"select": ["FW401"], "rules": {"FW401": {
        "exempt-users": ["alice"], "exempt-groups": ["team-x"],
        "exempt-namespaces": ["fw401-exempt-exempt-webhook", "fw401-exempt-exempt-policies"]}}}, exempt_cases),
    "fw402-default": ({"select": ["FW402"]}, fw402_cases),
    "fw402-reinvoked": ({"select": ["FW402"]}, lambda: [c for c in fw402_cases() if c.review["operation"] == "CREATE"]),
    "fw402-custom": ({"select": ["FW402"], "rules": {"FW402": {
        "condition-type": "example.com/Swapped", "injected-label": {"key": "example.com/gated", "value": "yes"},
        "opt-out-annotation": "example.com/no-gate"}}}, fw402_custom_cases),
    "fw403-keep": ({"select": ["FW403"]}, fw403_cases),
    "fw403-clamp": ({"select": ["FW403"], "rules": {"FW403": {"on-create": "clamp"}}}, create_cases),
    "fw403-drop": ({"select": ["FW403"], "rules": {"FW403": {"on-create": "drop"}}}, create_cases),
    "fw403-custom": ({"select": ["FW403"], "rules": {"FW403": {"custom-resources": [*CUSTOM]}}}, custom_cases),
    "fw403-custom-paths": ({"select": ["FW403"], "rules": {"FW403": {"custom-resources": [POOL]}}},
                           lambda: [c for c in custom_cases() if c.name in ("pool-own-paths", "deployment-still")]),
}
def relabel(name: str) -> list[Obj]:
    """Another mutating policy on new pods, on both sides: when it changes a pod after fieldwarden did (or before
    fieldwarden's webhook), the API server calls the other again (reinvocationPolicy IfNeeded on both)."""
    sides = [f"{name}-{side}" for side in (WEBHOOK, POLICIES)]
    return [
        {"apiVersion": MAP_API, "kind": "MutatingAdmissionPolicy", "metadata": {"name": f"{name}-relabel"},
         "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "operations": ["CREATE"], "resources": ["pods"]}]},
                  "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                      "has(object.metadata.labels) ? [JSONPatch{op: 'add', path: '/metadata/labels/e2e.example~1relabelled',"
                      " value: 'yes'}] : [JSONPatch{op: 'add', path: '/metadata/labels', "
                      "value: {'e2e.example/relabelled': 'yes'}}]"}}],
                  "failurePolicy": "Fail", "reinvocationPolicy": "IfNeeded"}},
        {"apiVersion": MAP_API, "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": f"{name}-relabel"},
         "spec": {"policyName": f"{name}-relabel", "matchResources": {"namespaceSelector": {"matchExpressions": [
             {"key": "fieldwarden-e2e/mode", "operator": "In", "values": sides}]}}}},
    ]


ROLLOUT_RULE = {"apiGroups": ["argoproj.io"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
                "resources": ["*"], "scope": "Namespaced"}


@pytest.fixture
def variant_of(cluster: Cluster, client: Client, tmp_path_factory: pytest.TempPathFactory,
               failure_logs: list[Any]) -> Iterator[Callable[[str], Variant]]:
    started: list[Variant] = []

    def start(name: str) -> Variant:
        config, _ = VARIANTS[name]
        rules = [ROLLOUT_RULE] if "custom" in name else []
        extra = relabel(name) if name == "fw402-reinvoked" else []
        variant = Variant(cluster, tmp_path_factory.mktemp(name), name, config, rules, extra).__enter__()
        started.append(variant)
        failure_logs.append(variant)
        return variant

    try:
        yield start
    finally:
        for variant in started:
            failure_logs.remove(variant)
            variant.stop()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_same_answers_from_the_webhook_and_the_exported_policies(
        name: str, variant_of: Callable[[str], Variant], client: Client) -> None:
    config, make_cases = VARIANTS[name]
    variant = variant_of(name)
    cases = make_cases()
    refused = variant.set_up(client, cases)  # first: the probes below then prove that both sides see it all
    rules = Settings(config).rule_conf
    if name.startswith("fw401"):
        variant.ready(fw401_acted(variant, client, rules("FW401")["enforcement"]))
    elif name.startswith("fw402"):
        variant.ready(fw402_acted(client, rules("FW402")["condition-type"]))
    else:
        variant.ready(fw403_acted(client))
    outcomes = variant.run(client, cases, refused)
    RESULTS[name] = outcomes
    unexplained = [d for d in differences(outcomes) if not explained(name, d)]
    assert not unexplained, "the webhook and the policies differ (webhook | policies):\n" + "\n".join(
        f"  {case} {aspect}: " + ("; ".join(delta(hook, policy)) if isinstance(hook, dict) and isinstance(policy, dict)
                                  else f"{show(hook)} | {show(policy)}")
        for case, aspect, hook, policy in unexplained)
    # Exemptions cannot be self-granted: what the issue's attacker tries is refused by both sides, the rest not.
    for case, status in SELF_EXEMPTION.get(name, {}).items():
        assert (outcomes[case][0].status, outcomes[case][1].status) == (status, status), case
    # The cases exercise what they should: each side decided something in most of them.
    acted = [n for n, (hook, _) in outcomes.items() if hook.status >= 400 or hook.warnings or
             (hook.answered and hook.stored is not None)]
    assert len(acted) >= len(outcomes) // 2


SELF_EXEMPTION: dict[str, dict[str, int]] = {  # variant -> case -> the status both sides answer
    "fw401-default": {"ignore-annotation": 200, "ignore-annotation-added": 403, "ignore-annotation-changed": 403,
                      "ignore-annotation-removed": 200, "opt-out-label-set": 403, "opt-out-label-other-value": 200,
                      "status-ignore-annotation-added": 403, "status-opt-out-label-set": 403,
                      "ephemeral-containers": 200},
    "fw401-strict": {"ephemeral-containers-judged": 403},
    "fw401-exempt": {"exempt-user-exempts": 200, "exempt-group-opts-out": 200, "other-user-exempts": 403},
}


def explained(variant: str, difference: tuple[str, str, Any, Any]) -> str:
    """Which note of the exactness report explains a difference ('' for none)."""
    case, aspect, hook, policy = difference
    if variant.startswith("fw403") and aspect == "warnings":
        missing = [w for w in hook if w not in policy]
        if policy == tuple(w for w in hook if not KEPT_WARNING.match(w)) and all(KEPT_WARNING.match(w) for w in missing):
            return "No warnings: a MutatingAdmissionPolicy cannot add one"
    return ""


def test_the_report_names_every_difference(tmp_path_factory: pytest.TempPathFactory) -> None:
    if len(RESULTS) < len(VARIANTS):
        pytest.skip("runs after every variant (run the whole module)")
    report = report_text(export(Settings(), target("1.32")))
    lines = []
    for name, outcomes in RESULTS.items():
        for case, aspect, hook, policy in differences(outcomes):
            why = explained(name, (case, aspect, hook, policy))
            assert why and why in report, f"{name}/{case}: {aspect} differs and the report does not say why"
            lines.append(f"{name}/{case}: {aspect}: webhook {show(hook, 200)} | policies {show(policy, 200)} | {why}")
    cases = sum(len(outcomes) for outcomes in RESULTS.values())
    summary = f"{cases} cases in {len(RESULTS)} configurations; {len(lines)} differences, all explained by the report"
    (tmp_path_factory.getbasetemp() / "differences.txt").write_text("\n".join([summary, *lines]) + "\n",
                                                                  encoding="utf-8")
    print(summary)


def test_the_chart_in_policies_mode_is_accepted_as_rendered(cluster: Cluster) -> None:
    """What `admission.mode: policies` installs (a tuned configuration) is created for real, then removed."""
    from tests.helm.chart import render

    version = str(cluster.api.get("/version")["gitVersion"]).lstrip("v").split("-")[0]
    config = {"rules": {"FW401": {"enforcement": "warn", "exempt-users": ["ci"]},
                        "FW403": {"on-create": "clamp", "custom-resources": CUSTOM}}}
    objects = [o for o in render({"config": config, "fullnameOverride": "chart-e2e",
                                  "admission": {"mode": "policies", "policies": {"kubernetesVersion": version}}})
               if "AdmissionPolicy" in o["kind"]]
    assert len(objects) == 8
    api = cluster.api
    created = []
    try:
        for obj in objects:
            group, version_ = str(obj["apiVersion"]).split("/")
            kind = obj["kind"].lower()
            plural = kind[:-1] + "ies" if kind.endswith("policy") else kind + "s"
            path = f"/apis/{group}/{version_}/{plural}"
            stored = api.create(path, obj)
            created.append(f"{path}/{obj['metadata']['name']}")
            for key in ("variables", "validations", "mutations", "matchConditions", "paramKind", "paramRef",
                        "validationActions", "failurePolicy"):  # (what the API server defaults aside)
                assert stored["spec"].get(key) == obj["spec"].get(key), key
    finally:
        for path in reversed(created):
            api.request("DELETE", path)
