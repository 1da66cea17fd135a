"""The TEST FAKE API server (tests/webhook/fake_apiserver.py) behaves as a kube-apiserver does.

Driven through the unchanged `kubernetes` client over HTTP on 127.0.0.1 (and raw HTTP
where the client would hide the wire format). Every wait is bounded: `wait_for_pod` wakes
on store changes, and the only sleeps are the short "nothing happens" windows.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any, Iterator

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.webhook.fake_apiserver import LEASE, POD, FakeApiServer, strategic_merge

NS = "shop"
SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
GATE = "InPlaceUpdateReady"
FAST = 0.02  # seconds the fake kubelet takes to start a pod and to restart a container


def pod(name: str, image: str = "nginx:1.25", labels: dict[str, str] | None = None,
        gates: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": image}]}
    if gates:
        spec["readinessGates"] = [{"conditionType": gate} for gate in gates]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": labels or {}},
            "spec": spec}


def core(api: FakeApiServer) -> client.CoreV1Api:
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=api.url)))


def leases(api: FakeApiServer) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(client.ApiClient(client.Configuration(host=api.url)))


def raw(api: FakeApiServer, method: str, path: str, body: Any = None,
        content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(api.url + path, data=data, method=method, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def failure(call: Any, *args: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as caught:
        call(*args, **kwargs)
    return caught.value.status, json.loads(caught.value.body)


def condition(p: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in p["status"].get("conditions") or [] if c["type"] == kind)


def is_ready(p: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])


def running(p: dict[str, Any]) -> bool:
    return bool(p["status"].get("phase") == "Running")


def container(p: dict[str, Any]) -> dict[str, Any]:
    return dict(p["status"]["containerStatuses"][0])


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    with FakeApiServer(kubelet_start_delay=FAST, kubelet_restart_delay=FAST) as fake:
        yield fake


@pytest.fixture
def quiet() -> Iterator[FakeApiServer]:
    """No kubelet: only the client's writes change pods."""
    with FakeApiServer(kubelet=False) as fake:
        yield fake


# -- list and watch ----------------------------------------------------------------------------


def test_lists_select_by_labels_and_fields_and_omit_item_kinds(quiet: FakeApiServer) -> None:
    v1 = core(quiet)
    for name, labels in (("web-1", {"app": "web", "tier": "front"}), ("web-2", {"app": "web"}), ("api-1", {"app": "api"})):
        v1.create_namespaced_pod(NS, pod(name, labels=labels))
    quiet.add_pod({**pod("other"), "metadata": {"name": "other", "namespace": "elsewhere", "labels": {"app": "web"}}})

    def names(**selectors: str) -> list[str]:
        return sorted(p.metadata.name for p in v1.list_namespaced_pod(NS, **selectors).items)

    assert names(label_selector="app=web") == names(label_selector="app==web") == ["web-1", "web-2"]
    assert names(label_selector="app!=web") == ["api-1"]
    assert names(label_selector="app in (web, api),tier") == ["web-1"]
    assert names(label_selector="app notin (web),!tier") == ["api-1"]
    assert names(field_selector="metadata.name=web-2") == ["web-2"]
    assert names(field_selector="metadata.name!=web-2,metadata.namespace=shop") == ["api-1", "web-1"]
    assert len(v1.list_pod_for_all_namespaces(label_selector="app=web").items) == 3

    code, listed = raw(quiet, "GET", "/api/v1/namespaces/shop/pods?labelSelector=app%3Dweb")
    assert code == 200 and listed["kind"] == "PodList" and listed["apiVersion"] == "v1"
    assert listed["metadata"]["resourceVersion"] == quiet.resource_version
    assert all("kind" not in item and "apiVersion" not in item for item in listed["items"])
    code, one = raw(quiet, "GET", "/api/v1/namespaces/shop/pods/web-1")
    assert (one["apiVersion"], one["kind"]) == ("v1", "Pod")

    code, refused = raw(quiet, "GET", "/api/v1/namespaces/shop/pods?fieldSelector=spec.color%3Dred")
    assert code == 400 and refused["reason"] == "BadRequest" and refused["message"] == "field label not supported: spec.color"


def test_a_selector_watch_turns_leaving_into_deleted_and_entering_into_added(quiet: FakeApiServer) -> None:
    v1 = core(quiet)
    v1.create_namespaced_pod(NS, pod("a", labels={"app": "web"}))
    v1.create_namespaced_pod(NS, pod("b", labels={"app": "api"}))
    listed = v1.list_namespaced_pod(NS, label_selector="app=web")
    assert [p.metadata.name for p in listed.items] == ["a"]

    left = v1.patch_namespaced_pod("a", NS, {"metadata": {"labels": {"app": "old"}}}, _content_type=SMP)
    v1.patch_namespaced_pod("b", NS, {"metadata": {"labels": {"app": "web"}}}, _content_type=SMP)
    v1.patch_namespaced_pod("b", NS, {"metadata": {"annotations": {"note": "x"}}}, _content_type=MERGE)
    v1.patch_namespaced_pod("a", NS, {"metadata": {"annotations": {"note": "x"}}}, _content_type=MERGE)  # unseen
    v1.delete_namespaced_pod("b", NS)

    stream = watch.Watch().stream(v1.list_namespaced_pod, NS, label_selector="app=web",
                                  resource_version=listed.metadata.resource_version, timeout_seconds=2)
    events = [(e["type"], e["raw_object"]) for _, e in zip(range(5), stream)]
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("DELETED", "a"), ("ADDED", "b"), ("MODIFIED", "b"),
                                                                ("MODIFIED", "b"), ("DELETED", "b")]
    # A pod's deletion is graceful: first marked (deletionTimestamp, no grace: it never ran), then gone.
    assert events[3][1]["metadata"]["deletionGracePeriodSeconds"] == 0 and events[3][1]["metadata"]["deletionTimestamp"]
    assert events[4][1]["metadata"]["deletionTimestamp"] == events[3][1]["metadata"]["deletionTimestamp"]
    # The pod that left comes with its previous content, at the resourceVersion of the change.
    assert events[0][1]["metadata"]["labels"] == {"app": "web"}
    assert events[0][1]["metadata"]["resourceVersion"] == left.metadata.resource_version

    # Without a resourceVersion: synthetic ADDED for what matches now.
    fresh = watch.Watch().stream(v1.list_namespaced_pod, NS, label_selector="app=old", timeout_seconds=1)
    assert [(e["type"], e["object"].metadata.name) for _, e in zip(range(1), fresh)] == [("ADDED", "a")]


def test_watching_pods_from_a_compacted_resource_version_is_gone(quiet: FakeApiServer) -> None:
    v1 = core(quiet)
    old = v1.create_namespaced_pod(NS, pod("a")).metadata.resource_version
    v1.patch_namespaced_pod("a", NS, {"metadata": {"labels": {"x": "y"}}}, _content_type=SMP)
    quiet.compact()
    with pytest.raises(ApiException) as gone:
        for _ in watch.Watch().stream(v1.list_namespaced_pod, NS, resource_version=old, timeout_seconds=2):
            pass
    assert gone.value.status == 410


# -- patches, preconditions, validation ---------------------------------------------------------


def test_smp_on_conditions_merges_by_type_and_leaves_ready_to_the_kubelet(api: FakeApiServer) -> None:
    v1 = core(api)
    v1.create_namespaced_pod(NS, pod("web", gates=(GATE,)))
    before = api.wait_for_pod(NS, "web", running)
    assert condition(before, "Ready")["reason"] == "ReadinessGatesNotReady"

    patched = v1.patch_namespaced_pod_status(
        "web", NS, {"status": {"conditions": [{"type": GATE, "status": "False", "reason": "Draining"}]}},
        _content_type=SMP).to_dict()
    types = [c["type"] for c in patched["status"]["conditions"]]
    assert sorted(types) == sorted(["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                    "PodScheduled", GATE])
    ready_before = condition(before, "Ready")
    ready_after = next(c for c in patched["status"]["conditions"] if c["type"] == "Ready")
    assert (ready_after["status"], ready_after["reason"]) == (ready_before["status"], ready_before["reason"])

    v1.patch_namespaced_pod_status("web", NS, {"status": {"conditions": [{"type": GATE, "status": "True"}]}},
                                   _content_type=SMP)
    after = api.wait_for_pod(NS, "web", is_ready)  # the kubelet recomputed Ready
    assert [c["type"] for c in after["status"]["conditions"]].count(GATE) == 1
    assert condition(after, GATE) == {"type": GATE, "status": "True", "reason": "Draining",  # merged, not replaced
                                      "lastProbeTime": None, "lastTransitionTime": None}  # (Go's zero times)
    assert all(GATE not in w.what for w in api.kubelet.writes)


def test_each_endpoint_ignores_the_other_half_of_the_pod(quiet: FakeApiServer) -> None:
    v1 = core(quiet)
    v1.create_namespaced_pod(NS, pod("web"))
    via_status = v1.patch_namespaced_pod_status(
        "web", NS, {"metadata": {"labels": {"seen": "yes"}}, "spec": {"containers": [{"name": "app", "image": "evil:1"}]},
                    "status": {"phase": "Running"}}, _content_type=SMP)
    assert via_status.spec.containers[0].image == "nginx:1.25" and via_status.status.phase == "Running"
    assert via_status.metadata.labels == {"seen": "yes"}  # podStatusStrategy keeps metadata other than ownerReferences
    via_main = v1.patch_namespaced_pod("web", NS, {"status": {"phase": "Failed"}}, _content_type=MERGE)
    assert via_main.status.phase == "Running"


def test_resource_version_is_a_precondition_and_no_op_patches_change_nothing(quiet: FakeApiServer) -> None:
    v1 = core(quiet)
    created = v1.create_namespaced_pod(NS, pod("web"))
    current = created.metadata.resource_version
    assert created.metadata.generation is None and created.status.phase == "Pending"  # v1.32: pods have none

    code, body = failure(v1.patch_namespaced_pod, "web", NS,
                         {"metadata": {"resourceVersion": "1"}, "spec": {"containers": [{"name": "app", "image": "nginx:2"}]}},
                         _content_type=SMP)
    assert code == 409 and body["reason"] == "Conflict" and body["details"] == {"name": "web", "kind": "pods"}
    assert body["message"] == ('Operation cannot be fulfilled on pods "web": the object has been modified; '
                               "please apply your changes to the latest version and try again")

    updated = v1.patch_namespaced_pod("web", NS, {"metadata": {"resourceVersion": current},
                                                  "spec": {"containers": [{"name": "app", "image": "nginx:2"}]}},
                                      _content_type=SMP)
    assert int(updated.metadata.resource_version) > int(current) and updated.metadata.generation is None

    events_before = quiet.resource_version
    same = v1.patch_namespaced_pod("web", NS, {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}},
                                   _content_type=SMP)
    assert same.metadata.resource_version == updated.metadata.resource_version == quiet.resource_version == events_before


def test_patch_types_and_their_failures(quiet: FakeApiServer) -> None:
    v1 = core(quiet)
    v1.create_namespaced_pod(NS, pod("web", labels={"app": "web"}))
    ops = [{"op": "test", "path": "/metadata/labels/app", "value": "web"},
           {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:2"}]
    assert v1.patch_namespaced_pod("web", NS, ops, _content_type=JSON_PATCH).spec.containers[0].image == "nginx:2"

    code, body = failure(v1.patch_namespaced_pod, "web", NS, [{"op": "test", "path": "/metadata/labels/app", "value": "x"}],
                         _content_type=JSON_PATCH)
    assert (code, body["reason"], body["details"]) == (422, "Invalid", {})
    assert body["message"] == "the server rejected our request due to an error in our request"

    code, body = raw(quiet, "PATCH", "/api/v1/namespaces/shop/pods/web", {"metadata": {}}, content_type="application/json")
    assert code == 415 and body["reason"] == "UnsupportedMediaType"
    assert body["message"] == "415: Unsupported Media Type"  # as kube-apiserver v1.32 answers (tests/e2e/test_fake_vs_real.py)

    patched = v1.patch_namespaced_pod("web", NS, {"metadata": {"labels": {"app": None, "new": "1"}}}, _content_type=MERGE)
    assert patched.metadata.labels == {"new": "1"}

    code, body = failure(v1.read_namespaced_pod, "missing", NS)
    assert (code, body["reason"], body["message"]) == (404, "NotFound", 'pods "missing" not found')
    assert body["details"] == {"name": "missing", "kind": "pods"}


def test_strategic_merge_keys_and_directives(quiet: FakeApiServer) -> None:
    merged = strategic_merge(
        {"spec": {"containers": [{"name": "app", "image": "a:1", "env": [{"name": "A", "value": "1"}, {"name": "C"}]},
                                 {"name": "side", "image": "b:1"}], "tolerations": [{"key": "x"}]},
         "metadata": {"labels": {"keep": "1", "drop": "1"}, "finalizers": ["f1"]}},
        {"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}, {"name": "C", "$patch": "delete"}]}],
                  "tolerations": [{"key": "y"}]},
         "metadata": {"labels": {"drop": None}, "finalizers": ["f2"]}})
    assert merged["spec"]["containers"] == [{"name": "app", "image": "a:1", "env": [{"name": "A", "value": "1"},
                                                                                    {"name": "B", "value": "2"}]},
                                            {"name": "side", "image": "b:1"}]
    assert merged["spec"]["tolerations"] == [{"key": "y"}]  # no merge key: replaced
    assert merged["metadata"] == {"labels": {"keep": "1"}, "finalizers": ["f1", "f2"]}

    v1 = core(quiet)
    two = pod("web")
    two["spec"]["containers"].append({"name": "side", "image": "busybox:1", "env": [{"name": "A", "value": "1"}]})
    v1.create_namespaced_pod(NS, two)
    patched = v1.patch_namespaced_pod("web", NS, {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}},
                                      _content_type=SMP)
    assert [(c.name, c.image) for c in patched.spec.containers] == [("app", "nginx:1.25"), ("side", "busybox:2")]
    assert [e.name for e in patched.spec.containers[1].env] == ["A"]

    code, body = failure(v1.patch_namespaced_pod, "web", NS, {"spec": {"containers": [
        {"name": "side", "env": [{"name": "B", "value": "2"}]}]}}, _content_type=SMP)
    assert code == 422 and "spec.containers[1].env" in body["message"]  # only images may change

    code, body = failure(v1.patch_namespaced_pod, "web", NS,
                         {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}, _content_type=SMP)
    assert code == 422 and "pod updates may not add or remove containers" in body["message"]
    assert body["details"]["causes"] == [{"reason": "FieldValueForbidden", "field": "spec.containers",
                                          "message": "Forbidden: pod updates may not add or remove containers"}]

    code, body = failure(v1.patch_namespaced_pod, "web", NS, {"spec": {"containers": [{"name": "app", "image": ""}]}},
                         _content_type=SMP)
    assert code == 422 and body["message"] == 'Pod "web" is invalid: spec.containers[0].image: Required value'

    code, body = failure(v1.patch_namespaced_pod, "web", NS, {"spec": {"restartPolicy": "Never"}}, _content_type=SMP)
    assert code == 422 and body["message"].startswith(
        'Pod "web" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,')


# -- leases ------------------------------------------------------------------------------------


def test_lease_create_get_replace_and_conflicts(quiet: FakeApiServer) -> None:
    coordination = leases(quiet)
    body = client.V1Lease(metadata=client.V1ObjectMeta(name="leader", namespace=NS),
                          spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15))
    created = coordination.create_namespaced_lease(NS, body)
    assert created.metadata.uid and created.metadata.creation_timestamp and created.metadata.resource_version

    code, exists = failure(coordination.create_namespaced_lease, NS, body)
    assert (code, exists["reason"]) == (409, "AlreadyExists")
    assert exists["message"] == 'leases.coordination.k8s.io "leader" already exists'

    read = coordination.read_namespaced_lease("leader", NS)
    read.spec.holder_identity = "b"
    replaced = coordination.replace_namespaced_lease("leader", NS, read)
    assert replaced.spec.holder_identity == "b"
    assert int(replaced.metadata.resource_version) > int(read.metadata.resource_version)

    read.spec.holder_identity = "c"  # still carries the old resourceVersion
    code, stale = failure(coordination.replace_namespaced_lease, "leader", NS, read)
    assert (code, stale["reason"]) == (409, "Conflict")
    assert stale["message"].startswith('Operation cannot be fulfilled on leases.coordination.k8s.io "leader": '
                                       "the object has been modified")

    read.metadata.resource_version = None  # Lease: AllowUnconditionalUpdate is false
    code, unconditional = failure(coordination.replace_namespaced_lease, "leader", NS, read)
    assert (code, unconditional["reason"]) == (422, "Invalid")
    assert unconditional["message"] == ('leases.coordination.k8s.io "leader" is invalid: metadata.resourceVersion: '
                                        "Invalid value: 0x0: must be specified for an update")

    code, missing = failure(coordination.read_namespaced_lease, "nobody", NS)
    assert (code, missing["message"]) == (404, 'leases.coordination.k8s.io "nobody" not found')
    code, put_created = raw(quiet, "PUT", "/apis/coordination.k8s.io/v1/namespaces/shop/leases/fresh",
                            {"metadata": {"name": "fresh"}, "spec": {"holderIdentity": "a"}})
    assert code == 201 and put_created["kind"] == "Lease"  # AllowCreateOnUpdate

    deleted = coordination.delete_namespaced_lease("leader", NS)  # a dict with client 37, V1Status before
    answer = deleted if isinstance(deleted, dict) else client.ApiClient().sanitize_for_serialization(deleted)
    assert answer["status"] == "Success" and answer["details"]["name"] == "leader"
    assert answer["details"]["group"] == "coordination.k8s.io" and answer["details"]["kind"] == "leases"
    assert [c.collection for c in quiet.writes(path_contains="/leases/leader")] == [LEASE] * 4
    assert len(coordination.list_namespaced_lease(NS).items) == 1


# -- the kubelet -----------------------------------------------------------------------------------


def test_an_image_patch_restarts_the_container_with_a_new_image_id(api: FakeApiServer) -> None:
    v1 = core(api)
    v1.create_namespaced_pod(NS, pod("web"))
    started = api.wait_for_pod(NS, "web", is_ready)
    first = container(started)
    assert first["imageID"].startswith("docker.io/library/nginx@sha256:") and len(first["imageID"].split(":")[-1]) == 64
    assert first["containerID"].startswith("containerd://") and first["restartCount"] == 0
    assert started["spec"]["nodeName"] and started["status"]["podIP"] and started["status"]["qosClass"] == "BestEffort"

    v1.patch_namespaced_pod("web", NS, {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}, _content_type=SMP)
    restarted = api.wait_for_pod(NS, "web", lambda p: container(p)["restartCount"] == 1 and container(p)["ready"])
    second = container(restarted)
    assert second["image"] == "nginx:1.26" and second["imageID"] != first["imageID"]
    assert second["containerID"] != first["containerID"] and is_ready(restarted)
    assert second["lastState"]["terminated"]["containerID"] == first["containerID"]
    # Kubelet writes are no HTTP calls; the client's are.
    assert [c.method for c in api.writes(path_contains="/pods")] == ["POST", "PATCH"]
    assert [w.what for w in api.kubelet.writes_for(NS, "web")][:2] == ["bind", "start"]
    assert "kill app" in [w.what for w in api.kubelet.writes] and "restart app" in [w.what for w in api.kubelet.writes]


def test_a_stalled_kubelet_never_restarts_until_told(api: FakeApiServer) -> None:
    v1 = core(api)
    v1.create_namespaced_pod(NS, pod("web"))
    before = container(api.wait_for_pod(NS, "web", is_ready))
    api.kubelet.set_mode("stall", NS, "web")
    v1.patch_namespaced_pod("web", NS, {"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}}, _content_type=SMP)
    time.sleep(10 * api.kubelet.restart_delay)
    assert container(api.pod(NS, "web")) == before
    api.kubelet.set_mode("normal", NS, "web")
    api.wait_for_pod(NS, "web", lambda p: container(p)["image"] == "nginx:1.26" and container(p)["ready"])


def test_a_pull_error_keeps_the_old_container_reported_and_not_ready(api: FakeApiServer) -> None:
    v1 = core(api)
    v1.create_namespaced_pod(NS, pod("web"))
    before = container(api.wait_for_pod(NS, "web", is_ready))
    api.kubelet.set_mode("pull-error")
    v1.patch_namespaced_pod("web", NS, {"spec": {"containers": [{"name": "app", "image": "nginx:nope"}]}},
                            _content_type=SMP)
    api.wait_for_pod(NS, "web", lambda p: container(p)["state"].get("waiting", {}).get("reason") == "ErrImagePull")
    backoff = api.wait_for_pod(NS, "web",
                               lambda p: container(p)["state"].get("waiting", {}).get("reason") == "ImagePullBackOff")
    now = container(backoff)
    assert not now["ready"] and now["imageID"] == before["imageID"] and now["restartCount"] == 0
    assert condition(backoff, "Ready") | {"lastTransitionTime": None} == {
        "type": "Ready", "status": "False", "lastProbeTime": None, "lastTransitionTime": None,
        "reason": "ContainersNotReady", "message": "containers with unready status: [app]"}


def test_a_crashing_image_runs_with_its_new_image_id_but_never_gets_ready(api: FakeApiServer) -> None:
    v1 = core(api)
    v1.create_namespaced_pod(NS, pod("web"))
    before = container(api.wait_for_pod(NS, "web", is_ready))
    api.kubelet.set_mode("crash", NS, "web")
    v1.patch_namespaced_pod("web", NS, {"spec": {"containers": [{"name": "app", "image": "nginx:broken"}]}},
                            _content_type=SMP)
    crashed = container(api.wait_for_pod(
        NS, "web", lambda p: container(p)["state"].get("waiting", {}).get("reason") == "CrashLoopBackOff"))
    assert crashed["imageID"] != before["imageID"] and crashed["imageID"] == api.kubelet.resolve("nginx:broken")
    assert not crashed["ready"] and crashed["lastState"]["terminated"]["exitCode"] == 1
    time.sleep(10 * api.kubelet.restart_delay)
    assert not is_ready(api.pod(NS, "web"))


def test_two_tags_of_one_digest_keep_the_image_id(api: FakeApiServer) -> None:
    v1 = core(api)
    api.kubelet.alias("nginx:stable", "nginx:1.25")
    v1.create_namespaced_pod(NS, pod("web"))
    before = container(api.wait_for_pod(NS, "web", is_ready))
    v1.patch_namespaced_pod("web", NS, {"spec": {"containers": [{"name": "app", "image": "nginx:stable"}]}},
                            _content_type=SMP)
    after = container(api.wait_for_pod(NS, "web", lambda p: container(p)["restartCount"] == 1 and container(p)["ready"]))
    assert after["image"] == "nginx:stable" and after["imageID"] == before["imageID"]
    assert after["containerID"] != before["containerID"]


def test_ready_follows_every_readiness_gate(api: FakeApiServer) -> None:
    v1 = core(api)
    v1.create_namespaced_pod(NS, pod("web", gates=("A", "B")))
    started = api.wait_for_pod(NS, "web", running)
    assert condition(started, "Ready")["message"] == ('corresponding condition of pod readiness gate "A" does not exist., '
                                                      'corresponding condition of pod readiness gate "B" does not exist.')
    assert condition(started, "ContainersReady")["status"] == "True"

    def gates(a: str, b: str) -> None:
        v1.patch_namespaced_pod_status("web", NS, {"status": {"conditions": [
            {"type": "A", "status": a}, {"type": "B", "status": b}]}}, _content_type=SMP)

    gates("True", "False")
    half = api.wait_for_pod(NS, "web", lambda p: "B" in (condition(p, "Ready").get("message") or "")
                            and "A" not in condition(p, "Ready")["message"])
    assert condition(half, "Ready")["message"] == 'the status of pod readiness gate "B" is not "True", but False'
    assert condition(half, "Ready")["reason"] == "ReadinessGatesNotReady"
    gates("True", "True")
    api.wait_for_pod(NS, "web", is_ready)
    gates("False", "True")
    api.wait_for_pod(NS, "web", lambda p: not is_ready(p))


def test_a_pod_added_without_start_is_left_alone(api: FakeApiServer) -> None:
    stored = api.add_pod({**pod("elsewhere"), "status": {"phase": "Running"}}, start=False)
    assert "generation" not in stored["metadata"] and stored["spec"]["restartPolicy"] == "Always"
    api.add_pod(pod("here"))
    api.wait_for_pod(NS, "here", is_ready)
    assert api.pod(NS, "elsewhere")["status"] == {"phase": "Running"}
    assert api.kubelet.writes_for(NS, "elsewhere") == [] and not api.writes()
    assert [p["metadata"]["name"] for p in api.pods(NS)] == ["elsewhere", "here"]
    assert api.get(POD, NS, "here")["kind"] == "Pod"


def test_discovery_and_read_only_secrets(quiet: FakeApiServer) -> None:
    listed = client.CoreV1Api(client.ApiClient(client.Configuration(host=quiet.url))).get_api_resources()
    names = {resource.name for resource in listed.resources}
    assert {"pods", "pods/status", "secrets"} <= names
    quiet.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "tls", "namespace": "shop"},
                 "type": "kubernetes.io/tls", "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}})
    secret = core(quiet).read_namespaced_secret("tls", "shop")
    assert secret.data == {"tls.crt": "Y2VydA==", "tls.key": "a2V5"} and secret.metadata.resource_version
    code, body = failure(core(quiet).read_namespaced_secret, "other", "shop")
    assert code == 404 and body["reason"] == "NotFound" and body["message"] == 'secrets "other" not found'
    code, body = failure(core(quiet).delete_namespaced_secret, "tls", "shop")
    assert code == 405
