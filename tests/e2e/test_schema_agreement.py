"""Offline schema validation against the API server itself: the same verdict and the same field path.

Each case is a fixture file (tests/fixtures/schema_agreement/); for each, `kubectl apply
--dry-run=server --validate=strict` on a real kube-apiserver v1.32 and `fieldwarden lint
--k8s-version 1.32` on the same file must agree: valid or invalid, and the field paths each names
(kubectl's words parsed: a strict decoding `unknown field "spec.foo"`, `spec.x: Required value`,
`Invalid value`, `Unsupported value`, Go's `cannot unmarshal ... into Go struct field T.path`, which
names a path without list indices or map keys; `no matches for kind` stands as the path `kind`).
Enum values of built-in fields are checked offline from the table policies/schemas/enums-1.32.json
(taken from this server's /openapi/v3; tests/e2e/test_enum_table.py keeps it equal), so at 1.32 an
unsupported value is refused on both sides.
The Widget cases run against a CRD of our own (widget-crd.yaml) installed in the server and lying
beside the case, as a CRD does in a project. A known difference says why the server goes beyond the
schema, and checks both sides of it: what the server names, and what fieldwarden names instead.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.kubectl import Kubectl
from tests.helpers import FIXTURES, git_repo, lint

CASES_DIR = FIXTURES / "schema_agreement"
CRD = CASES_DIR / "widget-crd.yaml"
NAMESPACE = "schema-agreement"
KIND = "kind"  # the path of "no such kind in this apiVersion"


class Case(NamedTuple):
    file: str
    paths: tuple[str, ...] = ()  # what both name (): valid); fieldwarden's spelling, with list indices and map keys
    differs: str = ""  # a known difference: why the server's answer goes beyond the schema
    server: tuple[str, ...] = ()  # with `differs`: the paths the server names instead


SELECTOR = "the server checks that the selector selects the template's labels (a cross-field rule, FW102's)"
NAME = "object names are checked against DNS formats by the server's validation, not by the schema"
RANGE = "value ranges are the server's validation, not the schema's (no minimum in the built-in schemas)"
QUANTITY = "a quantity is a string to the schema; the server parses it (FW204-style value checks)"
BASE64 = "`format: byte` is not checked offline; the server decodes the base64"
JOB_RESTART = "a Job's pod restartPolicy must be OnFailure or Never: the server's rule for Jobs; the Pod schema allows Always"
IMAGE = "the schema leaves `image` optional (workload templates may leave it to a default); the server's Pod validation requires it"
CRON = "the schedule's cron syntax is the server's validation; to the schema it is a string"
MINIMUM = "`minimum` and other value bounds of a CRD are not checked offline (a value, not a shape)"
ROLEREF = "the server names the fields it finds empty inside the missing `roleRef`; the schema names `roleRef` itself"
JOB_TEMPLATE = "the server defaults the missing template and then finds its pod spec empty; the schema names `template` itself"
NOT_ENUM = ("the field is not marked `+enum` in the API (its OpenAPI v3 has no `enum` for it, so the enum table "
            "policies/schemas/enums-1.32.json has none); the server's validation checks the value")
STRATEGY = "the server names the strategy itself (printing the Go struct); fieldwarden the `type` whose value is refused"
LIST_ITEM = "the server names the list; fieldwarden the item whose value is refused, on its own line"
EMPTY = ("an empty string is taken as unset (Go's zero value, which defaulting treats as absent); a field without a "
         "default, as mountPropagation, refuses it")

CASES = [
    # Deployment
    Case("deployment-valid"),
    Case("deployment-probe-port-name"),
    Case("deployment-unknown-field", ("spec.replica",)),
    Case("deployment-container-unknown-field", ("spec.template.spec.containers[0].imagePullPolice",)),
    Case("deployment-template-spec-unknown-field", ("spec.template.spec.hostname1",)),
    Case("deployment-metadata-unknown-field", ("metadata.label",)),
    Case("deployment-containerport-string", ("spec.template.spec.containers[0].ports[0].containerPort",)),
    Case("deployment-replicas-string", ("spec.replicas",)),
    Case("deployment-env-value-int", ("spec.template.spec.containers[0].env[0].value",)),
    Case("deployment-labels-int", ("metadata.labels[tier]",)),
    Case("deployment-containers-not-list", ("spec.template.spec.containers",)),
    Case("deployment-missing-containers", ("spec.template.spec.containers",)),
    Case("deployment-container-missing-name", ("spec.template.spec.containers[0].name",)),
    Case("deployment-missing-selector", ("spec.selector",), SELECTOR, ("spec.selector", "spec.template.metadata.labels")),
    Case("deployment-strategy-type-invalid", ("spec.strategy.type",), STRATEGY, ("spec.strategy",)),
    Case("deployment-strategy-recreate"),
    Case("deployment-imagepullpolicy-invalid", ("spec.template.spec.containers[0].imagePullPolicy",)),
    Case("deployment-port-protocol-invalid", ("spec.template.spec.containers[0].ports[0].protocol",)),
    Case("deployment-enum-fields-empty"),
    Case("deployment-kind-typo", (KIND,)),
    Case("deployment-extensions-v1beta1", (KIND,)),
    Case("deployment-selector-mismatch", (), SELECTOR, ("spec.template.metadata.labels",)),
    Case("deployment-negative-replicas", (), RANGE, ("spec.replicas",)),
    Case("deployment-bad-name", (), NAME, ("metadata.name",)),
    Case("deployment-resources-bad-quantity", (), QUANTITY, ("",)),
    # Service
    Case("service-valid"),
    Case("service-targetport-name"),
    Case("service-unknown-field", ("spec.ports[0].prot",)),
    Case("service-port-string", ("spec.ports[0].port",)),
    Case("service-ports-not-list", ("spec.ports",)),
    Case("service-type-invalid", ("spec.type",)),
    Case("service-protocol-invalid", ("spec.ports[0].protocol",)),
    Case("service-externaltrafficpolicy-invalid", ("spec.externalTrafficPolicy",)),
    Case("service-missing-port", ("spec.ports[0].port",)),
    # ConfigMap
    Case("configmap-valid"),
    Case("configmap-data-int", ("data[LEVEL]",)),
    Case("configmap-unknown-field", ("immutible",)),
    Case("configmap-immutable-string", ("immutable",)),
    Case("configmap-binarydata-invalid", (), BASE64, ("",)),
    # Pod
    Case("pod-valid"),
    Case("pod-restartpolicy-invalid", ("spec.restartPolicy",)),
    Case("pod-dnspolicy-invalid", ("spec.dnsPolicy",)),
    Case("pod-toleration-operator-invalid", ("spec.tolerations[0].operator",)),
    Case("pod-mountpropagation-empty", (), EMPTY, ("spec.containers[0].volumeMounts.mountPropagation",)),
    Case("pod-feature-gated-values"),  # enum fields of features off by default: any value passes (enums.DROPPED)
    Case("pod-runasuser-string", ("spec.containers[0].securityContext.runAsUser",)),
    Case("pod-hostnetwork-string", ("spec.hostNetwork",)),
    Case("pod-volume-unknown-field", ("spec.volumes[0].sizeLimit",)),
    Case("pod-missing-containers", ("spec.containers",)),
    Case("pod-missing-spec", (), "a Pod without `spec` is valid to the schema (spec is optional); the server requires containers",
         ("spec.containers",)),
    Case("pod-missing-image", (), IMAGE, ("spec.containers[0].image",)),
    # Job
    Case("job-valid"),
    Case("job-backofflimit-string", ("spec.backoffLimit",)),
    Case("job-completionmode-invalid", ("spec.completionMode",)),
    Case("job-unknown-field", ("spec.retries",)),
    Case("job-missing-template", ("spec.template",), JOB_TEMPLATE,
         ("spec.template.spec.containers", "spec.template.spec.restartPolicy")),
    Case("job-restartpolicy-always", (), JOB_RESTART, ("spec.template.spec.restartPolicy",)),
    # CronJob
    Case("cronjob-valid"),
    Case("cronjob-missing-schedule", ("spec.schedule",)),
    Case("cronjob-concurrencypolicy-invalid", ("spec.concurrencyPolicy",)),
    Case("cronjob-unknown-field", ("spec.jobTemplate.spec.templates",)),
    Case("cronjob-batch-v1beta1", (KIND,)),
    Case("cronjob-bad-schedule", (), CRON, ("spec.schedule",)),
    # Ingress
    Case("ingress-valid"),
    Case("ingress-pathtype-invalid", ("spec.rules[0].http.paths[0].pathType",)),
    Case("ingress-backend-missing-name", ("spec.rules[0].http.paths[0].backend.service.name",)),
    Case("ingress-port-number-string", ("spec.rules[0].http.paths[0].backend.service.port.number",)),
    Case("ingress-rules-unknown-field", ("spec.rules[0].hosts",)),
    Case("ingress-extensions-v1beta1", (KIND,)),
    # HorizontalPodAutoscaler
    Case("hpa-valid"),
    Case("hpa-scaletargetref-missing-kind", ("spec.scaleTargetRef.kind",)),
    Case("hpa-utilization-string", ("spec.metrics[0].resource.target.averageUtilization",)),
    Case("hpa-metric-type-invalid", (), NOT_ENUM, ("spec.metrics[0].type",)),
    Case("hpa-v2beta2", (KIND,)),
    Case("hpa-missing-maxreplicas", ("spec.maxReplicas",)),
    # PodDisruptionBudget
    Case("pdb-valid"),
    Case("pdb-percent"),
    Case("pdb-unknown-field", ("spec.minAvaliable",)),
    Case("pdb-minavailable-bool", ("spec.minAvailable",)),
    Case("pdb-policy-v1beta1", (KIND,)),
    # NetworkPolicy
    Case("networkpolicy-valid"),
    Case("networkpolicy-policytype-invalid", ("spec.policyTypes[0]",)),
    Case("networkpolicy-port-protocol-invalid", ("spec.ingress[0].ports[0].protocol",)),
    Case("networkpolicy-port-bool", ("spec.ingress[0].ports[0].port",)),
    Case("networkpolicy-unknown-field", ("spec.ingress[0].source",)),
    # PersistentVolumeClaim
    Case("pvc-valid"),
    Case("pvc-accessmode-invalid", ("spec.accessModes[1]",), LIST_ITEM, ("spec.accessModes",)),
    Case("pvc-volumemode-invalid", ("spec.volumeMode",)),
    # StatefulSet
    Case("statefulset-podmanagementpolicy-invalid", ("spec.podManagementPolicy",)),
    # RBAC
    Case("role-valid"),
    Case("role-missing-verbs", ("rules[0].verbs",)),
    Case("role-verbs-string", ("rules[0].verbs",)),
    Case("role-unknown-field", ("rules[0].resource",)),
    Case("rolebinding-valid"),
    Case("rolebinding-subject-missing-name", ("subjects[0].name",)),
    Case("rolebinding-missing-roleref", ("roleRef",), ROLEREF, ("roleRef.kind", "roleRef.name")),
    # A custom resource, against the CRD beside it (widget-crd.yaml)
    Case("widget-crd"),
    Case("widget-valid"),
    Case("widget-port-name"),
    Case("widget-extra-preserved"),
    Case("widget-note-null"),
    Case("widget-owner-null"),
    Case("widget-embedded"),
    Case("widget-unknown-field", ("spec.colour",)),
    Case("widget-top-level-unknown-field", ("size",)),
    Case("widget-metadata-unknown-field", ("metadata.title",)),
    Case("widget-part-unknown-field", ("spec.parts[0].weight",)),
    Case("widget-embedded-unknown-field", ("spec.template.spec.tag",)),
    Case("widget-size-string", ("spec.size",)),
    Case("widget-enabled-string", ("spec.enabled",)),
    Case("widget-note-int", ("spec.note",)),
    Case("widget-labels-int", ("spec.labels.tier",)),
    Case("widget-mode-invalid", ("spec.mode",)),
    Case("widget-missing-size", ("spec.size",)),
    Case("widget-size-null", ("spec.size",)),
    Case("widget-part-missing-name", ("spec.parts[0].name",)),
    Case("widget-kind-typo", (KIND,)),
    Case("widget-v1alpha1-not-served", (KIND,)),
    Case("widget-size-below-minimum", (), MINIMUM, ("spec.size",)),
    Case("widget-size-float-integral"),
    Case("widget-labels-null-value"),
    Case("widget-size-float", ("spec.size",)),
    Case("widget-part-null", ("spec.parts[0]",)),
    Case("widget-embedded-without-kind", ("spec.template.apiVersion", "spec.template.kind")),
]

# kubectl's and the API server's ways of naming a field
_NAMED = re.compile(r'unknown field "([^"]+)"|(?:^|\* |is invalid: )([\w.\[\]/-]+): (?:Required value|Invalid value|'
                    r"Unsupported value|expected )", re.M)
_GO_FIELD = re.compile(r"into Go struct field \w+\.(\S+) of type")
_NO_KIND = re.compile(r'no matches for kind "[^"]*" in version')
_INDICES = re.compile(r"\[[^\]]*\]")


def named_paths(text: str) -> set[str]:
    """The field paths a kubectl error or a fieldwarden message names; Go's decoding errors name a path
    without indices or map keys (`spec.ports.port`), kept apart by a leading `~`."""
    found = {unknown or field for unknown, field in _NAMED.findall(text)}
    found.update("~" + path for path in _GO_FIELD.findall(text))
    if _NO_KIND.search(text):
        found.add(KIND)
    return found


def server_spelling(paths: tuple[str, ...], server: set[str]) -> set[str]:
    """`paths` as the server spells them: Go's decoding errors drop list indices and map keys."""
    coarse = any(path.startswith("~") for path in server)
    return {"~" + _INDICES.sub("", path) if coarse and path != KIND else path for path in paths}


@pytest.fixture(scope="module")
def agreement(cluster: Cluster, kubectl: Kubectl) -> Kubectl:
    """The cluster with the case namespace and the Widget CRD established."""
    cluster.ensure_namespace(NAMESPACE)
    kubectl("apply", "-f", str(CRD))
    kubectl("wait", "--for=condition=Established", "crd/widgets.agreement.fieldwarden.io", "--timeout=60s")
    return kubectl


def test_the_table_is_large_and_every_fixture_is_in_it() -> None:
    names = [case.file for case in CASES]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(path.stem for path in CASES_DIR.glob("*.yaml"))
    assert sum(1 for case in CASES if case.paths or case.server) >= 60
    assert sum(1 for case in CASES if not case.paths and not case.server) >= 15


@pytest.mark.parametrize("case", CASES, ids=[case.file for case in CASES])
def test_fieldwarden_and_the_api_server_agree(case: Case, agreement: Kubectl, tmp_path: Path) -> None:
    source = CASES_DIR / f"{case.file}.yaml"
    answer = agreement("apply", "--dry-run=server", "--validate=strict", "-n", NAMESPACE, "-f", str(source), check=False)
    said = named_paths(answer.stdout + answer.stderr)
    expected_server = case.server if case.differs else case.paths
    assert answer.code == (1 if expected_server else 0), str(answer)
    if expected_server != ("",):  # ("",): the server says it is invalid without naming a field
        assert said == server_spelling(expected_server, said), str(answer)

    git_repo(tmp_path)  # a project, as CI and pre-commit see one: its other files are context
    shutil.copy(source, tmp_path / source.name)
    if case.file.startswith("widget-") and source != CRD:
        shutil.copy(CRD, tmp_path / CRD.name)  # the CRD in the project, as context
    # the schema rules, and FW101: a workload's missing selector is its to say (FW602 leaves it)
    run = lint(["--k8s-version", "1.32", "--select", "FW6,FW101", source.name], cwd=tmp_path)
    ours = [f for f in run.findings if f["severity"] == "error" and f["file"] == source.name]
    ours_named = {path for f in ours
                  for path in {"FW602": named_paths(f["message"]), "FW601": {KIND}}.get(f["code"], {f["field"]})}
    assert run.code == (1 if ours else 0), run
    assert ours_named == set(case.paths), ours
