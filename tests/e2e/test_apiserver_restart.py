"""The webhook and the controller through an API server restart, behind a real kube-apiserver.

fieldwarden runs in a cluster of this module's own, with the VerticalPodAutoscaler CRD
(tests/e2e/crds/vertical-pod-autoscaler.yaml) installed first. kube-apiserver is killed (SIGKILL: the
watches break; see below for SIGTERM) and kept down until every watch of fieldwarden has failed
three times in a row (its reconnect backoff has grown to 1.5-2 s: the state in which the issue's
late relist showed), then started again on the same port with the same etcd data. Once it is
back (`/readyz` answers 200):

- each watch is resumed, or, when the API server answers it with 410 Gone, relisted, within 1 s
  (read from fieldwarden's logs: every webhook worker's HPA and VPA reflectors and the
  controller's pod reflector). The VPAs are a CRD: the restarted kube-apiserver answers their path
  503 with `Retry-After: 5` until it is installed (a moment before /readyz), which the
  `kubernetes` client's own retries used to wait out inside the call, so the VPAs came 5 s late;
- FW403 honours an HPA and a VPA created right after the restart within 2 s (a server dry-run
  UPDATE of its Deployment keeps the live replicas, the live cpu request);
- the controller marks a gated pod created right after the restart within 2 s.

While the API server is down, the webhook keeps answering (called directly, as the API server
would): `/readyz` stays 200 and FW403 decides with the autoscalers it holds. The inventory is not
stale then (nothing it missed: nothing can change while the only API server is down; it turns
stale after `stale_after`, 180 s, without news, and while a relist is pending).

Two runs: a restart alone (a resumed watch may then be served from etcd's history, without a
410), and one after etcd was compacted past the watches' resourceVersions (every resumed watch is
410 Gone: both webhook workers and the controller must relist).

The API-fake counterparts now shown for real: tests/webhook/kube/test_reflector.py's relist
within a second of a restart, tests/webhook/inventory/test_cluster.py's HPA honoured within 2 s
of one, tests/webhook/gate/test_controller.py's pod marked within 2 s of one, and
tests/webhook/server/test_serve_cluster.py's inventory gauges. They stay, as fast checks that
need no binaries and that always hit the case a real restart hits only sometimes (every watch
410 Gone; the 403 of a server whose authorizer has not synced, which made the relist late:
fixed, see webhook/kube/reflector.py). What this cannot show, and the fake keeps showing: the
inventory counted stale while its relist is pending (on a real server that lasts a few
milliseconds: the fake holds the list) or while a CRD's path answers 503 (here some 0.5 s, one
backoff: tests/webhook/inventory/test_cluster.py holds it longer), and a watch cut at a chosen
moment without a restart.

SIGTERM: kube-apiserver v1.32 stops listening at once, but keeps serving watches that it serves
from its watch cache (a resourceVersion given) until they end by their own timeout (60 s for the
webhook's, 300 s for the controller's) or it is killed, so a graceful restart is, for these
clients, an outage that ends with the same broken watches as a crash.
"""

from __future__ import annotations

import base64
import json
import signal
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from tests.e2e.cluster import Cluster, ClusterOptions
from tests.e2e.install import Installation, container_args
from tests.e2e.own_cluster import gated_pod, log_lines, marked, new_namespace, own_installation
from tests.e2e.processes import wait_for
from tests.webhook.exposition import value

RELIST_WITHIN = 1.0  # the hardening issue's targets, from the moment the API server is back
HONOUR_WITHIN = 2.0
MARK_WITHIN = 2.0
FAILURES_BEFORE_RESTART = 3  # reconnect attempts each watch has failed while the API server is down
Obj = dict[str, Any]
VPA_CRD = Path(__file__).parent / "crds" / "vertical-pod-autoscaler.yaml"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture(scope="module")
def installation(start_cluster: Callable[[ClusterOptions], Cluster], failure_logs: list[Any],
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installation]:
    cluster = start_cluster(ClusterOptions(name="apiserver-restart"))  # (own_installation's: the same one)
    crd = yaml.safe_load(VPA_CRD.read_text(encoding="utf-8"))
    cluster.api.create(CRDS, crd, exist_ok=True)
    wait_for(lambda: established(cluster.api.get(f"{CRDS}/{crd['metadata']['name']}")), "the VPA CRD Established", 30)
    with own_installation(start_cluster, failure_logs, "apiserver-restart",
                          tmp_path_factory.mktemp("restart")) as installed:
        yield installed


def established(crd: Obj) -> bool:
    """The CRD's Established condition is True (a CRD just created has a status whose conditions are still null)."""
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def workers(installation: Installation) -> int:
    args = container_args(installation.rendered("Deployment", "webhook"))
    return int(next(a.split("=", 1)[1] for a in args if a.startswith("--workers=")))


def deployment(name: str, replicas: int = 2, cpu: str | None = None) -> Obj:
    container: Obj = {"name": "app", "image": "registry.example/web:1.0"}
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}}}


def hpa(name: str) -> Obj:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "minReplicas": 1, "maxReplicas": 10,
                     "metrics": [{"type": "Resource", "resource": {
                         "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}}


def vpa(name: str) -> Obj:
    return {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": {"name": name},
            "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "updatePolicy": {"updateMode": "Recreate"}}}


def keeps_cpu(cluster: Cluster, namespace: str, name: str) -> bool:
    """Whether a server dry-run UPDATE of the Deployment's cpu request (250m -> 500m) comes back with the live 250m."""
    container = {"name": "app", "resources": {"requests": {"cpu": "500m"}}}
    change = {"spec": {"template": {"spec": {"containers": [container]}}}}
    response = cluster.api.request("PATCH", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", change,
                                   query={"dryRun": "All"}, content_type="application/strategic-merge-patch+json",
                                   timeout=5)
    assert response.ok, response.body
    return bool(response.body["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m")


def keeps_replicas(cluster: Cluster, namespace: str, name: str) -> bool:
    """Whether a server dry-run UPDATE of the Deployment's replicas (2 -> 5) comes back with the live 2."""
    response = cluster.api.request("PATCH", f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
                                   {"spec": {"replicas": 5}}, query={"dryRun": "All"},
                                   content_type="application/merge-patch+json", timeout=5)
    assert response.ok, response.body
    return bool(response.body["spec"]["replicas"] == 2)


def admission_review(namespace: str, name: str) -> Obj:
    """What the API server sends the mutating webhook for that UPDATE."""
    group_version = {"group": "apps", "version": "v1"}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": {**group_version, "kind": "Deployment"},
        "resource": {**group_version, "resource": "deployments"}, "namespace": namespace, "name": name,
        "operation": "UPDATE", "userInfo": {"username": "e2e"}, "dryRun": False,
        "object": {**deployment(name, 5), "metadata": {"name": name, "namespace": namespace}},
        "oldObject": {**deployment(name, 2), "metadata": {"name": name, "namespace": namespace}}}}


@dataclass
class Restart:
    killed: float  # time.time() of the SIGKILL
    up: float  # the first answer of the new API server
    ready: float  # its /readyz 200: "back"


def crash_and_restart(cluster: Cluster, while_down: Callable[[], None]) -> Restart:
    """SIGKILL kube-apiserver, run `while_down`, start it again on its port and etcd (see the module doc)."""
    assert cluster.apiserver is not None
    killed = time.time()
    cluster.apiserver.signal(signal.SIGKILL)
    cluster.stop_apiserver()
    while_down()
    answered: list[float] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            if cluster.api.reachable("/version"):
                answered.append(time.time())
                return
            done.wait(0.02)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    try:
        cluster.start_apiserver()
        ready = time.time()
    finally:
        done.set()
        prober.join(5)
    return Restart(killed, answered[0] if answered else ready, ready)


def failed_attempts(text: str, reflector: str, since: float) -> int:
    """How many reflectors (`inventory: hpa`, say) have logged a reconnect failure numbered FAILURES_BEFORE_RESTART."""
    return sum(1 for _, message in log_lines(text, since)
               if message.startswith(f"{reflector}: ") and f"(failure {FAILURES_BEFORE_RESTART};" in message)


def webhook_log(installation: Installation) -> str:
    assert installation.webhook is not None and installation.webhook.process is not None
    return installation.webhook.process.output()


def controller_log(installation: Installation) -> str:
    return installation.controllers[0].process.output()


def check_the_webhook_answers_while_down(installation: Installation, namespace: str) -> None:
    assert installation.webhook is not None
    webhook = installation.webhook.api
    began = time.monotonic()
    ready = webhook.request("GET", "/readyz", timeout=2)
    assert ready.status == 200 and ready.body["inventory"]["stale"] is False, ready.body
    answer = webhook.request("POST", "/mutate", admission_review(namespace, "web"), timeout=2)
    assert answer.status == 200, answer.body
    response = answer.body["response"]
    assert response["allowed"] is True
    assert json.loads(base64.b64decode(response["patch"])) == [{"op": "replace", "path": "/spec/replicas",
                                                                  "value": 2}]
    assert any("FW403" in w for w in response["warnings"]) and not any("not in sync" in w for w in response["warnings"])
    assert value(webhook.get("/metrics"), "fieldwarden_inventory_stale", source="cluster") == 0
    assert time.monotonic() - began < 3  # three answers, none waiting on the API server


def wait_until_every_watch_failed(installation: Installation, since: float) -> None:
    wait_for(lambda: failed_attempts(webhook_log(installation), "inventory: hpa", since) >= workers(installation)
             and failed_attempts(webhook_log(installation), "inventory: vpa", since) >= workers(installation)
             and failed_attempts(controller_log(installation), "controller: pods", since) >= 1,
             f"every watch to fail {FAILURES_BEFORE_RESTART} times", 20)


def recovery(text: str, reflector: str, since: float) -> dict[str, list[float]]:
    """When the reflectors of that name (one per webhook worker) logged each step after `since`:
    `answered` (the first success after failures), `expired` (a 410: relisting), `listed`."""
    steps: dict[str, list[float]] = {"answered": [], "expired": [], "listed": []}
    words = {"the API server answers again": "answered", "watch expired (410 Gone); relisting": "expired",
             "listed": "listed"}
    for moment, message in log_lines(text, since):
        for start, step in words.items():
            if message.startswith(f"{reflector}: {start}"):
                steps[step].append(moment)
    return steps


def check_recovery(text: Callable[[], str], reflector: str, restart: Restart, count: int,
                   must_relist: bool) -> float:
    """Each of the `count` reflectors answered again once (and relisted, when told 410), all within
    RELIST_WITHIN of `ready`; the seconds from `ready` to the last of those steps."""
    def recovered() -> dict[str, list[float]] | None:
        steps = recovery(text(), reflector, restart.killed)
        return steps if len(steps["answered"]) >= count and len(steps["listed"]) >= len(steps["expired"]) else None

    steps = wait_for(recovered, f"{reflector} to recover, in its log", 10)
    assert len(steps["answered"]) == count and len(steps["listed"]) == len(steps["expired"]), steps
    if must_relist:
        assert len(steps["expired"]) == count, steps
    last = max(steps["answered"] + steps["listed"]) - restart.ready
    assert last <= RELIST_WITHIN, (reflector, last, steps)
    return last


@pytest.mark.parametrize("compact", [False, True], ids=["restart", "restart-after-compaction"])
def test_after_an_api_server_restart_watches_recover_within_1s_and_new_hpas_vpas_and_pods_are_seen_within_2s(
        compact: bool, installation: Installation) -> None:
    cluster = installation.cluster
    namespace = new_namespace(cluster, "restart")
    deployments = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    for name in ("web", "late"):
        cluster.api.create(deployments, deployment(name))
    cluster.api.create(deployments, deployment("resized", cpu="250m"))
    vpas = f"/apis/autoscaling.k8s.io/v1/namespaces/{namespace}/verticalpodautoscalers"
    cluster.api.create(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers", hpa("web"))
    wait_for(lambda: keeps_replicas(cluster, namespace, "web"), "FW403 to honour the HPA", 10)
    assert not keeps_replicas(cluster, namespace, "late") and not keeps_cpu(cluster, namespace, "resized")
    # The cluster's own traffic moves etcd past the resourceVersions the watches hold.
    cluster.api.create(f"/api/v1/namespaces/{namespace}/configmaps",
                       {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "traffic"}})
    if compact:
        cluster.compact_etcd()

    def while_down() -> None:
        check_the_webhook_answers_while_down(installation, namespace)
        wait_until_every_watch_failed(installation, killed_at)

    killed_at = time.time()
    restart = crash_and_restart(cluster, while_down)

    cluster.api.create(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers", hpa("late"))
    created = time.time()
    wait_for(lambda: keeps_replicas(cluster, namespace, "late"), "FW403 to honour the new HPA", HONOUR_WITHIN + 5,
             interval=0.05)
    honoured = time.time() - created
    cluster.api.create(vpas, vpa("resized"))
    created = time.time()
    wait_for(lambda: keeps_cpu(cluster, namespace, "resized"), "FW403 to honour the new VPA", HONOUR_WITHIN + 5,
             interval=0.05)
    vpa_honoured = time.time() - created
    cluster.api.create(f"/api/v1/namespaces/{namespace}/pods", gated_pod("after-restart"))
    created = time.time()
    wait_for(lambda: marked(installation, namespace, "after-restart"), "the controller to mark a new pod",
             MARK_WITHIN + 5, interval=0.05)
    mark = time.time() - created

    webhook = check_recovery(lambda: webhook_log(installation), "inventory: hpa", restart, workers(installation),
                             must_relist=compact)
    vpa_watch = check_recovery(lambda: webhook_log(installation), "inventory: vpa", restart, workers(installation),
                               must_relist=compact)
    controller = check_recovery(lambda: controller_log(installation), "controller: pods", restart, 1,
                                must_relist=compact)
    told = [m.split()[4] for _, m in log_lines(webhook_log(installation), restart.killed)
            if m.startswith("inventory: vpa: API error ")]  # 503 (paths not installed), 429 (storage starting)
    print(f"\n{'compacted' if compact else 'restarted'}: down {restart.up - restart.killed:.2f}s, first answer "
          f"{restart.ready - restart.up:.2f}s before /readyz; from /readyz to the last resumed watch or relist: "
          f"webhook HPAs {webhook:+.3f}s, VPAs {vpa_watch:+.3f}s, controller {controller:+.3f}s; new HPA honoured "
          f"{honoured:.3f}s, new VPA {vpa_honoured:.3f}s after its creation, new pod marked {mark:.3f}s after its "
          f"creation; the VPA watches were answered {' '.join(told) or 'no error'} before they resumed")
    assert honoured <= HONOUR_WITHIN and vpa_honoured <= HONOUR_WITHIN and mark <= MARK_WITHIN
    metrics = installation.webhook.api.get("/metrics") if installation.webhook else ""
    assert value(metrics, "fieldwarden_inventory_stale", source="cluster") == 0
    assert value(metrics, "fieldwarden_inventory_ready", source="cluster") == 1
