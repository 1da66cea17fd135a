"""The shipped enum table (policies/schemas/enums-1.32.json) is what the real API server serves.

The maintainer's command (`python3 -m fieldwarden.policies.schemas.enums_refresh`) runs against a
kube-apiserver v1.32 serving every API version (`--runtime-config=api/all=true`, as the table is
made) and must write the shipped file byte for byte: an edited table, or a server that says
otherwise, fails here; a CRD's group in that server is left out. The cluster every other test uses
(default API versions) serves no built-in enum the table lacks, and refuses "Bogus" in every field
of the table a manifest can set (but those of enums.DROPPED, which it drops), as FW602 does.
"""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from fieldwarden.policies.schemas import enums
from fieldwarden.policies.schemas.enums_refresh import built_in_paths, not_built_in
from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.kubectl import Kubectl

ALL_APIS = ClusterOptions(apiserver_flags=("--runtime-config=api/all=true",))
CRD = Path(__file__).parents[1] / "fixtures" / "schema_agreement" / "widget-crd.yaml"  # (its spec.mode has an enum)


def refresh(kubectl: Kubectl, output: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fieldwarden.policies.schemas.enums_refresh", "--kubeconfig",
                           str(kubectl.kubeconfig), "--kubectl", str(kubectl.binary), "--output", str(output)],
                          capture_output=True, text=True, env=kubectl.environment(), timeout=300, check=False)


@pytest.fixture(scope="module")
def all_apis(start_cluster: Callable[[ClusterOptions], Cluster], kubectl: Kubectl) -> Kubectl:
    return kubectl.as_user(start_cluster(ALL_APIS).kubeconfig)


def test_the_shipped_table_is_what_the_server_serves(all_apis: Kubectl, tmp_path: Path) -> None:
    written = tmp_path / "enums.json"
    done = refresh(all_apis, written)
    assert done.returncode == 0, done.stderr
    assert written.read_bytes() == Path(enums.TABLE).read_bytes()
    version = json.loads(all_apis("get", "--raw", "/version").stdout)
    assert json.loads(written.read_text())["kubernetes"] == version["gitVersion"]
    assert f"{version['major']}.{version['minor']}" == enums.VERSION
    again = tmp_path / "again.json"
    assert refresh(all_apis, again).returncode == 0
    assert again.read_bytes() == written.read_bytes()  # sorted and stable


def test_the_default_api_versions_serve_no_enum_beyond_the_table(kubectl: Kubectl) -> None:
    def get(path: str) -> Any:
        return json.loads(kubectl("get", "--raw", path).stdout)

    others = not_built_in(get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"),
                          get("/apis/apiregistration.k8s.io/v1/apiservices"))
    served = enums.extract(get(f"/openapi/v3/{path}") for path in built_in_paths(get("/openapi/v3")["paths"], others))
    shipped = enums.load()
    assert served and {name: shipped.get(name) for name in served} == served


def test_a_crds_group_is_no_built_in_one(all_apis: Kubectl, tmp_path: Path) -> None:
    # a CRD with an enum installed in the server the table is made from: the table stays the same
    all_apis("apply", "-f", str(CRD))
    all_apis("wait", "--for=condition=Established", "crd/widgets.agreement.fieldwarden.io", "--timeout=60s")
    try:
        deadline = time.monotonic() + 60  # (the OpenAPI controller publishes a new CRD's document a little later)
        while "apis/agreement.fieldwarden.io/v1" not in json.loads(all_apis("get", "--raw", "/openapi/v3").stdout)["paths"]:
            assert time.monotonic() < deadline, "the CRD's group never appeared in /openapi/v3"
            time.sleep(0.5)
        written = tmp_path / "enums.json"
        assert refresh(all_apis, written).returncode == 0
        assert written.read_bytes() == Path(enums.TABLE).read_bytes()
    finally:
        all_apis("delete", "-f", str(CRD), "--wait=true")


def test_the_command_says_why_it_cannot_read_a_server(kubectl: Kubectl, tmp_path: Path) -> None:
    missing = tmp_path / "absent-kubeconfig"
    done = subprocess.run([sys.executable, "-m", "fieldwarden.policies.schemas.enums_refresh", "--kubeconfig",
                           str(missing), "--kubectl", str(kubectl.binary), "--output", str(tmp_path / "out.json")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and done.stderr.startswith("enums_refresh: kubectl get --raw /version")
    assert "Traceback" not in done.stderr and not (tmp_path / "out.json").exists()


# Every field of the table a manifest can set, in an object the server accepts; the test sets each to "Bogus".
POD: dict[str, Any] = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "nginx"}]}
OBJECTS: dict[str, dict[str, Any]] = {
    "pod": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "scan"}, "spec": {
        "restartPolicy": "Never", "dnsPolicy": "ClusterFirst",
        "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always", "ports": [{"containerPort": 80}],
                        "livenessProbe": {"httpGet": {"port": 80, "path": "/"}},
                        "volumeMounts": [{"name": "h", "mountPath": "/h"}],
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"},
                                            "appArmorProfile": {"type": "RuntimeDefault"}}}],
        "volumes": [{"name": "h", "hostPath": {"path": "/tmp"}}, {"name": "i", "image": {"reference": "nginx"}},
                    {"name": "a", "azureDisk": {"diskName": "d", "diskURI": "https://a.blob.core.windows.net/c/d.vhd"}}],
        "securityContext": {"fsGroup": 1},
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                       "labelSelector": {"matchLabels": {"a": "b"}}}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}]}}}}},
    "service": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {
        "type": "LoadBalancer", "selector": {"a": "b"}, "ports": [{"port": 80}], "externalTrafficPolicy": "Local",
        "internalTrafficPolicy": "Local", "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]}},
    "deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "strategy": {"type": "Recreate"}, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
    "statefulset": {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {
        "serviceName": "s", "updateStrategy": {"type": "OnDelete"}, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
    "daemonset": {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"}, "spec": {
        "updateStrategy": {"type": "OnDelete"}, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
    "job": {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {
        "podReplacementPolicy": "Failed", "completionMode": "NonIndexed", "template": {"spec": POD},
        "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]}}},
    "cronjob": {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": {
        "schedule": "@daily", "concurrencyPolicy": "Forbid", "jobTemplate": {"spec": {"template": {"spec": POD}}}}},
    "pdb": {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}, "spec": {
        "maxUnavailable": 1, "unhealthyPodEvictionPolicy": "AlwaysAllow", "selector": {"matchLabels": {"a": "b"}}}},
    "pv": {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "scan"}, "spec": {
        "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
        "volumeMode": "Filesystem", "hostPath": {"path": "/tmp"}}},
    "pvc": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "volumeMode": "Block", "resources": {"requests": {"storage": "1Gi"}}}},
    "storageclass": {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "scan"},
                     "provisioner": "x.example", "reclaimPolicy": "Retain", "volumeBindingMode": "Immediate"},
    "quota": {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {
        "scopes": ["NotTerminating"]}},
    "quota-selector": {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {
        "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["x"]}]}}},
    "priorityclass": {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "scan"},
                      "value": 10, "preemptionPolicy": "Never"},
    "endpointslice": {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "e"},
                      "addressType": "IPv4", "endpoints": [], "ports": [{"port": 80, "protocol": "TCP"}]},
    "endpoints": {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"},
                  "subsets": [{"addresses": [{"ip": "10.1.1.1"}], "ports": [{"port": 80, "protocol": "TCP"}]}]},
    "ingress": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"}, "spec": {"rules": [
        {"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}},
    "networkpolicy": {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"}, "spec": {
        "podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}},
    "node": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "scan"}, "spec": {
        "taints": [{"key": "a", "effect": "NoSchedule"}]}},
    "validatingwebhooks": {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                           "metadata": {"name": "scan"}, "webhooks": [{
                               "name": "a.example.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                               "failurePolicy": "Fail", "matchPolicy": "Exact", "clientConfig": {"url": "https://a.example.io"},
                               "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                          "resources": ["pods"]}]}]},
    "mutatingwebhooks": {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
                         "metadata": {"name": "scan"}, "webhooks": [{
                             "name": "a.example.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                             "failurePolicy": "Fail", "matchPolicy": "Exact", "reinvocationPolicy": "Never",
                             "clientConfig": {"url": "https://a.example.io"}}]},
    "policy": {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": "scan"}, "spec": {
                   "failurePolicy": "Fail", "validations": [{"expression": "true"}],
                   "matchConstraints": {"matchPolicy": "Exact", "resourceRules": [{
                       "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}}},
    "binding": {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "scan"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}},
    "csr": {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "scan"},
            "spec": {"request": "", "signerName": "example.com/x", "usages": ["client auth"]}},
    "crd": {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "xs.e.io"},
            "spec": {"group": "e.io", "scope": "Namespaced", "names": {"kind": "X", "plural": "xs"}, "versions": [{
                "name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-validations": [{"rule": "true", "reason": "FieldValueInvalid"}]}}}]}},
}
_C = ("spec", "containers", 0)
FIELDS: list[tuple[str, tuple[str | int, ...]]] = [
    *(("pod", path) for path in [
        (*_C, "imagePullPolicy"), (*_C, "terminationMessagePolicy"), (*_C, "ports", 0, "protocol"),
        (*_C, "livenessProbe", "httpGet", "scheme"), ("spec", "volumes", 0, "hostPath", "type"),
        ("spec", "volumes", 1, "image", "pullPolicy"), ("spec", "volumes", 2, "azureDisk", "cachingMode"),
        ("spec", "volumes", 2, "azureDisk", "kind"),
        ("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", 0,
         "matchExpressions", 0, "operator"),
        ("spec", "securityContext", "fsGroupChangePolicy"), ("spec", "securityContext", "supplementalGroupsPolicy"),
        ("spec", "dnsPolicy"), ("spec", "preemptionPolicy"), ("spec", "restartPolicy"),
        (*_C, "securityContext", "seccompProfile", "type"), (*_C, "securityContext", "appArmorProfile", "type"),
        (*_C, "securityContext", "procMount"), ("spec", "tolerations", 0, "effect"), ("spec", "tolerations", 0, "operator"),
        ("spec", "topologySpreadConstraints", 0, "nodeAffinityPolicy"),
        ("spec", "topologySpreadConstraints", 0, "nodeTaintsPolicy"),
        ("spec", "topologySpreadConstraints", 0, "whenUnsatisfiable"), (*_C, "volumeMounts", 0, "mountPropagation")]),
    *(("service", ("spec", field)) for field in ("type", "externalTrafficPolicy", "internalTrafficPolicy",
                                                 "sessionAffinity", "ipFamilyPolicy")),
    ("service", ("spec", "ipFamilies", 0)), ("service", ("spec", "ports", 0, "protocol")),
    ("deployment", ("spec", "strategy", "type")), ("statefulset", ("spec", "updateStrategy", "type")),
    ("statefulset", ("spec", "podManagementPolicy")), ("daemonset", ("spec", "updateStrategy", "type")),
    ("job", ("spec", "podReplacementPolicy")), ("job", ("spec", "completionMode")),
    ("job", ("spec", "podFailurePolicy", "rules", 0, "action")),
    ("job", ("spec", "podFailurePolicy", "rules", 0, "onExitCodes", "operator")),
    ("cronjob", ("spec", "concurrencyPolicy")), ("pdb", ("spec", "unhealthyPodEvictionPolicy")),
    ("pv", ("spec", "persistentVolumeReclaimPolicy")), ("pv", ("spec", "volumeMode")), ("pv", ("spec", "accessModes", 0)),
    ("pvc", ("spec", "volumeMode")), ("pvc", ("spec", "accessModes", 0)),
    ("storageclass", ("reclaimPolicy",)), ("storageclass", ("volumeBindingMode",)), ("quota", ("spec", "scopes", 0)),
    ("quota-selector", ("spec", "scopeSelector", "matchExpressions", 0, "scopeName")),
    ("quota-selector", ("spec", "scopeSelector", "matchExpressions", 0, "operator")),
    ("priorityclass", ("preemptionPolicy",)), ("endpointslice", ("addressType",)),
    ("endpointslice", ("ports", 0, "protocol")), ("endpoints", ("subsets", 0, "ports", 0, "protocol")),
    ("ingress", ("spec", "rules", 0, "http", "paths", 0, "pathType")), ("networkpolicy", ("spec", "policyTypes", 0)),
    ("networkpolicy", ("spec", "ingress", 0, "ports", 0, "protocol")), ("node", ("spec", "taints", 0, "effect")),
    *(("validatingwebhooks", ("webhooks", 0, field)) for field in ("sideEffects", "failurePolicy", "matchPolicy")),
    ("validatingwebhooks", ("webhooks", 0, "rules", 0, "operations", 0)),
    *(("mutatingwebhooks", ("webhooks", 0, field)) for field in ("sideEffects", "failurePolicy", "matchPolicy",
                                                                 "reinvocationPolicy")),
    ("policy", ("spec", "failurePolicy")), ("policy", ("spec", "matchConstraints", "matchPolicy")),
    ("policy", ("spec", "matchConstraints", "resourceRules", 0, "operations", 0)),
    ("binding", ("spec", "validationActions", 0)), ("csr", ("spec", "usages", 0)),
    ("crd", ("spec", "versions", 0, "schema", "openAPIV3Schema", "x-kubernetes-validations", 0, "reason")),
]
# What FIELDS leaves out of the table, and why.
NOT_SET = {
    **{(name, path): "status: not taken from a manifest" for name, path in [
        ("io.k8s.api.core.v1.ModifyVolumeStatus", "status"), ("io.k8s.api.core.v1.NamespaceStatus", "phase"),
        ("io.k8s.api.core.v1.NodeStatus", "phase"), ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "accessModes/items"),
        ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "allocatedResourceStatuses/additionalProperties"),
        ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "phase"), ("io.k8s.api.core.v1.PersistentVolumeStatus", "phase"),
        ("io.k8s.api.core.v1.PodStatus", "phase"), ("io.k8s.api.core.v1.PodStatus", "qosClass"),
        ("io.k8s.api.core.v1.PortStatus", "protocol"), ("io.k8s.api.networking.v1.IngressPortStatus", "protocol")]},
    **{("io.k8s.api.core.v1.EphemeralContainer", path): "ephemeral containers are added through a subresource, not a manifest"
       for path in ("imagePullPolicy", "terminationMessagePolicy")},
}
NOT_SERVED_BY_DEFAULT = ("io.k8s.api.admissionregistration.v1alpha1.", "io.k8s.api.admissionregistration.v1beta1.")


def _definition_field(definitions: dict[str, Any], name: str, path: tuple[str | int, ...]) -> tuple[str, str]:
    """The (definition, field path) of the table that `path` in an object of definition `name` reaches."""
    node, steps = definitions[name], []
    for part in path:
        if isinstance(part, int):
            node, step = node["items"], "items"
        else:
            node, step = node["properties"][part], part
        steps.append(step)
        ref = node.get("$ref") or next((s.get("$ref") for s in node.get("allOf", []) if "$ref" in s), None)
        if ref is not None:
            name, node, steps = ref.rsplit("/", 1)[-1], definitions[ref.rsplit("/", 1)[-1]], []
    return name, "/".join(str(step) for step in steps)


def test_the_server_refuses_a_value_outside_every_enum_a_manifest_sets_and_so_does_fieldwarden(
        cluster: Cluster, kubectl: Kubectl, tmp_path: Path) -> None:
    from fieldwarden.policies.schemas import builtin
    from tests.helpers import lint

    cluster.ensure_namespace("enum-scan")
    request = subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                              "-keyout", str(tmp_path / "key.pem"), "-subj", "/CN=scan"], capture_output=True, check=True)
    OBJECTS["csr"]["spec"]["request"] = base64.b64encode(request.stdout).decode()
    root = builtin.schema_root()
    assert root is not None
    definitions = json.loads((Path(root) / f"v{enums.VERSION}.0-local-strict" / "_definitions.json").read_text())["$defs"]
    index = builtin.index(enums.VERSION)
    for name, obj in OBJECTS.items():  # each object as it is: accepted
        done = kubectl("apply", "--dry-run=server", "--validate=strict", "-n", "enum-scan", "-f", "-", stdin=obj, check=False)
        assert done.code == 0, (name, str(done))
    refused, covered = set(), set()
    cases = tmp_path / "cases"
    cases.mkdir()
    for position, (name, path) in enumerate(FIELDS):
        obj = copy.deepcopy(OBJECTS[name])
        parent = obj
        for part in path[:-1]:
            parent = parent[part]
        parent[path[-1]] = "Bogus"
        file = f"{position:02}-{name}.yaml"
        (cases / file).write_text(json.dumps(obj))
        field = _definition_field(definitions, index[obj["apiVersion"]][obj["kind"]], path)
        covered.add(field)
        done = kubectl("apply", "--dry-run=server", "--validate=strict", "-n", "enum-scan", "-f", "-", stdin=obj, check=False)
        if field[1] in enums.DROPPED.get(field[0], ()):
            assert done.code == 0, (field, str(done))  # a field of a feature off by default: dropped, any value passes
        else:
            assert done.code == 1 and "Bogus" in done.stdout + done.stderr, (field, str(done))
            refused.add(file)
    run = lint(["--k8s-version", enums.VERSION, "--select", "FW602", "."], cwd=cases)
    assert {Path(f["file"]).name for f in run.findings} == refused
    assert all('Unsupported value: "Bogus"' in f["message"] and f["severity"] == "error" for f in run.findings), run.findings
    table = {(name, path) for name, fields in enums.load().items() for path in fields}
    left = {entry for entry in table - covered if not entry[0].startswith(NOT_SERVED_BY_DEFAULT)}
    assert left == set(NOT_SET)
