"""Pods for the controller and set-image tests: the real captured pod, gated by the real webhook.

`gated_pod()` takes the Pod CREATE review captured from a kube-apiserver
(tests/fixtures/admission/pod-create.json), sends it through the webhook's `/mutate`
decision and applies the returned JSON patch with `jsonpatch`: the pod is what the API
server would store with fieldwarden installed (readiness gate + label). `running()` adds a
status shaped like a kubelet's, for the pure tests.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from fieldwarden.policies.config import Settings
from fieldwarden.webhook.server.handlers import admit
from fieldwarden.webhook.inventory.sources import StaticInventory
from tests.webhook.samples import JSON, encode, patched, review

GATE = "InPlaceUpdateReady"
LABEL_SELECTOR = "fieldwarden.io/readiness-gate=injected"


def gated_pod(name: str = "web-0", namespace: str = "shop", containers: dict[str, str] | None = None) -> dict[str, Any]:
    """The captured pod, renamed, with these containers (name -> image), after the webhook's patch."""
    data = review("pod-create")
    request = data["request"]
    request["name"] = name
    request["namespace"] = namespace
    pod = request["object"]
    pod["metadata"]["name"] = name
    pod["metadata"]["namespace"] = namespace
    template = pod["spec"]["containers"][0]
    pod["spec"]["containers"] = [
        {**copy.deepcopy(template), "name": container, "image": image}
        for container, image in (containers or {"app": "registry.example/app:1.0"}).items()
    ]
    status, answer = admit(encode(data), JSON, "mutate", Settings(), StaticInventory(()))
    assert status == 200 and answer["response"]["allowed"], answer
    gated = patched(data, answer)
    assert {"conditionType": GATE} in gated["spec"]["readinessGates"]
    return json.loads(json.dumps(gated))


def digest(image: str) -> str:
    return "sha256:" + hashlib.sha256(image.encode()).hexdigest()


def running(pod: dict[str, Any], *, gate: str | None = None, restarts: int = 0) -> dict[str, Any]:
    """A copy of `pod` with a kubelet-like Running status (gate condition `gate` if given)."""
    out = copy.deepcopy(pod)
    statuses = [
        {
            "name": c["name"], "image": c["image"], "imageID": f"docker.io/{c['image'].split(':')[0]}@{digest(c['image'])}",
            "containerID": f"containerd://{hashlib.sha256((c['name'] + str(restarts)).encode()).hexdigest()}",
            "ready": True, "started": True, "restartCount": restarts,
            "state": {"running": {"startedAt": "2026-11-22T06:00:00Z"}}, "lastState": {},
        }
        for c in out["spec"]["containers"]
    ]
    conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": "2026-11-22T06:00:00Z"}
                  for t in ("PodScheduled", "Initialized", "ContainersReady")]
    if gate is not None:
        conditions.append({"type": GATE, "status": gate, "lastProbeTime": None,
                           "lastTransitionTime": "2026-11-22T06:00:00Z"})
    out["status"] = {"phase": "Running", "conditions": conditions, "containerStatuses": statuses,
                     "hostIP": "10.0.0.5", "podIP": "10.244.1.7", "qosClass": "BestEffort",
                     "startTime": "2026-11-22T06:00:00Z"}
    out["metadata"]["resourceVersion"] = "100"
    return out
