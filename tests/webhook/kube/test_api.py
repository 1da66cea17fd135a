"""The API edge against the Kubernetes API test fake: who a client says it is, and who each write says it is."""

from __future__ import annotations

import importlib.metadata
import time
from pathlib import Path

import pytest
from kubernetes import client

from fieldwarden.webhook.kube.api import Leases, NoCluster, Pods, connect, load_api_client, user_agent, without_retries
from tests.webhook.fake_apiserver import LEASE, VPA, FakeApiServer
from tests.webhook.kubeconfig import write_kubeconfig
from tests.webhook.pods import gated_pod

VERSION = importlib.metadata.version("fieldwarden")


def test_user_agent_names_the_version_and_the_program() -> None:
    assert user_agent("set-image") == f"fieldwarden/{VERSION} (set-image)"


def test_clients_made_here_send_it(tmp_path: Path) -> None:
    with FakeApiServer() as api:
        kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", api.url))
        made = load_api_client(kubeconfig, "fake", program="webhook")
        assert made is not None
        Pods(made).list("shop", "app=web")
        Pods(connect(kubeconfig, None, "the controller", program="controller")).list("shop", "app=web")
        assert [call.user_agent for call in api.calls] == [user_agent("webhook"), user_agent("controller")]
    with pytest.raises(NoCluster):
        connect(str(tmp_path / "absent"), "fake", "set-image", program="set-image")


def test_every_write_names_its_field_manager() -> None:
    with FakeApiServer() as api:
        api_client = client.ApiClient(client.Configuration(host=api.url))
        api.add_pod(gated_pod("web-0"))
        pods = Pods(api_client, field_manager="fieldwarden-test")
        pods.patch("shop", "web-0", {"metadata": {"labels": {"seen": "yes"}}})
        pods.patch_status("shop", "web-0", {"status": {"conditions": [{"type": "Probe", "status": "True"}]}})
        leases = Leases(api_client, field_manager="fieldwarden-test")
        lease = leases.create("shop", {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}})
        leases.replace("shop", "l", {**lease, "spec": {"holderIdentity": "b"}})
        Pods(api_client).patch("shop", "web-0", {"metadata": {"labels": {"seen": "twice"}}})
        writes = api.writes()
        assert [(w.method, w.collection, w.status) for w in writes] == [
            ("PATCH", "pods", 200), ("PATCH", "pods", 200), ("POST", LEASE, 201), ("PUT", LEASE, 200), ("PATCH", "pods", 200)]
        assert [w.field_manager for w in writes] == ["fieldwarden-test"] * 4 + ["fieldwarden"]  # (the default)


def test_no_client_made_here_waits_out_a_retry_after_inside_a_call(tmp_path: Path) -> None:
    # urllib3's default retries slept out a 503's `Retry-After: 5` inside the call: a restarted
    # kube-apiserver's answer for a CRD's path, so the VPA watch came 5 s late and its reflector never knew.
    with FakeApiServer() as api:
        kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", api.url))
        made = load_api_client(kubeconfig, "fake", program="webhook")
        assert made is not None
        plain = client.ApiClient(client.Configuration(host=api.url))
        plain.user_agent = user_agent("test")
        wrapped = without_retries(plain)
        assert without_retries(made) is made and wrapped.user_agent == user_agent("test")
        api.crash()
        api.restart(crd_unready=2)
        for api_client in (made, wrapped):
            began = time.monotonic()
            with pytest.raises(client.ApiException) as told:
                client.CustomObjectsApi(api_client).list_cluster_custom_object("autoscaling.k8s.io", "v1", VPA)
            assert time.monotonic() - began < 1.0
            assert told.value.status == 503 and told.value.headers["Retry-After"] == "5"
        assert client.CustomObjectsApi(made).list_cluster_custom_object("autoscaling.k8s.io", "v1", VPA)["items"] == []
        assert [(c.status, c.user_agent) for c in api.calls] == [
            (503, user_agent("webhook")), (503, user_agent("test")), (200, user_agent("webhook"))]
