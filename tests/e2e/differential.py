"""The same admission cases through fieldwarden's webhook and through its exported policies.

    with Variant(cluster, folder, "fw401-default", config) as variant:   # webhook + policies, one config
        outcomes = variant.run(cases)   # {case name: (webhook's Outcome, policies' Outcome)}

A `Case` is an AdmissionReview request as the webhook's tests build it (tests/fixtures/admission and
the rule tests' variants of it), replayed as the API calls that make the API server send it: the
old object created (and its status written) first, then the request itself — a create, a replace,
a subresource write, a delete, server dry runs included — in two namespaces: one where fieldwarden's
webhook configurations (the chart's, `clientConfig.url` to a `fieldwarden serve` with the variant's
configuration) apply, one where the exported policies (`fieldwarden export` of the same
configuration, for the harness's Kubernetes) are bound. An `Outcome` is what a user gets: the
status code, the Status message and the warnings (with the API server's wrapping of webhook and
policy messages taken off), the object answered and the object stored, without what the API
server makes per object (uid, resourceVersion, times). Both sides use failurePolicy Fail, so a
policy that cannot be evaluated shows as a refusal instead of passing unnoticed.
"""

from __future__ import annotations

import copy
import http.client
import json
import re
import ssl
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

import yaml

from fieldwarden.policies.config import Settings
from fieldwarden.policies.export.assemble import Scope, export, target
from tests.e2e.cluster import Cluster
from tests.e2e.install import Webhook, local_webhook_configuration
from tests.e2e.processes import wait_for
from tests.helm.chart import render
from tests.webhook.live import clean_environment

Obj = dict[str, Any]
MODE_LABEL = "fieldwarden-e2e/mode"
WEBHOOK, POLICIES = "webhook", "policies"
READY_TIMEOUT = 60.0  # a new policy's params informer (the VPA CRD's) can take ~20 s to start
# What the API server keeps per object, not per request: left out of comparisons.
VOLATILE = ("uid", "resourceVersion", "creationTimestamp", "generation", "selfLink")
TIMES = frozenset({"lastTransitionTime", "lastProbeTime", "lastUpdateTime", "lastHeartbeatTime"})
RESOURCES = {  # (group, kind) -> (version, plural)
    ("", "Pod"): ("v1", "pods"),
    ("", "ReplicationController"): ("v1", "replicationcontrollers"),
    ("apps", "Deployment"): ("v1", "deployments"),
    ("apps", "StatefulSet"): ("v1", "statefulsets"),
    ("apps", "ReplicaSet"): ("v1", "replicasets"),
    ("apps", "DaemonSet"): ("v1", "daemonsets"),
    ("batch", "Job"): ("v1", "jobs"),
    ("batch", "CronJob"): ("v1", "cronjobs"),
    ("autoscaling", "HorizontalPodAutoscaler"): ("v2", "horizontalpodautoscalers"),
    ("autoscaling.k8s.io", "VerticalPodAutoscaler"): ("v1", "verticalpodautoscalers"),
    ("argoproj.io", "Rollout"): ("v1alpha1", "rollouts"),
}
WRAPPERS = (
    (re.compile(r'admission webhook "[^"]+" denied the request: '), "<admission> denied: "),
    (re.compile(r"""(\S+ "[^"]*" is forbidden: )?ValidatingAdmissionPolicy '[^']+' with binding '[^']+' denied """
                r"request: "), "<admission> denied: "),
    (re.compile(r"Validation failed for ValidatingAdmissionPolicy '[^']+' with binding '[^']+': "), ""),
    (re.compile(r'policy "[^"]+" denied request: '), "<admission> denied: "),
)


# -- cases ------------------------------------------------------------------------------------------

@dataclass
class Case:
    """One request as an AdmissionReview names it, and what must exist before it."""

    name: str  # also the object's name in the cluster (a DNS label)
    review: Obj  # request: operation, kind, subResource, dryRun, object, oldObject
    setup: Sequence[Obj] = ()  # HPAs, VPAs, ... created before, in the case's namespace (or their own)
    status: Obj | None = None  # written through the old object's status subresource before the request
    user: str | None = None  # impersonated, with `groups`
    groups: Sequence[str] = ()
    exempt_namespace: bool = False  # sent in the variant's namespace its configuration exempts
    note: str = ""  # where the case comes from


class Outcome(NamedTuple):
    stage: str  # the step that answered last: "request", or the setup step that failed
    status: int
    message: str
    warnings: tuple[str, ...]
    answered: Obj | None  # the object in the answer (a create's, a dry run's)
    stored: Obj | None  # the object stored afterwards (None: none)

    def verdict(self) -> tuple[str, int]:
        return self.stage, self.status


def case_request(review: Obj) -> Obj:
    """The `request` of an AdmissionReview body (or the request itself)."""
    return review["request"] if "request" in review else review


# -- talking to the API server ------------------------------------------------------------------------

class Reply(NamedTuple):
    status: int
    body: Any
    warnings: tuple[str, ...]


class Client:
    """The cluster's admin over HTTPS (one connection a request), optionally impersonating a user."""

    def __init__(self, cluster: Cluster) -> None:
        assert cluster.pki is not None
        self.port = cluster.port
        self.context = ssl.create_default_context(cafile=str(cluster.ca))
        self.context.load_cert_chain(str(cluster.pki.admin.cert), str(cluster.pki.admin.key))

    def call(self, method: str, path: str, body: Any = None, *, query: Mapping[str, str] | None = None,
             content_type: str = "application/json", user: str | None = None, groups: Sequence[str] = ()) -> Reply:
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=30)
        headers = {"Accept": "application/json", "User-Agent": "fieldwarden-e2e-differential"}
        if body is not None:
            headers["Content-Type"] = content_type
        if user is not None:
            headers["Impersonate-User"] = user
        if query:
            path = f"{path}?{urllib.parse.urlencode(query)}"
        try:
            connection.putrequest(method, path)
            for key, value in headers.items():
                connection.putheader(key, value)
            for group in groups if user is not None else ():
                connection.putheader("Impersonate-Group", group)
            data = json.dumps(body).encode() if body is not None else b""
            connection.putheader("Content-Length", str(len(data)))
            connection.endheaders(data)
            reply = connection.getresponse()
            raw = reply.read()
            warnings = tuple(_warning_text(w) for w in reply.headers.get_all("Warning") or ())
        finally:
            connection.close()
        try:
            decoded: Any = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        return Reply(reply.status, decoded, warnings)


def _warning_text(header: str) -> str:
    """`299 - "text"` -> text (http.client reads headers as Latin-1; the API server writes UTF-8)."""
    try:
        header = header.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        pass
    found = re.fullmatch(r'\d{3} \S+ "(.*)"', header.strip(), re.S)
    return found.group(1).replace('\\"', '"').replace("\\\\", "\\") if found else header


def resource_path(group: str, kind: str, namespace: str, name: str | None = None, version: str | None = None) -> str:
    """The path of a kind's objects in `namespace` (its usual version, or `version`)."""
    usual, plural = RESOURCES[(group, kind)]
    version = version or usual
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    path = f"{base}/namespaces/{namespace}/{plural}"
    return f"{path}/{name}" if name else path


def group_of(obj: Obj) -> str:
    return str(obj["apiVersion"]).rpartition("/")[0]


def version_of(obj: Obj) -> str:
    return str(obj["apiVersion"]).rpartition("/")[2]


# -- the replay -----------------------------------------------------------------------------------------

def prepared(obj: Obj, name: str, namespace: str) -> Obj:
    """A copy to send: the case's name and namespace, no server-made metadata, no status."""
    copied = copy.deepcopy(obj)
    meta = copied.setdefault("metadata", {}) or {}
    copied["metadata"] = meta
    for key in (*VOLATILE, "managedFields"):
        meta.pop(key, None)
    if meta.get("name") is None and meta.get("generateName"):
        meta.pop("name", None)
    else:
        meta["name"] = name
    meta["namespace"] = namespace
    copied.pop("status", None)
    return copied


def set_up(client: Client, case: Case, namespace: str) -> Outcome | None:
    """Create what the case needs beforehand (its autoscalers); None, or the outcome of a refusal."""
    for index, obj in enumerate(case.setup):
        placed = obj["metadata"].get("namespace") or namespace
        done = client.call("POST", resource_path(group_of(obj), obj["kind"], placed, version=version_of(obj)), obj)
        if done.status not in (200, 201):
            return _outcome(f"setup {index} {obj['kind']}", done, None)
    return None


def replay(client: Client, case: Case, namespace: str) -> Outcome:
    """Send the case in `namespace` (its setup made already); what the API server answered and stored."""
    request = case_request(case.review)
    operation, sub = request["operation"], request.get("subResource", "")
    new, old = request.get("object"), request.get("oldObject")
    model = new if new is not None and sub != "scale" else old
    group, kind = group_of(model), model["kind"]
    dry = {"dryRun": "All"} if request.get("dryRun") else None
    who = {"user": case.user, "groups": case.groups}
    path = resource_path(group, kind, namespace)
    name = case.name
    if operation == "CREATE":
        body = prepared(new, name, namespace)
        answer = client.call("POST", path, body, query=dry, **who)
        if "generateName" in body["metadata"] and "name" not in body["metadata"] and answer.status in (200, 201):
            name = answer.body["metadata"]["name"]
        return _outcome("request", answer, client.call("GET", f"{path}/{name}"))
    created = client.call("POST", path, prepared(old, name, namespace))
    if created.status not in (200, 201):
        return _outcome("create old object", created, None)
    live = created.body
    if case.status is not None:
        written = client.call("PUT", f"{path}/{name}/status", {**live, "status": case.status})
        if written.status != 200:
            return _outcome("write old status", written, None)
        live = written.body
    version = live["metadata"]["resourceVersion"]
    if operation == "DELETE":
        answer = client.call("DELETE", f"{path}/{name}", query=dry, **who)
    elif sub == "scale":
        scale = {"apiVersion": "autoscaling/v1", "kind": "Scale",
                 "metadata": {"name": name, "namespace": namespace, "resourceVersion": version}, "spec": new["spec"]}
        answer = client.call("PUT", f"{path}/{name}/scale", scale, query=dry, **who)
    else:
        body = prepared(new, name, namespace)
        body["metadata"]["resourceVersion"] = version
        if sub == "status":
            body["status"] = copy.deepcopy(new.get("status") or {})
        suffix = f"/{sub}" if sub else ""
        answer = client.call("PUT", f"{path}/{name}{suffix}", body, query=dry, **who)
    return _outcome("request", answer, client.call("GET", f"{path}/{name}"))


def _outcome(stage: str, answer: Reply, stored: Reply | None) -> Outcome:
    message = ""
    answered: Obj | None = None
    if isinstance(answer.body, dict) and answer.body.get("kind") == "Status":
        message = str(answer.body.get("message", ""))
    elif isinstance(answer.body, dict):
        answered = answer.body
    kept = stored.body if stored is not None and stored.status == 200 else None
    return Outcome(stage, answer.status, message, answer.warnings, answered, kept)


def normalized(outcome: Outcome, namespace: str) -> Outcome:
    """The outcome without what differs by namespace or object identity, or by who said it."""
    def text(value: str) -> str:
        value = value.replace(namespace, "<namespace>")
        for pattern, replacement in WRAPPERS:
            value = pattern.sub(replacement, value)
        return value

    def obj(value: Obj | None) -> Obj | None:
        if value is None:
            return None
        text = json.dumps(value).replace(namespace, "<namespace>")
        meta = value.get("metadata") or {}
        if meta.get("generateName") and meta.get("name"):  # (a name the API server drew at random)
            text = text.replace(json.dumps(meta["name"]), '"<generated>"')
        copied = json.loads(text)
        meta = copied.get("metadata", {})
        for key in VOLATILE:
            meta.pop(key, None)
        for entry in meta.get("managedFields") or ():
            entry.pop("time", None)
        if meta.get("managedFields"):  # the API server orders them by time (in seconds), dropped above
            meta["managedFields"].sort(key=lambda e: json.dumps(e, sort_keys=True))
        return dict(_without_times(copied))

    return Outcome(outcome.stage, outcome.status, text(outcome.message), tuple(text(w) for w in outcome.warnings),
                   obj(outcome.answered), obj(outcome.stored))


def _without_times(value: Any) -> Any:
    """A JSON value without the times the API server stamps (conditions' lastTransitionTime, ...)."""
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


# -- one configuration, both ways ----------------------------------------------------------------------

@dataclass
class Variant:
    """A configuration installed both ways in the cluster: fieldwarden's webhook and its exported policies.

    Namespaces `<name>-webhook` and `<name>-policies` (and `-exempt-` twins, which the configuration
    may exempt), each labelled for one side only; `other` namespaces hold autoscalers a case puts
    elsewhere. `probe(side)` is one request that the side must act on (see `ready`).
    """

    cluster: Cluster
    folder: Path
    name: str
    config: Obj
    extra_rules: Sequence[Obj] = ()  # resource rules the FW403 webhook needs besides the chart's (custom resources)
    extra_objects: Sequence[Obj] = ()  # more cluster-scoped objects for both sides (another mutating policy, say)
    webhook: Webhook | None = None
    objects: list[Obj] = field(default_factory=list)  # what was created cluster-wide, deleted at the end

    def namespace(self, side: str, exempt: bool = False) -> str:
        return f"{self.name}-{'exempt-' if exempt else ''}{side}"

    @property
    def other_namespace(self) -> str:
        return f"{self.name}-other"

    def __enter__(self) -> Variant:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for side in (WEBHOOK, POLICIES):
            for exempt in (False, True):
                self.cluster.ensure_namespace(self.namespace(side, exempt), {MODE_LABEL: f"{self.name}-{side}"})
        self.cluster.ensure_namespace(self.other_namespace)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._start_webhook()
        self._apply(self._webhook_configurations() + self._policies() + [copy.deepcopy(o) for o in self.extra_objects])

    def _start_webhook(self) -> None:
        config = self.folder / "config.yaml"
        config.write_text(yaml.safe_dump(self.config), encoding="utf-8")
        certs = self.folder / "tls"
        certs.mkdir(exist_ok=True)
        (certs / "tls.crt").write_bytes(self.cluster.webhook_cert.read_bytes())
        (certs / "tls.key").write_bytes(self.cluster.webhook_key.read_bytes())
        argv = ["serve", f"--cert-dir={certs}", f"--config={config}", f"--kubeconfig={self.cluster.kubeconfig}",
                "--workers=1", "--log-level=warning"]
        env = clean_environment(self.folder)
        env["NO_PROXY"] = "127.0.0.1,localhost"
        self.webhook = Webhook(argv, self.folder, self.cluster.ca, env).start()

    def _webhook_configurations(self) -> list[Obj]:
        assert self.webhook is not None
        found = []
        for obj in render({"config": self.config}):
            if obj["kind"] not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                continue
            local = local_webhook_configuration(obj, self.webhook.port, self.cluster.ca_bundle)
            local["metadata"] = {"name": f"{obj['metadata']['name']}-{self.name}"}
            for hook in local["webhooks"]:
                hook["failurePolicy"] = "Fail"
                hook["timeoutSeconds"] = 10
                hook["namespaceSelector"]["matchExpressions"].append(
                    {"key": MODE_LABEL, "operator": "In", "values": [f"{self.name}-{WEBHOOK}"]})
                if hook["name"].startswith("autoscaler-ownership"):
                    hook["rules"] += list(self.extra_rules)
            found.append(local)
        return found

    def _policies(self) -> list[Obj]:
        where = target(str(self.cluster.api.get("/version")["gitVersion"]))
        scope = Scope(excluded_namespaces=("kube-system",), failure_policy="Fail", prefix=f"fw-{self.name}")
        found = export(Settings(self.config), where, scope).objects
        for obj in found:
            spec = obj["spec"]
            if obj["kind"].endswith("Binding"):
                spec["matchResources"]["namespaceSelector"]["matchExpressions"].append(
                    {"key": MODE_LABEL, "operator": "In", "values": [f"{self.name}-{POLICIES}"]})
            else:
                spec["failurePolicy"] = "Fail"  # errors show as refusals (the VPA CRD is installed)
        return found

    def _apply(self, objects: Iterable[Obj]) -> None:
        api = self.cluster.api
        for obj in objects:
            path = _cluster_path(obj)
            api.create(path, obj)
            self.objects.append(obj)

    def stop(self) -> None:
        api = self.cluster.api
        for obj in reversed(self.objects):
            api.request("DELETE", f"{_cluster_path(obj)}/{obj['metadata']['name']}")
        self.objects.clear()
        if self.webhook is not None:
            self.webhook.stop()
            self.webhook = None

    def logs(self, lines: int = 25) -> str:
        process = self.webhook.process if self.webhook is not None else None
        return f"----- fieldwarden serve ({self.name}), last {lines} lines:\n{process.tail(lines)}" if process else ""

    # -- running cases --------------------------------------------------------------------------------

    def ready(self, acted: Callable[[str, str], bool]) -> None:
        """Until `acted(side, namespace)` on both sides: a probe request the side must act on was acted on
        (configurations and policies loaded, and the params a probe created seen, with all made before)."""
        for side in (WEBHOOK, POLICIES):
            namespace = self.namespace(side)
            wait_for(lambda: acted(side, namespace), f"the {side} side of {self.name} to act on its probe",
                     READY_TIMEOUT, interval=0.3)

    def set_up(self, client: Client, cases: Sequence[Case]) -> dict[tuple[str, str], Outcome]:
        """Every case's setup on both sides, before the probes (so that seeing the probe's means seeing
        theirs): {(case, side): the refusal} for those the API server refused."""
        refused = {}
        for case in cases:
            for side in (WEBHOOK, POLICIES):
                namespace = self.namespace(side, case.exempt_namespace)
                failed = set_up(client, _placed(case, namespace, self.other_namespace), namespace)
                if failed is not None:
                    refused[(case.name, side)] = failed
        return refused

    def run(self, client: Client, cases: Sequence[Case],
            refused: Mapping[tuple[str, str], Outcome]) -> dict[str, tuple[Outcome, Outcome]]:
        """Each case on both sides, one after the other: {name: (webhook's, policies')}, normalized."""
        found = {}
        for case in cases:
            pair = []
            for side in (WEBHOOK, POLICIES):
                namespace = self.namespace(side, case.exempt_namespace)
                outcome = refused.get((case.name, side)) or replay(client, case, namespace)
                pair.append(normalized(outcome, namespace))
            found[case.name] = (pair[0], pair[1])
        return found


def _placed(case: Case, namespace: str, other: str) -> Case:
    """The case with its setup objects named for it and put in its namespace (or the `other` one)."""
    setup = []
    for index, obj in enumerate(case.setup):
        copied = copy.deepcopy(obj)
        meta = copied["metadata"]
        elsewhere = meta.get("namespace") == "other"
        meta["name"] = f"{case.name}-{index}" + (f"-{namespace}" if elsewhere else "")  # (one `other` for both sides)
        meta["namespace"] = other if elsewhere else namespace
        setup.append(copied)
    return Case(case.name, case.review, setup, case.status, case.user, case.groups, case.exempt_namespace, case.note)


def _cluster_path(obj: Obj) -> str:
    group, version = str(obj["apiVersion"]).rpartition("/")[::2]
    kind = obj["kind"].lower()
    plural = kind[:-1] + "ies" if kind.endswith("policy") else kind + "s"
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    return f"{base}/{plural}"


def differences(outcomes: Mapping[str, tuple[Outcome, Outcome]]) -> list[tuple[str, str, Any, Any]]:
    """(case, aspect, webhook's, policies') for every aspect in which the two sides differ."""
    found = []
    for name, (hook, policy) in outcomes.items():
        for aspect in Outcome._fields:
            mine, theirs = getattr(hook, aspect), getattr(policy, aspect)
            if mine != theirs:
                found.append((name, aspect, mine, theirs))
    return found


def delta(mine: Any, theirs: Any, path: str = "") -> list[str]:
    """The paths where two JSON values differ, each with both values (`spec.replicas: 10 | 20`)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        found = []
        for key in [*mine, *(k for k in theirs if k not in mine)]:
            found += delta(mine.get(key), theirs.get(key), f"{path}.{key}" if path else str(key))
        return found
    if mine == theirs:
        return []
    return [f"{path or '.'}: {show(mine, 200)} | {show(theirs, 200)}"]


def show(value: Any, limit: int = 600) -> str:
    """A value for a report, long ones cut in the middle (a CEL error's point is at the end)."""
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit // 2] + " … " + text[-(limit // 2):]

