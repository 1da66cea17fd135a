"""fieldwarden installed into a test cluster from its Helm chart, with its programs run here.

The chart is rendered with Helm's Go SDK (tests/helm/chart.py: release `fieldwarden`, namespace
`fieldwarden`) and its objects are applied with `kubectl apply --server-side`, except:

- the Deployments: the arguments of their containers run here as processes (`python -m fieldwarden
  ...`, the real gunicorn and controller) with only what cannot work outside a pod changed: `--bind`
  on 127.0.0.1, `--cert-dir` holding the harness's webhook certificate, `--config` the ConfigMap's
  content in a file, and `--kubeconfig` a token of the Deployment's own ServiceAccount, so that the
  chart's RBAC is all they may do;
- the webhook configurations: `clientConfig.service` becomes `clientConfig.url`
  (https://127.0.0.1:PORT/mutate) and `caBundle` the harness CA; rules, selectors, failure and
  side-effect policies, timeouts and reinvocation are the rendered ones.

`install(...)` returns once both webhook configurations answer (a dry-run pod gets the readiness
gate, a dry-run pod update that FW401 forbids is denied) and the controller holds its Lease.
"""

from __future__ import annotations

import copy
import http.client
import re
import sys
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from fieldwarden.policies.config import Settings
from fieldwarden.webhook.gate.process import gate_settings
from tests.e2e.cluster import Api, Cluster
from tests.e2e.kubectl import Kubectl
from tests.e2e.processes import Process, wait_for
from tests.helm.chart import render
from tests.webhook.live import clean_environment, free_port

NAMESPACE = "fieldwarden"  # the release namespace: the webhooks never see it
PROBE_NAMESPACE = "fieldwarden-e2e-probe"
START_TIMEOUT = 60.0
Obj = dict[str, Any]


def container_args(deployment: Obj) -> list[str]:
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


def replace_options(args: Sequence[str], replacements: Mapping[str, str | None]) -> list[str]:
    """`args` with each `--name=value` named in `replacements` given the new value (None: dropped)."""
    result = []
    for arg in args:
        name = arg.split("=", 1)[0]
        if name not in replacements:
            result.append(arg)
        elif replacements[name] is not None:
            result.append(f"{name}={replacements[name]}")
    return result


def local_webhook_configuration(configuration: Obj, port: int, ca_bundle: str) -> Obj:
    """A rendered webhook configuration whose webhooks call https://127.0.0.1:`port` instead of the Service."""
    local: Obj = copy.deepcopy(configuration)
    for hook in local["webhooks"]:
        path = hook["clientConfig"]["service"].get("path", "/")
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
    return local


@dataclass
class Webhook:
    """`fieldwarden serve` with the chart's arguments, on a free 127.0.0.1 port."""

    argv: list[str]  # after `python -m fieldwarden`, without --bind
    folder: Path
    ca: Path
    env: dict[str, str]
    port: int = 0
    process: Process | None = None

    @property
    def api(self) -> Api:
        return Api(f"https://127.0.0.1:{self.port}", self.ca)

    def start(self, port: int | None = None) -> Webhook:
        """Start and wait for /readyz (the autoscaler inventory listed); `port` keeps a known port."""
        for _ in range(3):  # a chosen free port may be taken before gunicorn binds it
            self.port = port or free_port()
            self.process = Process("fieldwarden-serve", [sys.executable, "-m", "fieldwarden", *self.argv,
                                                         f"--bind=127.0.0.1:{self.port}"],
                                   self.folder / "webhook.log", env=self.env, cwd=self.folder).start()
            try:
                wait_for(lambda: self.api.reachable("/readyz"), "the webhook's /readyz", START_TIMEOUT,
                         failed=self._dead)
                return self
            except AssertionError:
                in_use = "in use" in self.process.output()
                self.process.stop()
                if not in_use or port:
                    raise AssertionError(f"fieldwarden serve did not start:\n{self.process.tail()}") from None
        raise AssertionError(f"fieldwarden serve found no free port:\n{self.process.tail() if self.process else ''}")

    def _dead(self) -> str | None:
        if self.process is not None and not self.process.running():
            return f"it exited with status {self.process.returncode}"
        return None

    def stop(self) -> int | None:
        return self.process.stop(grace=30) if self.process is not None else None

    def restart(self) -> Webhook:
        """Stop, and start again on the same port (the webhook configurations stay right)."""
        self.stop()
        return self.start(self.port)


@dataclass
class Controller:
    """`fieldwarden controller` with the chart's arguments; probes on a port it picks."""

    identity: str
    process: Process
    url: str = ""

    def get(self, path: str) -> tuple[int, str]:
        """GET a probe or /metrics: (status, body), or (0, the error) when it does not answer."""
        address = urllib.parse.urlsplit(self.url)
        connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=5)
        try:
            connection.request("GET", path)
            reply = connection.getresponse()
            return reply.status, reply.read().decode()
        except (OSError, http.client.HTTPException) as error:
            return 0, str(error)
        finally:
            connection.close()

    def stop(self) -> int | None:
        return self.process.stop(grace=30)


@dataclass
class Installation:
    cluster: Cluster
    kubectl: Kubectl
    folder: Path
    objects: list[Obj]
    condition_type: str
    injected_label: tuple[str, str]
    webhook: Webhook | None = None
    controllers: list[Controller] = field(default_factory=list)

    @property
    def namespace(self) -> str:
        return NAMESPACE

    def rendered(self, kind: str, component: str | None = None) -> Obj:
        found = [o for o in self.objects if o["kind"] == kind and (
            component is None or o["metadata"]["labels"].get("app.kubernetes.io/component") == component)]
        assert len(found) == 1, f"the chart rendered {len(found)} {kind} ({component})"
        return found[0]

    def config_file(self) -> Path:
        path = self.folder / "config.yaml"
        path.write_text(self.rendered("ConfigMap")["data"]["config.yaml"])
        return path

    def service_account_kubeconfig(self, component: str) -> Path:
        """A kubeconfig with a token of the ServiceAccount the chart's `component` Deployment runs as."""
        account = self.rendered("Deployment", component)["spec"]["template"]["spec"]["serviceAccountName"]
        token = self.cluster.service_account_token(NAMESPACE, account)
        return self.cluster.write_kubeconfig(self.folder / f"{component}.kubeconfig", token=token, namespace=NAMESPACE)

    def environment(self) -> dict[str, str]:
        env = clean_environment(self.folder)
        env["NO_PROXY"] = "127.0.0.1,localhost"
        return env

    def start_webhook(self) -> Webhook:
        certs = self.folder / "tls"
        certs.mkdir(exist_ok=True)
        (certs / "tls.crt").write_bytes(self.cluster.webhook_cert.read_bytes())
        (certs / "tls.key").write_bytes(self.cluster.webhook_key.read_bytes())
        (certs / "ca.crt").write_bytes(self.cluster.ca.read_bytes())
        args = replace_options(container_args(self.rendered("Deployment", "webhook")),
                               {"--bind": None, "--cert-dir": str(certs), "--config": str(self.config_file())})
        kubeconfig = self.service_account_kubeconfig("webhook")
        self.webhook = Webhook([*args, f"--kubeconfig={kubeconfig}"], self.folder, self.cluster.ca,
                               self.environment()).start()
        return self.webhook

    def start_controller(self, identity: str | None = None, extra_args: Sequence[str] = ()) -> Controller:
        """One more controller replica; returns once its probes answer (it may be a standby)."""
        identity = identity or f"e2e-{len(self.controllers)}"
        args = replace_options(container_args(self.rendered("Deployment", "controller")),
                               {"--bind": "127.0.0.1:0", "--config": str(self.config_file())})
        kubeconfig = self.service_account_kubeconfig("controller")
        process = Process(f"fieldwarden-controller-{identity}",
                          [sys.executable, "-m", "fieldwarden", *args, f"--kubeconfig={kubeconfig}",
                           f"--identity={identity}", *extra_args],
                          self.folder / f"controller-{identity}.log", env=self.environment(), cwd=self.folder).start()
        controller = Controller(identity, process)
        self.controllers.append(controller)

        def banner() -> str | None:
            found = re.search(r"probes and metrics on (http://127\.0\.0\.1:\d+)", process.output())
            return found.group(1) if found else None

        def dead() -> str | None:
            return None if process.running() else f"exited with status {process.returncode}:\n{process.tail()}"

        controller.url = wait_for(banner, f"controller {identity}'s banner", START_TIMEOUT, failed=dead)
        wait_for(lambda: controller.get("/readyz")[0] == 200, f"controller {identity}'s /readyz", START_TIMEOUT,
                 failed=dead)
        return controller

    @property
    def lease_name(self) -> str:
        args = container_args(self.rendered("Deployment", "controller"))
        return next(a.split("=", 1)[1] for a in args if a.startswith("--lease-name="))

    def lease_holder(self) -> str:
        name = self.lease_name
        response = self.cluster.api.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{name}")
        return str(response.body["spec"].get("holderIdentity") or "") if response.ok else ""

    def register_webhooks(self) -> None:
        assert self.webhook is not None
        local = [local_webhook_configuration(o, self.webhook.port, self.cluster.ca_bundle) for o in self.objects
                 if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")]
        self.kubectl("apply", "--server-side", "--field-manager=e2e-install", "-f", "-", stdin=local)
        self.wait_until_webhooks_answer()

    def wait_until_webhooks_answer(self, timeout: float = 30.0) -> None:
        """Until the API server calls both webhooks (it loads new configurations a moment after they are stored)."""
        api = self.cluster.api
        self.cluster.ensure_namespace(PROBE_NAMESPACE)
        pods = f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods"
        probe: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"probe-{uuid.uuid4().hex[:8]}"},
                 "spec": {"containers": [{"name": "app", "image": "registry.example/probe:1"}]}}

        def mutated() -> bool:
            created = api.request("POST", pods, probe, query={"dryRun": "All"})
            assert created.ok, created.body
            gates = created.body["spec"].get("readinessGates") or []
            return any(g.get("conditionType") == self.condition_type for g in gates)

        wait_for(mutated, "the mutating webhook to gate a dry-run pod", timeout, interval=0.2)
        api.create(pods, probe)
        name = probe["metadata"]["name"]

        def denied() -> bool:
            changed = api.request("PATCH", f"{pods}/{name}", {"spec": {"activeDeadlineSeconds": 60}},
                                  query={"dryRun": "All"}, content_type="application/merge-patch+json")
            return not changed.ok and "FW401" in str(changed.body)

        wait_for(denied, "the validating webhook to deny a dry-run pod update", timeout, interval=0.2)
        api.request("DELETE", f"{pods}/{name}")

    def logs(self, lines: int = 25) -> str:
        processes = ([self.webhook.process] if self.webhook and self.webhook.process else []) + \
            [c.process for c in self.controllers]
        return "\n".join(f"----- {p.name} ({p.log}), last {lines} lines:\n{p.tail(lines)}" for p in processes)

    def stop(self) -> None:
        for controller in self.controllers:
            controller.stop()
        if self.webhook is not None:
            self.webhook.stop()


def install(cluster: Cluster, kubectl: Kubectl, folder: Path, values: Mapping[str, Any] | None = None) -> Installation:
    """Apply the chart's objects, run the webhook and one controller, register the webhooks (see the module doc)."""
    folder.mkdir(parents=True, exist_ok=True)
    objects = render(dict(values or {}))
    config = yaml.safe_load(next(o for o in objects if o["kind"] == "ConfigMap")["data"]["config.yaml"]) or {}
    condition_type, selector = gate_settings(Settings(config))
    key, value = selector.split("=", 1)
    installation = Installation(cluster, kubectl, folder, objects, condition_type, (key, value))
    cluster.ensure_namespace(NAMESPACE)
    kept = [o for o in objects if o["kind"] not in ("Deployment", "MutatingWebhookConfiguration",
                                                   "ValidatingWebhookConfiguration")]
    kubectl("apply", "--server-side", "--field-manager=e2e-install", "-f", "-", stdin=kept)
    try:
        installation.start_webhook()
        installation.register_webhooks()
        installation.start_controller()
        wait_for(lambda: installation.lease_holder() == installation.controllers[0].identity,
                 "the controller to hold its Lease", START_TIMEOUT)
    except BaseException:
        installation.stop()
        raise
    return installation
