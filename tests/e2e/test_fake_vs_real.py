"""The API fake (tests/webhook/fake_apiserver.py) beside a real kube-apiserver: the same scenarios, the same answers.

Each scenario is a sequence of raw HTTP requests (the wire, as the `kubernetes` client sends it)
run once against the fake and once against the real server, in a namespace of the same name; what
is observed at each step must be equal: the status code, a Status's reason, message and details,
the fields of an answered object the step names, how resourceVersion moved (up, or not at all),
what a list holds and what a watch delivers (event types, names, labels, resourceVersions relative
to the writes). Every scenario also pins its status codes, so that agreement on nothing cannot pass.

What the fake says it does not model (server-side apply and managedFields, authentication,
admission, graceful deletion of a running pod...) is not compared here; see its module docstring.
Nor is a watch from a resourceVersion older than the server's history: the real answer depends on
when etcd was last compacted (every 5 minutes), so it is a replay on a young cluster and a 410
later, where the fake gives 410 (or a replay after `compact()`). Where the two disagreed, the fake
was fixed (see git log for each fix).
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pytest

from tests.e2e.cluster import Cluster
from tests.webhook.fake_apiserver import FakeApiServer

SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
OPT_OUT = {"fieldwarden.io/admission": "disabled"}  # fieldwarden's own webhooks, if installed, leave it alone
Obj = dict[str, Any]


@dataclass
class Wire:
    """A raw client for one API server: requests and watches, JSON in and out."""

    url: str
    context: ssl.SSLContext | None = None

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        address = urllib.parse.urlsplit(self.url)
        host, port = address.hostname or "127.0.0.1", address.port
        if self.context is not None:
            return http.client.HTTPSConnection(host, port, context=self.context, timeout=timeout)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def __call__(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
                 **query: str) -> tuple[int, Any]:
        connection = self._connection(10)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        target = f"{path}?{urllib.parse.urlencode(query)}" if query else path
        try:
            connection.request(method, target, body=data, headers=headers)
            reply = connection.getresponse()
            raw = reply.read()
        finally:
            connection.close()
        try:
            return reply.status, json.loads(raw) if raw else None
        except ValueError:
            return reply.status, {"text": raw.decode(errors="replace"), "type": reply.getheader("Content-Type")}

    def watch(self, path: str, count: int, **query: str) -> tuple[int, list[Obj]]:
        """The first `count` events of a watch (or fewer, if it ends within 5 s), as (status, events)."""
        connection = self._connection(8)
        events: list[Obj] = []
        try:
            connection.request("GET", f"{path}?{urllib.parse.urlencode({'watch': '1', **query})}",
                               headers={"Accept": "application/json"})
            reply = connection.getresponse()
            if reply.status != 200:
                return reply.status, [json.loads(reply.read())]
            while len(events) < count:
                line = reply.readline()
                if not line:
                    break
                events.append(json.loads(line))
        except TimeoutError:
            pass
        finally:
            connection.close()
        return 200, events


# --- what is compared -------------------------------------------------------------------------------


class Log:
    """Observations of a scenario, one per step; resourceVersions are told relative to the scenario's own writes."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, Any]] = []
        self.codes: list[int] = []
        self.versions: dict[str, str] = {}  # resourceVersion -> the step that produced it

    def version(self, step: str, value: str | None) -> str | None:
        """A name for a resourceVersion: the step that first answered it."""
        if value is None:
            return None
        return self.versions.setdefault(value, step)

    def answer(self, step: str, reply: tuple[int, Any], *fields: str) -> Any:
        """Record `reply`: code, and a Status's reason/message/details, or the named fields of the object."""
        code, body = reply
        self.codes.append(code)
        seen: Obj = {"code": code}
        if isinstance(body, dict) and body.get("kind") == "Status":
            seen.update({k: body.get(k) for k in ("status", "reason", "message", "details")})
            seen["message"] = first_line(seen["message"])
            details = seen["details"] = dict(seen["details"] or {})
            if "uid" in details:
                details["uid"] = "(the object's)"
            for cause in details.get("causes") or []:
                cause["message"] = first_line(cause.get("message"))
        elif isinstance(body, dict) and "text" in body:
            seen.update(body)
        elif isinstance(body, dict):
            for path in fields:
                seen[path] = pick(body, path)
            if "metadata" in body and "resourceVersion" in body["metadata"]:
                seen["resourceVersion"] = self.version(step, body["metadata"]["resourceVersion"])
        self.steps.append((step, seen))
        return body


def first_line(message: Any) -> Any:
    """A message without what follows its first line (ValidatePodUpdate's Go cmp.Diff, which the fake only
    sketches), and without the stored object's own uid or resourceVersion (a delete precondition's)."""
    if not isinstance(message, str):
        return message
    return re.sub(r"in record \([^)]*\)", "in record (the object's)", message.split("\n", 1)[0])


def pick(obj: Any, path: str) -> Any:
    """`a.b.0.c` of `obj` (None where missing)."""
    for part in path.split("."):
        if isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        elif isinstance(obj, dict):
            obj = obj.get(part)
        else:
            return None
    return obj


def pod(name: str, labels: Obj | None = None, image: str = "nginx:1.25") -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "app", "image": image}]}}


# --- the scenarios ------------------------------------------------------------------------------------

Scenario = Callable[[Wire, str, Log], None]


def pod_writes_preconditions_and_validation(api: Wire, ns: str, log: Log) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    created = log.answer("create", api("POST", pods, pod("web", {"app": "web"})), "metadata.generation",
                         "status.phase", "status.qosClass", "spec.restartPolicy", "spec.containers.0.imagePullPolicy")
    current = created["metadata"]["resourceVersion"]
    log.answer("get missing", api("GET", f"{pods}/missing"))
    log.answer("exists", api("POST", pods, pod("web")))
    log.answer("stale", api("PATCH", f"{pods}/web", {"metadata": {"resourceVersion": "1"}, "spec": {
        "containers": [{"name": "app", "image": "nginx:2"}]}}, SMP))
    log.answer("image", api("PATCH", f"{pods}/web", {"metadata": {"resourceVersion": current}, "spec": {
        "containers": [{"name": "app", "image": "nginx:2"}]}}, SMP), "metadata.generation", "spec.containers.0.image")
    log.answer("no-op", api("PATCH", f"{pods}/web", {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}},
                            SMP), "metadata.generation")
    log.answer("json patch", api("PATCH", f"{pods}/web", [
        {"op": "test", "path": "/metadata/labels/app", "value": "web"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:3"}], JSON_PATCH),
        "spec.containers.0.image")
    log.answer("json patch test fails", api("PATCH", f"{pods}/web", [
        {"op": "test", "path": "/metadata/labels/app", "value": "x"}], JSON_PATCH))
    log.answer("merge removes a label", api("PATCH", f"{pods}/web", {"metadata": {"labels": {"app": None, "new": "1"}}},
                                            MERGE), "metadata.labels")
    log.answer("other spec field", api("PATCH", f"{pods}/web", {"spec": {"activeDeadlineSeconds": 60,
                                                                         "restartPolicy": "Never"}}, SMP))
    log.answer("container removed", api("PATCH", f"{pods}/web", {"spec": {"containers": [
        {"name": "app", "$patch": "delete"}]}}, SMP))
    log.answer("empty image", api("PATCH", f"{pods}/web", {"spec": {"containers": [{"name": "app", "image": ""}]}},
                                  SMP))
    log.answer("deadline", api("PATCH", f"{pods}/web", {"spec": {"activeDeadlineSeconds": 60}}, MERGE),
               "spec.activeDeadlineSeconds", "metadata.generation")
    log.answer("delete", api("DELETE", f"{pods}/web", {"apiVersion": "v1", "kind": "DeleteOptions",
                                                        "gracePeriodSeconds": 0}), "metadata.name",
               "metadata.deletionGracePeriodSeconds")
    log.answer("deleted", api("GET", f"{pods}/web"))


def status_subresource(api: Wire, ns: str, log: Log) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    log.answer("create", api("POST", pods, pod("web")), "status.phase")
    log.answer("via status", api("PATCH", f"{pods}/web/status", {
        "metadata": {"labels": {"seen": "yes"}},
        "spec": {"containers": [{"name": "app", "image": "evil:1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "InPlaceUpdateReady", "status": "False",
                                                        "reason": "Draining"}]}}, SMP),
        "spec.containers.0.image", "status.phase", "metadata.labels", "metadata.generation")
    log.answer("condition merged by type", api("PATCH", f"{pods}/web/status", {
        "status": {"conditions": [{"type": "InPlaceUpdateReady", "status": "True"}]}}, SMP), "status.conditions")
    log.answer("via main", api("PATCH", f"{pods}/web", {"status": {"phase": "Failed"}}, MERGE), "status.phase")
    log.answer("get status", api("GET", f"{pods}/web/status"), "kind", "status.phase")


def lists_and_selectors(api: Wire, ns: str, log: Log) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    for name, labels in (("web-1", {"app": "web", "tier": "front"}), ("web-2", {"app": "web"}),
                         ("api-1", {"app": "api"})):
        log.answer(f"create {name}", api("POST", pods, pod(name, labels)))
    for query in ({"labelSelector": "app=web"}, {"labelSelector": "app==web"}, {"labelSelector": "app!=web"},
                  {"labelSelector": "app in (web, api),tier"}, {"labelSelector": "app notin (web),!tier"},
                  {"fieldSelector": "metadata.name=web-2"},
                  {"fieldSelector": f"metadata.name!=web-2,metadata.namespace={ns}"},
                  {"fieldSelector": "status.phase=Pending"}, {"fieldSelector": "spec.nodeName="},
                  {"fieldSelector": "spec.color=red"}, {"labelSelector": "app in web"}):
        code, listed = api("GET", pods, **query)
        log.codes.append(code)
        if code == 200:
            items = listed["items"]
            seen: Any = (listed["kind"], listed["apiVersion"], sorted(i["metadata"]["name"] for i in items),
                         {key for i in items for key in ("kind", "apiVersion") if key in i})
        else:
            seen = {k: listed.get(k) for k in ("code", "reason", "message")}
        log.steps.append((json.dumps(query), seen))
    log.answer("one", api("GET", f"{pods}/web-1"), "kind", "apiVersion")


def watch_events(api: Wire, ns: str, log: Log) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    log.answer("a", api("POST", pods, pod("a", {"app": "web"})))
    log.answer("b", api("POST", pods, pod("b", {"app": "api"})))
    code, listed = api("GET", pods, labelSelector="app=web")
    log.codes.append(code)
    start = listed["metadata"]["resourceVersion"]
    log.answer("a leaves", api("PATCH", f"{pods}/a", {"metadata": {"labels": {"app": "old"}}}, SMP))
    log.answer("b enters", api("PATCH", f"{pods}/b", {"metadata": {"labels": {"app": "web"}}}, SMP))
    log.answer("b changes", api("PATCH", f"{pods}/b", {"metadata": {"annotations": {"note": "x"}}}, MERGE))
    log.answer("a changes unseen", api("PATCH", f"{pods}/a", {"metadata": {"annotations": {"note": "x"}}}, MERGE))
    log.answer("b deleted", api("DELETE", f"{pods}/b", {"apiVersion": "v1", "kind": "DeleteOptions",
                                                        "gracePeriodSeconds": 0}))

    def events(step: str, reply: tuple[int, list[Obj]]) -> None:
        code, delivered = reply
        log.codes.append(code)
        log.steps.append((step, [(e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"].get("labels"),
                                  log.version(step, e["object"]["metadata"].get("resourceVersion")))
                                 for e in delivered]))

    events("from the list", api.watch(pods, 5, labelSelector="app=web", resourceVersion=start, timeoutSeconds="3"))
    events("from now", api.watch(pods, 1, labelSelector="app=old", timeoutSeconds="2"))
    events("from 0", api.watch(pods, 1, labelSelector="app=old", resourceVersion="0", timeoutSeconds="2"))
    # No bookmark on a short watch with nothing to say (the real server's come about once a minute).
    code, delivered = api.watch(pods, 3, resourceVersion=start, labelSelector="app=none", allowWatchBookmarks="true",
                                timeoutSeconds="3")
    log.codes.append(code)
    log.steps.append(("bookmarks", [(e["type"], e["object"]["metadata"]) for e in delivered]))


def leases(api: Wire, ns: str, log: Log) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    created = log.answer("create", api("POST", path, body), "kind", "spec.holderIdentity")
    log.answer("exists", api("POST", path, body))
    read = log.answer("read", api("GET", f"{path}/leader"), "spec")
    read["spec"]["holderIdentity"] = "b"
    log.answer("replace", api("PUT", f"{path}/leader", read), "spec.holderIdentity")
    read["spec"]["holderIdentity"] = "c"  # still carries the old resourceVersion
    log.answer("stale", api("PUT", f"{path}/leader", read))
    del read["metadata"]["resourceVersion"]
    log.answer("unconditional", api("PUT", f"{path}/leader", read))
    log.answer("missing", api("GET", f"{path}/nobody"))
    log.answer("put creates", api("PUT", f"{path}/fresh", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                                           "metadata": {"name": "fresh"},
                                                           "spec": {"holderIdentity": "a"}}), "kind")
    log.answer("delete", api("DELETE", f"{path}/leader"))
    code, listed = api("GET", path)
    log.codes.append(code)
    log.steps.append(("list", sorted(i["metadata"]["name"] for i in listed["items"])))
    assert created["metadata"]["uid"] and created["metadata"]["creationTimestamp"]


def request_errors(api: Wire, ns: str, log: Log) -> None:
    pods = f"/api/v1/namespaces/{ns}/pods"
    log.answer("create", api("POST", pods, pod("web")))
    log.answer("patch as plain JSON", api("PATCH", f"{pods}/web", {"metadata": {}}, "application/json"))
    log.answer("patch as text", api("PATCH", f"{pods}/web", {"metadata": {}}, "text/plain"))
    log.answer("delete with another resourceVersion", api("DELETE", f"{pods}/web", {
        "apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"resourceVersion": "1"}}))
    log.answer("merge patch not an object", api("PATCH", f"{pods}/web", [1], MERGE))
    log.answer("strategic merge patch not an object", api("PATCH", f"{pods}/web", [1], SMP))
    log.answer("create with a resourceVersion", api("POST", pods, {**pod("x"), "metadata": {"name": "x",
                                                                                           "resourceVersion": "5"}}))
    log.answer("create in another namespace", api("POST", pods, {**pod("y"), "metadata": {"name": "y",
                                                                                         "namespace": "elsewhere"}}))
    log.answer("create without a name", api("POST", pods, {**pod("z"), "metadata": {}}))
    log.answer("put under another name", api("PUT", f"{pods}/web", pod("other")))
    log.answer("put a missing pod", api("PUT", f"{pods}/nobody", pod("nobody")))
    log.answer("resourceVersion not a number", api("PATCH", f"{pods}/web", {"metadata": {"resourceVersion": "abc"}},
                                                   MERGE))
    log.answer("delete with another uid", api("DELETE", f"{pods}/web", {
        "apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}))
    log.answer("qosClass through status", api("PATCH", f"{pods}/web/status", {"status": {"qosClass": "Guaranteed"}},
                                              MERGE))
    log.answer("dry-run create", api("POST", pods, pod("dry"), dryRun="All"), "metadata.name", "status.phase")
    log.answer("dry-run create not stored", api("GET", f"{pods}/dry"))
    log.answer("dry-run patch", api("PATCH", f"{pods}/web", {"metadata": {"labels": {"d": "1"}}}, MERGE, dryRun="All"),
               "metadata.labels")
    log.answer("dry-run patch not stored", api("GET", f"{pods}/web"), "metadata.labels")
    log.answer("a group not served", api("GET", "/apis/nothing.example.com/v1/things"))
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    log.answer("lease with a negative duration", api("POST", leases, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "bad"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": -1}}))


SCENARIOS: dict[str, tuple[Scenario, list[int]]] = {
    "request errors": (request_errors, [201, 415, 415, 409, 400, 400, 500, 400, 422, 400, 404, 500, 409, 422, 201, 404, 200, 200,
                                        404, 422]),
    "pod writes, preconditions and validation": (pod_writes_preconditions_and_validation,
                                                 [201, 404, 409, 409, 200, 200, 200, 422, 200, 422, 422, 422, 200,
                                                  200, 404]),
    "the status subresource": (status_subresource, [201, 200, 200, 200, 200]),
    "lists and selectors": (lists_and_selectors, [201, 201, 201] + [200] * 9 + [400, 400, 200]),
    "watch events": (watch_events, [201, 201, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200]),
    "leases": (leases, [201, 409, 200, 200, 409, 422, 404, 201, 200, 200]),
}


@pytest.fixture
def real(cluster: Cluster, namespace: str) -> tuple[Wire, str]:
    cluster.api.request("PATCH", f"/api/v1/namespaces/{namespace}", {"metadata": {"labels": OPT_OUT}},
                        content_type=MERGE)
    assert cluster.pki is not None
    context = ssl.create_default_context(cafile=str(cluster.ca))
    context.load_cert_chain(str(cluster.pki.admin.cert), str(cluster.pki.admin.key))
    return Wire(cluster.url, context), namespace


@pytest.fixture
def fake() -> Iterator[Wire]:
    with FakeApiServer(kubelet=False) as api:
        yield Wire(api.url)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_fake_answers_as_the_real_server_does(name: str, fake: Wire, real: tuple[Wire, str]) -> None:
    scenario, codes = SCENARIOS[name]
    server, namespace = real
    seen = {}
    for side, api in (("real", server), ("fake", fake)):
        log = Log()
        scenario(api, namespace, log)
        assert log.codes == codes, f"{side}: {log.codes}\n{log.steps}"
        seen[side] = log.steps
    differences = [(real_step, fake_step) for real_step, fake_step in zip(seen["real"], seen["fake"])
                   if real_step != fake_step]
    assert differences == [], "\n\n".join(f"real: {r}\nfake: {f}" for r, f in differences)
