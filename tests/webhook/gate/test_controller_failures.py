"""The readiness-gate controller when its status write fails: the API test fake fails that one request.

409 (the pod changed under it) is looked at again, 500 and 403 are retried with backoff and
counted as `mark` failures, and a pod deleted between the read and the write (404) is forgotten.
Each test then checks the writes the fake saw and that the controller still runs.
"""

from __future__ import annotations

import logging

import pytest

from fieldwarden.webhook.gate import condition as gate
from tests.webhook.fake_apiserver import FakeApiServer
from tests.webhook.gate.test_controller import running, serving
from tests.webhook.pods import GATE, gated_pod
from tests.webhook.waiting import eventually

WEB = "/api/v1/namespaces/shop/pods/web/status"


def status_writes(api: FakeApiServer, path: str = WEB) -> list[int]:
    return [c.status for c in api.writes(path_contains=path)]


@pytest.mark.parametrize(("code", "counted"), [(409, "conflict"), (500, "mark"), (403, "mark")])
def test_a_failed_status_write_is_retried_until_the_pod_is_marked(
        code: int, counted: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "fieldwarden.webhook.gate.controller")
    with FakeApiServer() as api:
        api.add_pod(gated_pod("web"))  # running before the controller starts: the kubelet's writes are done
        api.wait_for_pod("shop", "web", lambda pod: pod["status"].get("phase") == "Running")
        api.fail_once("PATCH", WEB, code)
        with running(api) as controller:
            pod = api.wait_for_pod("shop", "web", serving, timeout=10)
            assert gate.condition(pod, GATE)["reason"] == gate.REASON_NEW_POD
            eventually(lambda: controller.metrics.marked == 1, "the mark counted")
            assert status_writes(api) == [code, 200]  # one failure, one retry that landed, nothing more
            assert controller.metrics.failures(counted) == 1
            assert controller.metrics.failures("conflict" if counted == "mark" else "mark") == 0
            assert controller.alive()
    warned = [r.getMessage() for r in caplog.records if "marking shop/web failed" in r.getMessage()]
    assert len(warned) == (0 if code == 409 else 1)  # a conflict is routine: the watch brings the news
    if code != 409:  # the server's own words, with its code
        assert warned[0].startswith(f"controller: marking shop/web failed: {code} ")
        assert warned[0].endswith("request timed out" if code == 500 else 'in the namespace "shop"')


def test_a_pod_deleted_before_its_status_write_is_forgotten() -> None:
    with FakeApiServer() as api, running(api) as controller:
        api.fail_once("PATCH", WEB, 404)  # the fake deletes web, then answers 404
        api.add_pod(gated_pod("web"))
        eventually(lambda: status_writes(api) == [404], "the write that finds web gone")
        eventually(lambda: controller.snapshot()[0] == 0, "web's DELETED event reaches the cache")
        api.add_pod(gated_pod("next"))  # proof that the workers went on after the 404
        api.wait_for_pod("shop", "next", serving, timeout=10)
        eventually(lambda: controller.metrics.marked == 1, "next counted")
        assert status_writes(api) == [404]  # web: never retried
        assert controller.metrics.failures("mark") == controller.metrics.failures("conflict") == 0
        assert api.pods("shop")[0]["metadata"]["name"] == "next" and len(api.pods("shop")) == 1
        assert controller.alive()
