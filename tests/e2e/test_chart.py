"""The chart behind a real kube-apiserver: its objects pass the server's own validation, and its RBAC is what the code calls.

- Every value set of tests/helm/test_chart.py is rendered (release `dryrun`, in a namespace of the
  test) and sent with `kubectl apply --dry-run=server --validate=strict`, client-side and
  server-side: the server's schemas, defaulting and validation accept every object, warn about none,
  and drop no field the chart wrote (a field behind a disabled feature gate is dropped silently).
  cert-manager's objects need its CRDs: a faithful subset of them (tests/e2e/crds/cert-manager.yaml)
  is installed for this module.
- RBAC, on the release the `fieldwarden` fixture installed: `kubectl auth can-i` as each
  ServiceAccount allows every request its program makes (`CALLS`: every kubernetes-client method in
  webhook/, checked against the code) and denies the requests next to them; `kubectl auth can-i
  --list`, less what a ServiceAccount with no bindings may do, is exactly those requests. The
  ClusterRole the chart makes for `fieldwarden set-image` users grants exactly what `set-image`
  calls, in the namespaces it is bound in (Kubernetes' `edit` role cannot patch pods/status).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.e2e.cluster import Cluster
from tests.e2e.install import NAMESPACE, Installation
from tests.e2e.kubectl import Kubectl
from tests.e2e.processes import wait_for
from tests.helm.chart import REPO, chart, parse
from tests.helm.test_chart import VALUE_SETS

CRDS = Path(__file__).parent / "crds" / "cert-manager.yaml"
RELEASE = "dryrun"

# --- the server's validation ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def cert_manager_crds(cluster: Cluster, kubectl: Kubectl) -> Iterator[None]:
    """cert-manager's Certificate and Issuer CRDs (a subset, see the file), established; removed afterwards."""
    kubectl("apply", "--server-side", "--field-manager=e2e-chart", "-f", str(CRDS))
    names = [d["metadata"]["name"] for d in yaml.safe_load_all(CRDS.read_text())]

    def established() -> bool:
        for name in names:
            crd = cluster.api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
            if not any(c["type"] == "Established" and c["status"] == "True"
                       for c in crd.get("status", {}).get("conditions") or []):
                return False
        return True

    wait_for(established, "cert-manager's CRDs to be established", 30)
    yield
    kubectl("delete", "-f", str(CRDS), "--ignore-not-found", "--wait=false")


def lost_fields(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Where the server's answer lacks, or changed, what was sent (it may add defaults: not a loss)."""
    if isinstance(sent, dict):
        if not isinstance(stored, dict):
            return [f"{path or '.'}: {stored!r}"]
        return [lost for key, value in sent.items()
                for lost in (lost_fields(value, stored[key], f"{path}.{key}") if key in stored else [f"{path}.{key}"])]
    if isinstance(sent, list):
        if not isinstance(stored, list) or len(stored) != len(sent):
            return [f"{path}: {len(sent)} items sent, {stored!r} stored"]
        return [lost for i, (a, b) in enumerate(zip(sent, stored)) for lost in lost_fields(a, b, f"{path}[{i}]")]
    return [] if sent == stored else [f"{path}: {sent!r} became {stored!r}"]


@pytest.mark.parametrize("mode", ["client-side", "server-side"])
@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_the_server_accepts_every_rendered_object_and_keeps_every_field(
        name: str, mode: str, cert_manager_crds: None, kubectl: Kubectl, namespace: str) -> None:
    objects = parse(chart().render(VALUE_SETS[name], name=RELEASE, namespace=namespace, is_install=True))
    flags = ["--server-side", "--field-manager=helm"] if mode == "server-side" else []
    done = kubectl("apply", "--dry-run=server", "--validate=strict", *flags, "-o", "json", "-f", "-",
                   stdin=objects, check=False)
    assert done.code == 0, str(done)
    assert "warning" not in done.stderr.lower(), done.stderr  # deprecated APIs, unknown or duplicate fields
    answer = done.json()
    stored = answer["items"] if answer.get("kind") == "List" else [answer]
    assert [(o["kind"], o["metadata"]["name"]) for o in stored] == [(o["kind"], o["metadata"]["name"]) for o in objects]
    for sent, kept in zip(objects, stored):
        assert lost_fields(sent, kept) == [], f"{sent['kind']}/{sent['metadata']['name']}"
    # A dry run: nothing was stored.
    assert kubectl("get", "all,secrets,configmaps", "-n", namespace, "-l", f"app.kubernetes.io/instance={RELEASE}",
                   "-o", "name").stdout.strip() == ""


def test_the_crd_subset_rejects_a_misspelt_field_as_cert_managers_own_does(
        cert_manager_crds: None, kubectl: Kubectl, namespace: str) -> None:
    objects = parse(chart().render(VALUE_SETS["cert-manager"], name=RELEASE, namespace=namespace, is_install=True))
    certificate = next(o for o in objects if o["kind"] == "Certificate" and not o["spec"].get("isCA"))
    certificate["spec"]["renewBfore"] = certificate["spec"].pop("renewBefore")
    done = kubectl("apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=certificate, check=False)
    assert done.code != 0 and 'unknown field "spec.renewBfore"' in done.stderr, str(done)


# --- RBAC ------------------------------------------------------------------------------------------

ALL = "all namespaces"  # `-A`: cluster-wide, as the list and watch of every namespace are
RELEASE_NAMESPACE = "the release namespace"
OWN = "the namespace worked in"  # set-image's `-n`


@dataclass(frozen=True)
class Request:
    """One kind of request a program makes, as RBAC and `kubectl auth can-i` see it."""

    verb: str
    resource: str  # resource.group, as kubectl names it: "pods", "leases.coordination.k8s.io"
    subresource: str = ""
    name: str = ""  # when the code names the object (RBAC resourceNames)
    where: str = ALL

    def can_i(self, namespace: str) -> list[str]:
        target = f"{self.resource}/{self.name}" if self.name else self.resource
        scope = ["-A"] if self.where == ALL else ["-n", namespace]
        return [self.verb, target, *([f"--subresource={self.subresource}"] if self.subresource else []), *scope]

    def listed(self) -> tuple[str, str, str]:
        """How `kubectl auth can-i --list` shows it: (resource[/subresource], name, verb)."""
        resource, _, group = self.resource.partition(".")
        shown = f"{resource}/{self.subresource}" if self.subresource else resource
        return (f"{shown}.{group}" if group else shown, self.name, self.verb)


HPA = "horizontalpodautoscalers.autoscaling"
VPA = "verticalpodautoscalers.autoscaling.k8s.io"
CRD_RESOURCE = "customresourcedefinitions.apiextensions.k8s.io"
LEASES = "leases.coordination.k8s.io"
LEASE = "fieldwarden-controller"  # the chart's --lease-name for the release `fieldwarden`

# Every kubernetes-client method webhook/ calls, by program, and the requests each makes. A
# Reflector (kube/reflector.py) lists with its method, then watches with the same one.
CALLS: dict[str, dict[str, tuple[Request, ...]]] = {
    "serve": {  # inventory/cluster.py: the autoscaler inventory
        "list_horizontal_pod_autoscaler_for_all_namespaces": (Request("list", HPA), Request("watch", HPA)),
        "list_cluster_custom_object": (Request("list", VPA), Request("watch", VPA)),  # its only custom objects
        "list_custom_resource_definition": (Request("list", CRD_RESOURCE, name=VPA),
                                            Request("watch", CRD_RESOURCE, name=VPA)),  # the VPA CRD alone
    },
    "controller": {
        "list_pod_for_all_namespaces": (Request("list", "pods"), Request("watch", "pods")),  # gate/controller.py
        "patch_namespaced_pod_status": (Request("patch", "pods", "status"),),  # kube/api.py Pods.patch_status
        "read_namespaced_lease": (Request("get", LEASES, name=LEASE, where=RELEASE_NAMESPACE),),  # gate/leader.py
        "create_namespaced_lease": (Request("create", LEASES, where=RELEASE_NAMESPACE),),
        "replace_namespaced_lease": (Request("update", LEASES, name=LEASE, where=RELEASE_NAMESPACE),),
    },
    "set-image": {  # gate/inplace.py through kube/api.py Pods, in the namespace of -n
        "read_namespaced_pod": (Request("get", "pods", where=OWN),),
        "list_namespaced_pod": (Request("list", "pods", where=OWN),  # -l SELECTOR
                                Request("watch", "pods", where=OWN)),  # Pods.watch_one: one pod, until it is ready
        "patch_namespaced_pod": (Request("patch", "pods", where=OWN),),  # the images
        "patch_namespaced_pod_status": (Request("patch", "pods", "status", where=OWN),),  # the gate's condition
    },
}
# Requests next to those, that the programs never make and must not be allowed.
NEVER: dict[str, tuple[Request, ...]] = {
    "serve": (Request("get", HPA), Request("update", HPA), Request("list", "pods"), Request("list", "secrets"),
              Request("list", "scaledobjects.keda.sh"),  # KEDA makes an HPA of each: the HPAs cover them
              Request("patch", "deployments.apps"), Request("create", LEASES, where=RELEASE_NAMESPACE),
              Request("list", CRD_RESOURCE), Request("get", CRD_RESOURCE, name=VPA),
              Request("watch", CRD_RESOURCE, name=HPA)),
    "controller": (Request("get", "pods"), Request("patch", "pods"), Request("update", "pods", "status"),
                   Request("delete", "pods"), Request("create", "events"), Request("create", LEASES),
                   Request("list", LEASES, where=RELEASE_NAMESPACE), Request("delete", LEASES, name=LEASE,
                                                                              where=RELEASE_NAMESPACE),
                   Request("update", LEASES, name="another-lease", where=RELEASE_NAMESPACE),
                   Request("get", "secrets", where=RELEASE_NAMESPACE)),
    "set-image": (Request("delete", "pods", where=OWN), Request("update", "pods", "status", where=OWN),
                  Request("create", "pods", "ephemeralcontainers", where=OWN), Request("patch", "pods"),
                  Request("patch", "deployments.apps", where=OWN)),
}
ACCOUNTS = {"serve": "fieldwarden-webhook", "controller": "fieldwarden-controller"}  # the chart's, release `fieldwarden`
SET_IMAGE_ROLE = "fieldwarden-set-image"
ROW = re.compile(r"^(\S*)\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s+\[([^\]]*)\]\s*$")


def client_methods() -> set[str]:
    """The names of the kubernetes client's API methods (`CoreV1Api.list_namespaced_pod`, ...)."""
    from kubernetes import client

    apis = [getattr(client, name) for name in dir(client) if name.endswith("Api")]
    # Each request method has a `..._with_http_info` twin; helpers (`close`, ...) have none.
    return {method for api in apis if isinstance(api, type) for method in vars(api)
            if f"{method}_with_http_info" in vars(api)}


def test_calls_names_every_api_method_the_code_calls() -> None:
    known = client_methods()
    used: dict[str, str] = {}
    for source in sorted((REPO / "webhook").rglob("*.py")):
        for method in re.findall(r"\.(\w+)\b", source.read_text(encoding="utf-8")):
            if method in known:
                used.setdefault(method, source.relative_to(REPO).as_posix())
    listed = {method for methods in CALLS.values() for method in methods}
    assert {m: f for m, f in used.items() if m not in listed} == {}, "new API calls: add them to CALLS (and the chart)"
    assert listed - set(used) == set(), "CALLS names methods the code no longer calls"


@dataclass(frozen=True)
class Account:
    """A ServiceAccount as RBAC sees it (`kubectl --as` adds its groups)."""

    namespace: str
    name: str

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    @property
    def groups(self) -> list[str]:
        return ["system:serviceaccounts", f"system:serviceaccounts:{self.namespace}", "system:authenticated"]


def can_i(kubectl: Kubectl, cluster: Cluster, account: Account, request: Request, namespace: str) -> bool:
    """`kubectl auth can-i REQUEST --as=ACCOUNT`."""
    done = kubectl("auth", "can-i", *request.can_i(namespace), f"--as={account.user}", check=False)
    if "doesn't have a resource type" in done.stderr:
        # A CRD that is not installed (the VPA's, which the webhook lists anyway): kubectl then asks
        # about resource "verticalpodautoscalers.autoscaling.k8s.io" of the core group, so ask the
        # API server the right question itself.
        return subject_access_review(cluster, account, request, namespace)
    assert done.stdout.strip() in ("yes", "no"), str(done)
    return done.stdout.strip() == "yes"


def subject_access_review(cluster: Cluster, account: Account, request: Request, namespace: str) -> bool:
    resource, _, group = request.resource.partition(".")
    attributes = {"verb": request.verb, "group": group, "resource": resource, "subresource": request.subresource,
                  "name": request.name, "namespace": "" if request.where == ALL else namespace}
    review = cluster.api.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": account.user, "groups": account.groups, "resourceAttributes": attributes}})
    return bool(review["status"].get("allowed"))


def allowed_requests(kubectl: Kubectl, cluster: Cluster, account: Account, requests: list[Request],
                     namespace: str) -> list[Request]:
    """Those of `requests` that `account` may make (asked a few at a time)."""
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda r: can_i(kubectl, cluster, account, r, namespace), requests))
    return [r for r, yes in zip(requests, answers) if yes]


def listed(kubectl: Kubectl, account: Account, namespace: str) -> set[tuple[str, str, str]]:
    """`kubectl auth can-i --list` in `namespace`: (resource, name, verb) and ("", url, verb) each."""
    done = kubectl("auth", "can-i", "--list", "--no-headers", "-n", namespace, f"--as={account.user}")
    found = set()
    for line in done.stdout.splitlines():
        row = ROW.match(line)
        assert row, f"cannot read {line!r} of\n{done.stdout}"
        resource, urls, names, verbs = row.groups()
        for verb in verbs.split():
            for target in (names.split() or [""]) if resource else urls.split():
                found.add((resource, target, verb))
    return found


def granted(kubectl: Kubectl, account: Account, namespace: str) -> set[tuple[str, str, str]]:
    """What `account` may do in `namespace` (`--list`), less what a ServiceAccount with no bindings may."""
    nobody = Account(account.namespace, "e2e-nobody")
    return listed(kubectl, account, namespace) - listed(kubectl, nobody, namespace)


def requests_of(program: str) -> list[Request]:
    return [request for requests in CALLS[program].values() for request in requests]


@pytest.mark.parametrize("program", sorted(ACCOUNTS))
def test_each_service_account_may_make_every_request_of_its_program_and_none_next_to_them(
        program: str, fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl) -> None:
    component = "webhook" if program == "serve" else program
    account = Account(NAMESPACE, ACCOUNTS[program])
    assert fieldwarden.rendered("ServiceAccount", component)["metadata"]["name"] == account.name
    asked = requests_of(program) + list(NEVER[program])
    assert allowed_requests(kubectl, cluster, account, asked, NAMESPACE) == requests_of(program)


@pytest.mark.parametrize("program", sorted(ACCOUNTS))
def test_each_service_account_is_granted_nothing_beyond_its_programs_requests(
        program: str, fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    account = Account(NAMESPACE, ACCOUNTS[program])
    for where in (NAMESPACE, namespace, "kube-system"):
        expected = {r.listed() for r in requests_of(program) if r.where == ALL or where == NAMESPACE}
        assert granted(kubectl, account, where) == expected, where


def bind_set_image_role(kubectl: Kubectl, account: Account) -> None:
    kubectl("create", "rolebinding", f"{account.name}-set-image", f"--clusterrole={SET_IMAGE_ROLE}",
            f"--serviceaccount={account.namespace}:{account.name}", "-n", account.namespace)


def test_the_set_image_role_allows_every_request_of_set_image_where_it_is_bound_and_nothing_else(
        fieldwarden: Installation, cluster: Cluster, kubectl: Kubectl, namespace: str) -> None:
    assert fieldwarden.rendered("ClusterRole", "set-image")["metadata"]["name"] == SET_IMAGE_ROLE
    deployer = Account(namespace, "deployer")  # RBAC needs no ServiceAccount object: the name is the subject
    bind_set_image_role(kubectl, deployer)
    requests = requests_of("set-image")
    wait_for(lambda: can_i(kubectl, cluster, deployer, requests[0], namespace), "the RoleBinding to apply", 10)
    asked = requests + list(NEVER["set-image"])
    assert allowed_requests(kubectl, cluster, deployer, asked, namespace) == requests
    assert granted(kubectl, deployer, namespace) == {r.listed() for r in requests}
    assert granted(kubectl, deployer, "default") == set()  # only where it is bound


def test_kubernetes_edit_role_cannot_run_set_image_and_the_charts_role_completes_it(
        fieldwarden: Installation, controller_manager: Cluster, kubectl: Kubectl, namespace: str) -> None:
    cluster = controller_manager
    editor = Account(namespace, "editor")
    kubectl("create", "rolebinding", "editor-edit", "--clusterrole=edit", f"--serviceaccount={namespace}:editor",
            "-n", namespace)
    patch_status = Request("patch", "pods", "status", where=OWN)
    # kube-controller-manager fills in the aggregated `edit` role: wait until it lets pods be patched.
    wait_for(lambda: can_i(kubectl, cluster, editor, Request("patch", "pods", where=OWN), namespace),
             "the edit role to be aggregated", 30)
    assert not can_i(kubectl, cluster, editor, patch_status, namespace)
    bind_set_image_role(kubectl, editor)
    wait_for(lambda: can_i(kubectl, cluster, editor, patch_status, namespace), "the set-image role to apply", 10)
