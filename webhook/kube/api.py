"""The edge to the Kubernetes API for the controller and `set-image`: pods and leases as plain dicts.

Thin wrappers over the official `kubernetes` client, unchanged: every call asks for the
raw JSON (`_preload_content=False`) so that the code deciding things works on plain
dicts, as the webhook's rules do; patches say their content type explicitly (recent
clients default to JSON Patch). Errors stay `kubernetes.client.ApiException`;
`api_message` words one for a person.

Every client says who it is: a User-Agent `fieldwarden/<version> (<program>)` (audit logs,
API Priority and Fairness) set where the client is made, and every write a field manager
(managedFields: who owns what), set where its `Pods` or `Leases` is made; the client's
defaults would be `OpenAPI-Generator` for both.

No client made here retries inside a call (`without_retries`): urllib3's default, which the
`kubernetes` client keeps, retries a refused connection or a read timeout three times and sleeps
out a server's `Retry-After` (503 or 429) before trying again, all inside one call. A restarted
kube-apiserver answers a CRD's path 503 with `Retry-After: 5` until that path is installed, so
the VPA watch sat 5 s in a call that looked, to its reflector, like one in flight: not failed,
not stale. Every caller here has its own retry and timing (the reflectors' backoff and
staleness, leader election's deadlines, set-image's single attempt), so each attempt is bounded
by its `_request_timeout` and every answer, errors included, reaches the caller.
"""

from __future__ import annotations

import copy
import json
from importlib import metadata
from typing import Any, Iterator

from kubernetes import client, config, watch

from ..gate.condition import STRATEGIC_MERGE

CONFLICT = 409
NOT_FOUND = 404
GONE = 410
DEFAULT_FIELD_MANAGER = "fieldwarden"


def user_agent(program: str) -> str:
    """`fieldwarden/<version> (<program>)`, the version from the installed package's metadata."""
    try:
        version = metadata.version("fieldwarden")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"fieldwarden/{version} ({program})"


def load_api_client(kubeconfig: str | None = None, context: str | None = None, *,
                    program: str) -> client.ApiClient | None:
    """An ApiClient for the cluster this process runs in or its kubeconfig points at, saying it is `program`.

    In-cluster configuration (service account) first, then the kubeconfig (`KUBECONFIG`
    or ~/.kube/config); None when there is neither. A kubeconfig or context named
    explicitly must load: its errors are raised (`config.ConfigException`).
    """
    configuration = client.Configuration()
    if kubeconfig is None and context is None:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException:
            try:
                config.load_kube_config(client_configuration=configuration)
            except config.ConfigException:
                return None
    else:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration)
    configuration.retries = False
    api_client = client.ApiClient(configuration)
    api_client.user_agent = user_agent(program)
    return api_client


def without_retries(api_client: client.ApiClient) -> client.ApiClient:
    """`api_client` if it does not retry inside a call, else a client like it (same configuration,
    headers, User-Agent) that does not: every error reaches the caller at once (see the module doc)."""
    if api_client.configuration.retries is False:
        return api_client
    configuration = copy.copy(api_client.configuration)  # (shallow: credentials and their refresh hook shared)
    configuration.retries = False
    made = client.ApiClient(configuration)
    made.default_headers.update(api_client.default_headers)  # the User-Agent among them
    return made


class NoCluster(Exception):
    """No cluster to talk to, or a kubeconfig that does not load; worded for the user."""


def connect(kubeconfig: str | None, context: str | None, who: str, *, program: str) -> client.ApiClient:
    """`load_api_client`, for a command that cannot work without a cluster: NoCluster otherwise."""
    try:
        api_client = load_api_client(kubeconfig, context, program=program)
    except Exception as exc:  # the client's configuration errors share no base class (YAML, keys, files)
        raise NoCluster(f"{who}: the kubeconfig does not load: {type(exc).__name__}: {exc}") from None
    if api_client is None:
        raise NoCluster(f"{who} needs a cluster: no in-cluster service account, no kubeconfig "
                        "($KUBECONFIG, ~/.kube/config or --kubeconfig)")
    return api_client


def current_namespace(kubeconfig: str | None = None, context: str | None = None) -> str:
    """The namespace of the kubeconfig's (current) context, the pod's own in a cluster, else "default"."""
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as handle:
            return handle.read().strip() or "default"
    except OSError:
        pass
    try:
        contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)
    except Exception:  # (a broken kubeconfig: connect() has said so already)
        return "default"
    chosen = next((c for c in contexts if c.get("name") == context), active) if context else active
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else "default"


def api_message(error: client.ApiException) -> str:
    """What the API server said: its Status message, else the HTTP reason."""
    try:
        body = json.loads(error.body or "")
    except (TypeError, ValueError):
        body = None
    if isinstance(body, dict) and body.get("message"):
        return f"{error.status} {body['message']}"
    return f"{error.status} {error.reason}"


def _json(response: Any) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(response.data)
    finally:
        response.release_conn()
    return data


class Pods:
    """Pods of one cluster: read, list, watch, patch (the object and its status subresource) as `field_manager`."""

    def __init__(self, api_client: client.ApiClient, request_timeout: float = 30.0, *,
                 field_manager: str = DEFAULT_FIELD_MANAGER) -> None:
        self.core = client.CoreV1Api(api_client)
        self.request_timeout = request_timeout
        self.field_manager = field_manager

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        return _json(self.core.read_namespaced_pod(
            name, namespace, _preload_content=False, _request_timeout=self.request_timeout))

    def list(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        body = _json(self.core.list_namespaced_pod(
            namespace, label_selector=label_selector, _preload_content=False, _request_timeout=self.request_timeout))
        return [item for item in body.get("items") or () if isinstance(item, dict)]

    def patch(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return _json(self.core.patch_namespaced_pod(
            name, namespace, body, field_manager=self.field_manager, _content_type=STRATEGIC_MERGE,
            _preload_content=False, _request_timeout=self.request_timeout))

    def patch_status(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return _json(self.core.patch_namespaced_pod_status(
            name, namespace, body, field_manager=self.field_manager, _content_type=STRATEGIC_MERGE,
            _preload_content=False, _request_timeout=self.request_timeout))

    def watch_one(self, namespace: str, name: str, resource_version: str, seconds: int) -> Iterator[tuple[str, dict[str, Any]]]:
        """(event type, pod) for the changes of one pod after `resource_version`, for up to `seconds`."""
        stream = watch.Watch(return_type="object")
        for event in stream.stream(
            self.core.list_namespaced_pod, namespace,
            field_selector=f"metadata.name={name}", resource_version=resource_version,
            timeout_seconds=max(1, int(seconds)), _request_timeout=(self.request_timeout, seconds + self.request_timeout),
        ):
            obj = event.get("raw_object")
            if isinstance(obj, dict) and event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                yield str(event["type"]), obj


class Leases:
    """coordination.k8s.io/v1 Leases: read, create, replace (optimistic: resourceVersion must match) as `field_manager`."""

    def __init__(self, api_client: client.ApiClient, request_timeout: float = 10.0, *,
                 field_manager: str = DEFAULT_FIELD_MANAGER) -> None:
        self.coordination = client.CoordinationV1Api(api_client)
        self.request_timeout = request_timeout
        self.field_manager = field_manager

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return _json(self.coordination.read_namespaced_lease(
                name, namespace, _preload_content=False, _request_timeout=self.request_timeout))
        except client.ApiException as error:
            if error.status == NOT_FOUND:
                return None
            raise

    def create(self, namespace: str, lease: dict[str, Any]) -> dict[str, Any]:
        return _json(self.coordination.create_namespaced_lease(
            namespace, lease, field_manager=self.field_manager, _preload_content=False,
            _request_timeout=self.request_timeout))

    def replace(self, namespace: str, name: str, lease: dict[str, Any]) -> dict[str, Any]:
        return _json(self.coordination.replace_namespaced_lease(
            name, namespace, lease, field_manager=self.field_manager, _preload_content=False,
            _request_timeout=self.request_timeout))
