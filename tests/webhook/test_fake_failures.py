"""The TEST FAKE's `fail_once`: one chosen request answered with a real server's failure, once.

Driven through the unchanged `kubernetes` client, as the code under test drives it.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.webhook.fake_apiserver import FakeApiServer

NS = "shop"
STATUS_PATH = "/api/v1/namespaces/shop/pods/web/status"
LABEL = {"metadata": {"labels": {"tier": "front"}}}


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    with FakeApiServer(kubelet=False) as fake:
        fake.add_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": NS},
                      "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}, start=False)
        yield fake


def core(api: FakeApiServer) -> client.CoreV1Api:
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=api.url)))


def refused(call: Any, *args: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as caught:
        call(*args)
    return caught.value.status, json.loads(caught.value.body)


@pytest.mark.parametrize(("code", "reason", "message"), [
    (409, "Conflict", 'Operation cannot be fulfilled on pods "web": the object has been modified; '
                      "please apply your changes to the latest version and try again"),
    (500, None, "etcdserver: request timed out"),
    (403, "Forbidden", 'pods "web" is forbidden: User "system:serviceaccount:fake:fake" cannot patch resource '
                       '"pods/status" in API group "" in the namespace "shop"'),
])
def test_the_chosen_request_fails_once_with_the_servers_status_and_changes_nothing(
        api: FakeApiServer, code: int, reason: str | None, message: str) -> None:
    before = api.pod(NS, "web")
    api.fail_once("PATCH", STATUS_PATH, code)
    assert api.failures_pending == [("PATCH", STATUS_PATH, code)]
    pods = core(api)
    assert pods.read_namespaced_pod("web", NS).metadata.name == "web"  # another method: served
    status, body = refused(pods.patch_namespaced_pod_status, "web", NS, LABEL)
    assert status == body["code"] == code
    assert body.get("reason") == reason and body["message"] == message and body["kind"] == "Status"
    assert api.pod(NS, "web") == before  # nothing stored
    assert api.failures_pending == []
    again = pods.patch_namespaced_pod_status("web", NS, LABEL)  # once only
    assert again.metadata.labels == {"tier": "front"}
    assert [(c.method, c.status) for c in api.calls if c.path == STATUS_PATH] == [("PATCH", code), ("PATCH", 200)]


def test_a_404_deletes_the_object_first_as_another_client_would(api: FakeApiServer) -> None:
    pods = core(api)
    listed = pods.list_namespaced_pod(NS)
    api.fail_once("PATCH", STATUS_PATH, 404)
    status, body = refused(pods.patch_namespaced_pod_status, "web", NS, LABEL)
    assert (status, body["reason"], body["message"]) == (404, "NotFound", 'pods "web" not found')
    assert api.pods(NS) == []
    events = watch.Watch().stream(pods.list_namespaced_pod, NS, resource_version=listed.metadata.resource_version,
                                  timeout_seconds=1)
    seen = [(e["type"], e["object"].metadata.name) for e in events]
    assert seen == [("DELETED", "web")]


def test_other_paths_and_methods_are_served_and_unknown_codes_are_refused(api: FakeApiServer) -> None:
    api.fail_once("DELETE", STATUS_PATH, 500)
    assert core(api).patch_namespaced_pod_status("web", NS, LABEL).metadata.labels == {"tier": "front"}
    assert api.failures_pending == [("DELETE", STATUS_PATH, 500)]
    with pytest.raises(ValueError, match="418"):
        api.fail_once("GET", STATUS_PATH, 418)
