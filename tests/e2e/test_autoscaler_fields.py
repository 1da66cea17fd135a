"""FW403 behind a real kube-apiserver: re-deploying a manifest keeps what the autoscalers own.

Replicas: a Deployment with an HPA (the one `kubectl autoscale` makes, created from its manifest) and scaled by `kubectl scale` (the
scale subresource, as the HPA controller writes; kube-controller-manager's HPA controller, when it
runs, has no metrics and leaves the count alone). Every way a user re-deploys keeps the live
`spec.replicas` and prints FW403's warning: client-side `kubectl apply` (the same manifest, a new
count in git, the count removed from the manifest — defaulted to 1 before the webhook sees it —,
and a live count of 0), `kubectl replace`, `kubectl apply --server-side --force-conflicts` (and the
managedFields it leaves), `--dry-run=server` (shows the kept value, stores nothing), and
`kubectl diff`, which prints nothing once converged. An HPA created while the webhook runs is
honoured within seconds (the wait is bounded at 10), one deleted is forgotten as fast, and the
scale subresource is never intercepted.

Resources: the VerticalPodAutoscaler CRD (tests/e2e/crds/vertical-pod-autoscaler.yaml, a faithful
subset of the VPA's own) is installed after fieldwarden started, for this module, and removed at
its end; every webhook worker lists the VPAs within seconds of the CRD being Established (it
watches that CRD; the 30 s look for an absent one is only its fallback). A VPA's
controlled requests and limits keep their live values on re-apply, the others come from the
manifest (updateMode Auto and Initial, controlledResources, controlledValues RequestsOnly,
containerPolicies mode Off and `*`), a VPA switched to Off stops protecting, and a kept request is
never left above a new, lower limit: the API server accepts every object stored.

The API-fake counterparts now shown for real: tests/webhook/server/test_serve_cluster.py (an HPA
created and deleted while serving) and the "installed" step of
tests/webhook/inventory/test_cluster.py::test_vpa_crd_absent_then_installed_then_removed; both stay,
as fast checks that need no binaries.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.e2e.cluster import Cluster
from tests.e2e.install import Installation
from tests.e2e.kubectl import Kubectl, Result
from tests.e2e.processes import wait_for

IMAGE = "registry.example/web:1.0"
NEW_IMAGE = "registry.example/web:2.0"
FW403 = "Warning: [FW403 autoscaler-owned-field-reset] "
HONOUR_TIMEOUT = 10.0  # an autoscaler created or changed while the webhook runs: its watch brings it at once
CRD_WATCHED = 10.0  # seconds from the VPA CRD Established to VPAs listed: the CRD is watched (30 s: the poll)
VPA_CRD = Path(__file__).parent / "crds" / "vertical-pod-autoscaler.yaml"
Obj = dict[str, Any]


# -- replicas under an HPA ---------------------------------------------------------------------

def deployment(replicas: int | None = 2, image: str = IMAGE) -> Obj:
    spec: Obj = {
        "replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "app", "image": image}]}},
    }
    if replicas is None:
        del spec["replicas"]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec}


def stored(kubectl: Kubectl, namespace: str, name: str = "web") -> Obj:
    found: Obj = kubectl.json("get", "deployment", name, "-n", namespace, "--show-managed-fields")
    return found


def apply(kubectl: Kubectl, namespace: str, manifest: Obj, *flags: str) -> Result:
    return kubectl("apply", "-n", namespace, *flags, "-f", "-", stdin=manifest, check=False)


CONFLICT = "the object has been modified; please apply your changes to the latest version and try again"


def redeployed(kubectl: Kubectl, command: list[str], namespace: str, manifest: Obj) -> Result:
    """`kubectl <command> -f -` of the manifest; a replace the API server refused with a conflict is
    made again, as its API conventions tell a client to (kube-controller-manager writes a new
    Deployment's status meanwhile: kubernetes/kubernetes#41892 is the same race in its own tests)."""
    for _ in range(5):
        done = kubectl(*command, "-n", namespace, "-f", "-", stdin=manifest, check=False)
        if command[0] != "replace" or done.code == 0 or CONFLICT not in done.stderr:
            return done
    return done


def kept_replicas(live: int, asked: int) -> str:
    return f"{FW403}kept spec.replicas={live}, the live value (request had {asked}): HPA web scales it"


def dry_run_replicas(kubectl: Kubectl, namespace: str, manifest: Obj) -> int:
    shown = kubectl.json("apply", "-n", namespace, "--dry-run=server", "-f", "-", stdin=manifest)
    return int(shown["spec"]["replicas"])


def wait_replicas_kept(kubectl: Kubectl, namespace: str, live: int, kept: bool = True) -> None:
    """Until a server dry run of the manifest (replicas 2) shows `live` kept (or, `kept=False`, 2 again)."""
    wanted = live if kept else 2
    wait_for(lambda: dry_run_replicas(kubectl, namespace, deployment()) == wanted,
             f"the webhook to {'keep' if kept else 'stop keeping'} {namespace}/web's live replicas {live}",
             HONOUR_TIMEOUT, interval=0.2)


def hpa_manifest() -> Obj:
    """What `kubectl autoscale deployment/web --min=2 --max=6 --cpu=80%` makes; a manifest, because that
    flag is kubectl 1.34's (1.32 spells it `--cpu-percent`) and the suite runs with any supported kubectl."""
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 2, "maxReplicas": 6,
                     "metrics": [{"type": "Resource", "resource": {
                         "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}}


def autoscale(kubectl: Kubectl, namespace: str) -> None:
    done = kubectl("create", "-n", namespace, "-f", "-", stdin=hpa_manifest())
    assert done.stdout.strip() == "horizontalpodautoscaler.autoscaling/web created", done


def scale(kubectl: Kubectl, namespace: str, replicas: int) -> Result:
    done = kubectl("scale", "deployment/web", "-n", namespace, f"--replicas={replicas}")
    assert done.stdout.strip() == "deployment.apps/web scaled" and "FW403" not in done.stderr, done
    return done


def scaled_by_hpa(kubectl: Kubectl, namespace: str, *apply_flags: str) -> None:
    """Deployment `web` (2 replicas in its manifest) applied with `apply_flags`, which an HPA scaled to 4,
    known to the webhook."""
    created = apply(kubectl, namespace, deployment(), *apply_flags)
    assert created.code == 0, created
    autoscale(kubectl, namespace)
    scale(kubectl, namespace, 4)
    wait_replicas_kept(kubectl, namespace, 4)


@pytest.fixture
def scaled(fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> str:
    """A namespace with `scaled_by_hpa`'s Deployment, made by client-side `kubectl apply`."""
    scaled_by_hpa(kubectl, namespace)
    return namespace


REDEPLOYS: dict[str, tuple[list[str], int | None, int, int, str]] = {
    # name: (kubectl command, replicas in the manifest, live replicas, replicas the request had, printed)
    "apply-same-manifest": (["apply"], 2, 4, 2, "configured"),
    "apply-count-raised-in-git": (["apply"], 3, 4, 3, "configured"),
    "apply-count-removed-from-manifest": (["apply"], None, 4, 1, "configured"),  # null, defaulted to 1
    "apply-live-count-zero": (["apply"], 2, 0, 2, "configured"),  # scale-to-zero: 0 is kept too
    "replace": (["replace"], 2, 4, 2, "replaced"),
}


@pytest.mark.parametrize("redeploy", list(REDEPLOYS))
def test_redeploying_the_manifest_keeps_the_live_replicas(
        redeploy: str, scaled: str, kubectl: Kubectl) -> None:
    command, replicas, live, asked, printed = REDEPLOYS[redeploy]
    if live != 4:
        scale(kubectl, scaled, live)
    done = redeployed(kubectl, command, scaled, deployment(replicas))
    assert done.code == 0 and done.stdout.strip() == f"deployment.apps/web {printed}", done
    assert kept_replicas(live, asked) in done.stderr.splitlines(), done
    assert stored(kubectl, scaled)["spec"]["replicas"] == live


def replicas_managers(deployment: Obj) -> list[tuple[str, str, str | None]]:
    """(manager, operation, subresource) of each managedFields entry that owns spec.replicas."""
    return [(m["manager"], m["operation"], m.get("subresource")) for m in deployment["metadata"]["managedFields"]
            if "f:replicas" in m.get("fieldsV1", {}).get("f:spec", {})]


def test_server_side_apply_with_force_conflicts_keeps_the_live_replicas(
        fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    scaled_by_hpa(kubectl, namespace, "--server-side")
    assert replicas_managers(stored(kubectl, namespace)) == [("kubectl", "Update", "scale")]

    # The API server's own answer first: the count has another manager now.
    conflict = apply(kubectl, namespace, deployment(), "--server-side")
    assert conflict.code == 1, conflict
    assert 'conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas' in conflict.stderr

    forced = apply(kubectl, namespace, deployment(), "--server-side", "--force-conflicts")
    assert forced.code == 0 and forced.stdout.strip() == "deployment.apps/web serverside-applied", forced
    assert kept_replicas(4, 2) in forced.stderr.splitlines()
    applied = stored(kubectl, namespace)
    assert applied["spec"]["replicas"] == 4
    # The applier took the field over (with the live value in it): it now owns it alone.
    assert replicas_managers(applied) == [("kubectl", "Apply", None)]

    # Leaving replicas out of the manifest, as one should under an HPA: server-side apply removes a
    # field its applier owned alone, the API server defaults it to 1, and FW403 keeps 4.
    dropped = apply(kubectl, namespace, deployment(replicas=None), "--server-side")
    assert dropped.code == 0 and kept_replicas(4, 1) in dropped.stderr.splitlines(), dropped
    released = stored(kubectl, namespace)
    assert released["spec"]["replicas"] == 4 and replicas_managers(released) == []

    # From then on the HPA owns the count and applies neither conflict nor need FW403.
    scale(kubectl, namespace, 5)
    steady = apply(kubectl, namespace, deployment(replicas=None), "--server-side")
    assert steady.code == 0 and "FW403" not in steady.stderr, steady
    assert stored(kubectl, namespace)["spec"]["replicas"] == 5


@pytest.mark.parametrize("flags", [[], ["--server-side", "--force-conflicts"]], ids=["client-side", "server-side"])
def test_a_server_dry_run_shows_the_kept_value_and_stores_nothing(
        flags: list[str], scaled: str, kubectl: Kubectl) -> None:
    before = stored(kubectl, scaled)
    raised = deployment(replicas=3)  # a new count in git: stored, it would change the last-applied annotation too
    shown = apply(kubectl, scaled, raised, *flags, "--dry-run=server", "-o", "json")
    assert shown.code == 0 and kept_replicas(4, 3) in shown.stderr.splitlines(), shown
    assert shown.json()["spec"]["replicas"] == 4
    after = stored(kubectl, scaled)
    assert after["spec"] == before["spec"]
    last_applied = "kubectl.kubernetes.io/last-applied-configuration"  # (the Deployment controller adds its own)
    assert after["metadata"]["annotations"][last_applied] == before["metadata"]["annotations"][last_applied]
    assert [m for m in after["metadata"]["managedFields"] if m["operation"] == "Apply"] == []


def diff_lines(result: Result) -> list[str]:
    """The changed lines of `kubectl diff`'s unified diff (without the file headers)."""
    return [line for line in result.stdout.splitlines()
            if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))]


@pytest.mark.parametrize("flags", [[], ["--server-side", "--force-conflicts"]], ids=["client-side", "server-side"])
def test_kubectl_diff_shows_nothing_once_converged_and_never_the_replicas(
        flags: list[str], fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    scaled_by_hpa(kubectl, namespace, *flags[:1])  # made the way it is diffed
    converged = kubectl("diff", "-n", namespace, *flags, "-f", "-", stdin=deployment(), check=False)
    assert (converged.code, converged.stdout) == (0, ""), converged
    new_image = kubectl("diff", "-n", namespace, *flags, "-f", "-", stdin=deployment(image=NEW_IMAGE), check=False)
    assert new_image.code == 1, new_image  # 1: differences found
    changed = diff_lines(new_image)
    generation = int(changed[0].removeprefix("-  generation: ")) if changed[0].startswith("-  generation: ") else -1
    assert changed == [f"-  generation: {generation}", f"+  generation: {generation + 1}",
                       f"-      - image: {IMAGE}", f"+      - image: {NEW_IMAGE}"], new_image.stdout


def test_an_hpa_created_later_is_honoured_promptly_and_one_deleted_is_forgotten(
        fieldwarden: Installation, kubectl: Kubectl, namespace: str) -> None:
    assert apply(kubectl, namespace, deployment()).code == 0
    scale(kubectl, namespace, 4)
    unprotected = kubectl("diff", "-n", namespace, "-f", "-", stdin=deployment(), check=False)
    assert unprotected.code == 1 and ["-  replicas: 4", "+  replicas: 2"] == [
        line for line in diff_lines(unprotected) if "replicas" in line], unprotected

    autoscale(kubectl, namespace)
    wait_replicas_kept(kubectl, namespace, 4)
    # The HPA's own writes (the scale subresource) are never intercepted; the kept value follows them.
    scale(kubectl, namespace, 5)
    assert stored(kubectl, namespace)["spec"]["replicas"] == 5
    again = apply(kubectl, namespace, deployment())
    assert again.code == 0 and kept_replicas(5, 2) in again.stderr.splitlines(), again
    assert stored(kubectl, namespace)["spec"]["replicas"] == 5

    deleted = kubectl("delete", "hpa", "web", "-n", namespace)
    assert deleted.stdout.startswith('horizontalpodautoscaler.autoscaling "web" deleted'), deleted
    wait_replicas_kept(kubectl, namespace, 5, kept=False)
    reset = apply(kubectl, namespace, deployment())
    assert reset.code == 0 and "FW403" not in reset.stderr, reset
    assert stored(kubectl, namespace)["spec"]["replicas"] == 2


# -- resources under a VPA ---------------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def vpa_crd(fieldwarden: Installation, kubectl: Kubectl) -> Iterator[Obj]:
    """The VPA CRD, installed once fieldwarden runs (at the module's start), deleted at its end; it
    is watched, so every worker of the webhook lists the VPAs within CRD_WATCHED seconds."""
    webhook = fieldwarden.webhook
    assert webhook is not None and webhook.process is not None
    workers = next(int(a.split("=", 1)[1]) for a in webhook.argv if a.startswith("--workers="))
    crd: Obj = yaml.safe_load(VPA_CRD.read_text())
    log_mark = len(webhook.process.output())
    created = kubectl("create", "-f", "-", stdin=crd, check=False)
    assert created.code == 0, f"the VPA CRD must be absent when this module starts (it arrives late here):\n{created}"
    kubectl("wait", "--for=condition=Established", f"crd/{crd['metadata']['name']}", "--timeout=20s")

    def woken() -> bool:  # each worker's CRD watch saw it Established and had the VPAs listed
        later = webhook.process.output()[log_mark:] if webhook.process else ""
        return (len(re.findall(r"inventory: the VPA CRD is established", later)) >= workers
                and len(re.findall(r"inventory: vpa: listed \d+", later)) >= workers)

    wait_for(woken, f"each of the webhook's {workers} workers to list VPAs once the CRD was established",
             CRD_WATCHED, interval=0.1)
    yield {"crd": crd, "log_mark": log_mark}
    kubectl("delete", "crd", crd["metadata"]["name"], "--ignore-not-found", "--wait=false")


@pytest.fixture(scope="module")
def vpas_listed(vpa_crd: Obj, fieldwarden: Installation) -> None:
    """Once every worker of the webhook has found the CRD and listed the VPAs (each keeps its own watch)."""
    webhook = fieldwarden.webhook
    assert webhook is not None and webhook.process is not None
    workers = next(int(a.split("=", 1)[1]) for a in webhook.argv if a.startswith("--workers="))

    def listed() -> bool:
        later = webhook.process.output()[vpa_crd["log_mark"]:] if webhook.process else ""
        return len(re.findall(r"inventory: vpa: listed \d+", later)) >= workers

    wait_for(listed, f"each of the webhook's {workers} workers to list VPAs after the CRD was installed",
             CRD_WATCHED, interval=0.2)


def api_deployment(app: Obj, log: Obj) -> Obj:
    """Deployment `api`: containers `app` and `log` with these resources."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "api"}},
                     "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                     "template": {"metadata": {"labels": {"app": "api"}}, "spec": {"containers": [
                         {"name": "app", "image": "registry.example/api:1.0", "resources": app},
                         {"name": "log", "image": "registry.example/log:1.0", "resources": log}]}}}}


# What is live (earlier deploys, or someone tuning by hand), and what git says now.
LIVE_APP = {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}}
LIVE_LOG = {"requests": {"cpu": "50m", "memory": "48Mi"}, "limits": {"memory": "96Mi"}}
GIT_APP = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "384Mi"}}
GIT_LOG = {"requests": {"cpu": "20m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}}


def vpa(update_mode: str, *policies: Obj) -> Obj:
    spec: Obj = {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                 "updatePolicy": {"updateMode": update_mode}}
    if policies:
        spec["resourcePolicy"] = {"containerPolicies": list(policies)}
    return {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "metadata": {"name": "api"},
            "spec": spec}


def resources(deployment: Obj) -> dict[str, Obj]:
    return {c["name"]: c.get("resources", {}) for c in deployment["spec"]["template"]["spec"]["containers"]}


def dry_run_resources(kubectl: Kubectl, namespace: str, manifest: Obj) -> dict[str, Obj]:
    return resources(kubectl.json("apply", "-n", namespace, "--dry-run=server", "-f", "-", stdin=manifest))


def under_vpa(kubectl: Kubectl, namespace: str, autoscaler: Obj) -> None:
    """Deployment `api` with the live resources, then the VPA; returns once the webhook keeps app's live cpu request."""
    assert apply(kubectl, namespace, api_deployment(LIVE_APP, LIVE_LOG)).code == 0
    assert apply(kubectl, namespace, autoscaler).code == 0
    wait_for(lambda: dry_run_resources(kubectl, namespace, api_deployment(GIT_APP, GIT_LOG))["app"]
             ["requests"]["cpu"] == LIVE_APP["requests"]["cpu"],
             f"the webhook to honour VPA {namespace}/api", HONOUR_TIMEOUT, interval=0.2)


def kept_resources(container: str, fields: str) -> str:
    return f"{FW403}kept live resources of container {container} ({fields}): VPA api controls them"


CPU_REQUEST_ONLY = {"containerName": "app", "controlledResources": ["cpu"], "controlledValues": "RequestsOnly"}
LOG_OFF = {"containerName": "log", "mode": "Off"}
REAPPLIES = {"apply": ["apply"], "apply-server-side": ["apply", "--server-side", "--force-conflicts"],
             "replace": ["replace"]}


@pytest.mark.parametrize("reapply", list(REAPPLIES))
def test_the_resources_a_vpa_controls_are_kept_and_the_others_come_from_the_manifest(
        reapply: str, vpas_listed: None, kubectl: Kubectl, namespace: str) -> None:
    under_vpa(kubectl, namespace, vpa("Auto", CPU_REQUEST_ONLY, LOG_OFF))
    done = redeployed(kubectl, REAPPLIES[reapply], namespace, api_deployment(GIT_APP, GIT_LOG))
    assert done.code == 0, done  # the API server accepted the object the webhook left
    assert kept_resources("app", "requests cpu") in done.stderr.splitlines(), done
    expected_app = copy.deepcopy(GIT_APP)
    expected_app["requests"]["cpu"] = LIVE_APP["requests"]["cpu"]  # the VPA's; limits are not (RequestsOnly)
    deployed = stored(kubectl, namespace, "api")
    assert resources(deployed) == {"app": expected_app, "log": GIT_LOG}  # log: mode Off
    if reapply == "apply-server-side":  # the applier owns what it sent, the kept value included
        [applied] = [m for m in deployed["metadata"]["managedFields"]
                     if (m["manager"], m["operation"]) == ("kubectl", "Apply")]
        app = applied["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"app"}']
        assert app["f:resources"]["f:requests"] == {"f:cpu": {}, "f:memory": {}}, applied


def test_initial_mode_with_a_policy_for_every_container_keeps_all_their_resources(
        vpas_listed: None, kubectl: Kubectl, namespace: str) -> None:
    under_vpa(kubectl, namespace, vpa("Initial", {"containerName": "*"}))  # cpu and memory, requests and limits
    done = apply(kubectl, namespace, api_deployment(GIT_APP, GIT_LOG))
    assert done.code == 0, done
    assert kept_resources("app", "requests cpu,memory; limits cpu,memory") in done.stderr.splitlines(), done
    assert kept_resources("log", "requests cpu,memory; limits memory") in done.stderr.splitlines(), done
    assert resources(stored(kubectl, namespace, "api")) == {"app": LIVE_APP, "log": LIVE_LOG}


def test_a_vpa_switched_off_protects_nothing(vpas_listed: None, kubectl: Kubectl, namespace: str) -> None:
    under_vpa(kubectl, namespace, vpa("Auto"))
    kubectl("patch", "vpa", "api", "-n", namespace, "--type=merge",
            "-p", '{"spec": {"updatePolicy": {"updateMode": "Off"}}}')
    git = api_deployment(GIT_APP, GIT_LOG)
    wait_for(lambda: dry_run_resources(kubectl, namespace, git) == {"app": GIT_APP, "log": GIT_LOG},
             "the webhook to see the VPA switched off", HONOUR_TIMEOUT, interval=0.2)
    done = apply(kubectl, namespace, git)
    assert done.code == 0 and "FW403" not in done.stderr, done
    assert resources(stored(kubectl, namespace, "api")) == {"app": GIT_APP, "log": GIT_LOG}


def test_a_kept_request_is_never_left_above_a_lowered_limit(
        vpas_listed: None, kubectl: Kubectl, namespace: str) -> None:
    requests_only = {"containerName": "app", "controlledValues": "RequestsOnly"}  # cpu and memory requests
    under_vpa(kubectl, namespace, vpa("Recreate", requests_only, LOG_OFF))
    lowered = copy.deepcopy(GIT_APP)
    lowered["limits"]["cpu"] = "200m"  # below the live request the VPA keeps (250m)
    done = apply(kubectl, namespace, api_deployment(lowered, GIT_LOG))
    assert done.code == 0, done  # not the API server's "must be less than or equal to cpu limit"
    warnings = done.stderr.splitlines()
    assert kept_resources("app", "requests cpu,memory") in warnings, done
    assert any(w.startswith(f"{FW403}kept the live limit cpu=1 of container app too") for w in warnings), done
    app = resources(stored(kubectl, namespace, "api"))["app"]
    assert app == {"requests": LIVE_APP["requests"], "limits": {"cpu": "1", "memory": GIT_APP["limits"]["memory"]}}
