"""TEST FAKE of a Kubernetes API server: the REST subset fieldwarden's tests drive.

Not an API server, and not for production. It serves real HTTP on 127.0.0.1 so that
tests drive the unchanged `kubernetes` client through the same paths, verbs, query
parameters, status codes, `Status` bodies and watch streams as a real kube-apiserver;
the wording of errors follows the Kubernetes sources (apimachinery `api/errors`,
apiserver `registry/generic/registry/store.go` and `endpoints/handlers/patch.go`,
`pkg/registry/core/pod/strategy.go`, `pkg/apis/core/validation`). What it does not
model is said where it matters, and in README-style notes below.

Collections (one resourceVersion counter is shared by every change of all of them):

- autoscaler inventory, read-only: `GET /apis/autoscaling/v2/horizontalpodautoscalers` and
  `GET /apis/autoscaling.k8s.io/v1/verticalpodautoscalers` (all namespaces; also the
  namespaced collection and single objects). The VPA paths answer 404 while the "CRD"
  is not installed, in text (`404 page not found`), as for any group nobody serves.
- pods (core v1): list/watch (`/api/v1/pods`, `/api/v1/namespaces/{ns}/pods`), `GET`,
  `POST` (create), `PUT` and `PATCH` (strategic-merge, merge and JSON patch), `DELETE`
  (immediate), and the `status` subresource (`GET`/`PUT`/`PATCH`).
- leases (coordination.k8s.io/v1): list/watch, `GET`, `POST`, `PUT`, `PATCH`, `DELETE`.

Lists carry `metadata.resourceVersion`; items of built-in lists carry no apiVersion/kind
(custom resources, the VPA, carry theirs). `labelSelector` (`a=b`, `a==b`, `a!=b`,
`a in (x,y)`, `a notin (x)`, `a`, `!a`, comma = AND) and `fieldSelector` (`=`, `==`,
`!=` on the field labels the real server supports for the type) work on lists and watches.

Watches (`watch=true&resourceVersion=RV[&allowWatchBookmarks=true][&timeoutSeconds=N]`)
are chunked streams of JSON lines `{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR,
"object": ...}`: changes after RV, or synthetic ADDED events for what exists when RV is
absent or "0". With a selector, an object that stops matching arrives as DELETED (its
previous content, the event's resourceVersion) and one that starts matching as ADDED,
as the watch cache does. History is a window: after `compact()`, watching from an older
resourceVersion gets `410 Gone`, by default as the real server does (a 200 stream with
one ERROR event carrying a Status with code 410), with `gone_as_http=True` as an HTTP 410.

Writes follow the generic registry store: every change bumps the shared resourceVersion
and emits a watch event; a write that changes nothing bumps nothing and emits nothing;
`metadata.resourceVersion` in a PUT body or set by a patch is a precondition (409
Conflict when stale); a PUT without it is an unconditional update for pods and 422 for
leases (`AllowUnconditionalUpdate` is false for leases); PUT creates a missing lease
(`AllowCreateOnUpdate`), not a missing pod. `dryRun=All` runs a write without storing it.

Pods get what the server does to them: defaults (a subset: restartPolicy, dnsPolicy,
schedulerName, terminationGracePeriodSeconds, securityContext, enableServiceLinks,
container imagePullPolicy/terminationMessage*/resources, requests from limits; priority
and the two not-ready/unreachable tolerations from the default admission plugins),
`status` reset to Pending with the computed `qosClass` on create, no `metadata.generation`
(v1.32 sets none on pods; later versions do), condition times `null` when not given (as Go
serialises a zero `metav1.Time`), the main resource ignoring `status` and the
status subresource ignoring `spec`, `ownerReferences` and `deletionTimestamp`
(`podStatusStrategy`: labels and annotations *do* change through pods/status), and
`ValidatePodUpdate`: containers cannot be added or removed, images must be non-empty
without surrounding whitespace, and only images, activeDeadlineSeconds, added
tolerations and removed schedulingGates may change in the spec (422 Invalid otherwise).

A fake kubelet (`tests/webhook/fake_kubelet.py`, `api.kubelet`) runs in a background
thread and plays a node: it starts created pods, restarts containers whose image
changed, and keeps `Ready` computed from containers and readiness gates.

Every request's `User-Agent` header is recorded (`Call.user_agent`), as are its query
parameters (`Call.params`: a write's `fieldManager` among them; `Call.field_manager`).

Not modelled: authentication/authorization (except a restarted server's 403s:
`restart`), admission webhooks, server-side apply (`application/apply-patch+yaml`
answers 415), managedFields (the `fieldManager` parameter is recorded, neither validated
nor stored), pagination (`limit` is ignored, no `continue`),
`resourceVersionMatch`/`sendInitialEvents`, graceful deletion (DELETE removes at once; a pod is first
marked with deletionTimestamp, a MODIFIED event, as an unscheduled pod is),
finalizers, deletecollection, the other pod subresources (binding, eviction,
ephemeralcontainers, resize, log: 404), generateName collisions, name validation, the
gated-pod nodeSelector/affinity relaxations of ValidatePodUpdate, a restarting server's
429s while its watch cache fills.

Test controls: `apply` (add or modify any object as is), `delete`, `add_pod`, `pod`,
`pods`, `get`, `wait_for_pod`, `compact`, `bookmark`, `drop_watches` (cut open watch
connections mid-stream), `set_unavailable` (503 for everything), `crash` and `restart`
(the process goes away, so connections are reset and refused; then it listens on the
same port again with a new watch cache: every resumed watch is 410 Gone; `restart(forbidden=N)`
answers its first N requests 403 Forbidden, as kube-apiserver v1.32 answered fieldwarden's
service accounts for a moment after a restart: it serves before its RBAC authorizer has
synced, tests/e2e/test_apiserver_restart.py; `restart(crd_unready=N)` answers the first N
requests for the VPA CRD's path 503 with `Retry-After: 5`, as kube-apiserver v1.32 answers a
CRD's path until its handler is installed), `hold_lists`
(list requests wait until released: a slow server; `lists_waiting` counts them),
`install_crd` / `remove_crd`, `fail_once(method, path, code)` (the next request with that method
and path is answered `code` with the real server's Status: 409 Conflict, 500 InternalError, 403
Forbidden, or 404 NotFound, for which the object is first deleted as if by another client, with
its DELETED event; `failures_pending` lists those not consumed yet); `calls` records every HTTP request (method, path, content
type, parsed body, answer, User-Agent); `writes(...)` filters the HTTP writes;
`kubelet.writes` holds the fake kubelet's writes, which are not HTTP calls.
"""

from __future__ import annotations

import copy
import json
import random
import re
import socket
import ssl
import threading
import time
import uuid
from datetime import datetime, timezone
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, NamedTuple
from urllib.parse import parse_qs, urlsplit

from tests.webhook.fake_kubelet import FakeKubelet

HPA = "horizontalpodautoscalers"
VPA = "verticalpodautoscalers"
POD = "pods"
LEASE = "leases"
SECRET = "secrets"

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
# The order the real server lists them in its 415 answer (installer.go).
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")

# apiserver/pkg/registry/generic/registry/store.go
OPTIMISTIC_LOCK = "the object has been modified; please apply your changes to the latest version and try again"

POD_FIELD_LABELS = (
    "metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
    "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs",
    "status.nominatedNodeName",
)


class Collection(NamedTuple):
    path: str  # the cluster-wide collection path
    api_version: str
    kind: str
    builtin: bool  # built-in types' list items omit apiVersion and kind
    group: str = ""
    writable: bool = False  # the fake implements writes over HTTP
    allow_create_on_update: bool = False
    allow_unconditional_update: bool = True
    return_deleted_object: bool = False
    subresources: tuple[str, ...] = ()
    field_labels: tuple[str, ...] = ("metadata.name", "metadata.namespace")

    @property
    def resource(self) -> str:
        return self.path.rsplit("/", 1)[1]

    @property
    def prefix(self) -> str:
        return self.path.rsplit("/", 1)[0]

    @property
    def qualified(self) -> str:
        """`schema.GroupResource.String()`: `pods`, `leases.coordination.k8s.io`."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


COLLECTIONS = {
    HPA: Collection("/apis/autoscaling/v2/horizontalpodautoscalers", "autoscaling/v2", "HorizontalPodAutoscaler", True,
                    "autoscaling"),
    VPA: Collection("/apis/autoscaling.k8s.io/v1/verticalpodautoscalers", "autoscaling.k8s.io/v1", "VerticalPodAutoscaler",
                    False, "autoscaling.k8s.io"),
    POD: Collection("/api/v1/pods", "v1", "Pod", True, "", writable=True, allow_create_on_update=False,
                    allow_unconditional_update=True, return_deleted_object=True, subresources=("status",),
                    field_labels=POD_FIELD_LABELS),
    LEASE: Collection("/apis/coordination.k8s.io/v1/leases", "coordination.k8s.io/v1", "Lease", True,
                      "coordination.k8s.io", writable=True, allow_create_on_update=True, allow_unconditional_update=False),
    # Read-only over HTTP (tests store them with `apply`): what Helm's `lookup` reads.
    SECRET: Collection("/api/v1/secrets", "v1", "Secret", True, ""),
}
BY_KIND = {c.kind: name for name, c in COLLECTIONS.items()}
BY_PATH = {c.path: name for name, c in COLLECTIONS.items()}


class Call(NamedTuple):
    """One HTTP request the fake answered (or refused)."""

    collection: str | None  # HPA, VPA, POD, LEASE, SECRET or None (an unknown path or discovery)
    watch: bool
    resource_version: str | None
    params: dict[str, str]
    status: int
    method: str = "GET"
    path: str = ""
    content_type: str | None = None
    body: Any = None  # the parsed JSON body (None without one)
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    user_agent: str | None = None  # the request's User-Agent header

    @property
    def field_manager(self) -> str | None:
        """The `fieldManager` query parameter (writes name themselves with it)."""
        return self.params.get("fieldManager")


class Event(NamedTuple):
    resource_version: int
    collection: str
    type: str
    object: dict[str, Any]
    previous: dict[str, Any] | None = None  # the object before a MODIFIED or DELETED


class Route(NamedTuple):
    collection: str
    namespace: str | None
    name: str | None
    subresource: str | None


def now() -> str:
    """A metav1.Time, as the server writes it (RFC 3339, seconds, UTC)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- Status bodies (apimachinery/pkg/api/errors/errors.go) ------------------------------


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


class ApiError(Exception):
    """An answer other than success, with its Status body."""

    def __init__(self, code: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("message", ""))
        self.code = code
        self.body = body


def _quote(value: str) -> str:
    """Go's %q for ordinary strings."""
    return json.dumps(value, ensure_ascii=False)


def _details(info: Collection, name: str, **extra: Any) -> dict[str, Any]:
    found = {"name": name, "group": info.group, "kind": info.resource, **extra}
    return {k: v for k, v in found.items() if v not in ("", None, [])}


def not_found(info: Collection, name: str) -> ApiError:
    return ApiError(404, status(404, "NotFound", f"{info.qualified} {_quote(name)} not found", _details(info, name)))


def already_exists(info: Collection, name: str) -> ApiError:
    return ApiError(409, status(409, "AlreadyExists", f"{info.qualified} {_quote(name)} already exists",
                                _details(info, name)))


def conflict(info: Collection, name: str, why: str = OPTIMISTIC_LOCK) -> ApiError:
    return ApiError(409, status(409, "Conflict", f"Operation cannot be fulfilled on {info.qualified} {_quote(name)}: {why}",
                                _details(info, name)))


def _omit_empty_maps(meta: dict[str, Any]) -> None:
    """Empty labels and annotations are not stored (Go maps with omitempty)."""
    for field in ("labels", "annotations"):
        if meta.get(field) == {}:
            del meta[field]


def _json_type(value: Any) -> str:
    """What Go's encoding/json calls a JSON value's type in its errors."""
    return {list: "array", str: "string", bool: "bool", int: "number", float: "number"}.get(type(value), "object")


def bad_request(message: str) -> ApiError:
    return ApiError(400, status(400, "BadRequest", message))


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, status(405, "MethodNotAllowed", message, {}))


def internal(message: str) -> ApiError:
    """A plain (non-Status) error inside the apiserver: 500 with an empty reason (ErrorToAPIStatus)."""
    return ApiError(500, status(500, "", message))


class GoRaw(str):
    """A bad value already formatted the Go way (e.g. `0x0` for a uint64 zero)."""


_NO_VALUE = object()
_FIELD_TYPES = {
    "FieldValueRequired": "Required value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueInvalid": "Invalid value",
    "FieldValueDuplicate": "Duplicate value",
}


class FieldError(NamedTuple):
    """`field.Error` (apimachinery/pkg/util/validation/field/errors.go)."""

    type: str
    field: str
    detail: str = ""
    value: Any = _NO_VALUE

    def body(self) -> str:
        text = _FIELD_TYPES[self.type]
        if self.type in ("FieldValueInvalid", "FieldValueDuplicate") and self.value is not _NO_VALUE:
            text += ": " + _go_value(self.value)
        if self.detail:
            text += ": " + self.detail
        return text

    def message(self) -> str:
        return f"{self.field}: {self.body()}"


def required(field: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", field, detail)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", field, detail)


def invalid_value(field: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", field, detail, value)


def _go_value(value: Any) -> str:
    if isinstance(value, GoRaw):
        return str(value)
    if value is None:
        return '"null"'  # ErrorBody turns a nil value into the string "null", then %q
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return _quote(value)
    return json.dumps(value, sort_keys=True)


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    """`errors.NewInvalid`: 422, `Kind "name" is invalid: <aggregate>`, one cause per field error."""
    qualified_kind = f"{kind}.{group}" if group else kind
    messages: list[str] = []
    for error in errors:
        if error.message() not in messages:
            messages.append(error.message())
    aggregate = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    details: dict[str, Any] = {"name": name, "group": group, "kind": kind,
                               "causes": [{"reason": e.type, "message": e.body(), "field": e.field} for e in errors]}
    details = {k: v for k, v in details.items() if v not in ("", None, [])}
    return ApiError(422, status(422, "Invalid", f"{qualified_kind} {_quote(name)} is invalid: {aggregate}", details))


# -- selectors ------------------------------------------------------------------------------

_KEY = r"[A-Za-z0-9](?:[A-Za-z0-9_./-]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?)?"
_EXISTS = re.compile(rf"^\s*(!?)\s*({_KEY})\s*$")
_SET = re.compile(rf"^\s*({_KEY})\s+(in|notin)\s*\(([^()]*)\)\s*$")
_COMPARE = re.compile(rf"^\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*$")


class Requirement(NamedTuple):
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator == "=":
            return present and value == self.values[0]
        if self.operator == "!=":
            return not present or value != self.values[0]
        if self.operator == "in":
            return present and value in self.values
        if self.operator == "notin":
            return not present or value not in self.values
        if self.operator == "exists":
            return present
        return not present


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def parse_label_selector(text: str) -> list[Requirement]:
    """Parse a label selector as `labels.Parse` does; ValueError when it is malformed."""
    if not text.strip():
        return []
    requirements = []
    for part in _split_top_level(text):
        if match := _SET.match(part):
            values = tuple(v.strip() for v in match.group(3).split(","))
            if values == ("",):
                raise ValueError(f"for 'in', 'notin' operators, values set can't be empty: {part.strip()!r}")
            requirements.append(Requirement(match.group(1), match.group(2), values))
        elif match := _COMPARE.match(part):
            operator = "=" if match.group(2) in ("=", "==") else "!="
            requirements.append(Requirement(match.group(1), operator, (match.group(3),)))
        elif match := _EXISTS.match(part):
            requirements.append(Requirement(match.group(2), "!" if match.group(1) else "exists"))
        elif found := re.match(rf"^\s*{_KEY}\s+(?:in|notin)\s+([^\s(]+)", part):
            raise ValueError(f"unable to parse requirement: found '{found.group(1)}' expected: '('")
        else:
            raise ValueError(f"unable to parse requirement: {part.strip()!r}")
    return requirements


class FieldTerm(NamedTuple):
    field: str
    equal: bool
    value: str


def parse_field_selector(text: str, info: Collection) -> list[FieldTerm]:
    terms = []
    for part in text.split(","):
        if not part.strip():
            continue
        match = re.match(r"^\s*([^=!\s]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field = match.group(1)
        if field == "spec.host" and info.kind == "Pod":
            field = "spec.nodeName"
        if field not in info.field_labels:
            if info.kind == "Pod":
                raise bad_request(f"field label not supported: {field}")
            raise bad_request(f'{_quote(field)} is not a known field selector: only "metadata.name", "metadata.namespace"')
        terms.append(FieldTerm(field, match.group(2) != "!=", match.group(3)))
    return terms


def field_value(obj: dict[str, Any], field: str) -> str:
    if field == "status.podIPs":
        ips = (obj.get("status") or {}).get("podIPs") or []
        return ips[0].get("ip", "") if ips else ""
    current: Any = obj
    for part in field.split("."):
        current = current.get(part) if isinstance(current, dict) else None
    if field == "spec.hostNetwork":
        return "true" if current else "false"
    return "" if current is None else str(current)


class Scope(NamedTuple):
    """What a list or watch selects: a namespace, label requirements, field terms."""

    namespace: str | None = None
    labels: tuple[Requirement, ...] = ()
    fields: tuple[FieldTerm, ...] = ()

    @property
    def everything(self) -> bool:
        return self.namespace is None and not self.labels and not self.fields

    def matches(self, obj: dict[str, Any]) -> bool:
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        labels = meta.get("labels") or {}
        if not all(r.matches(labels) for r in self.labels):
            return False
        return all((field_value(obj, t.field) == t.value) == t.equal for t in self.fields)


# -- patches --------------------------------------------------------------------------------

# patchMergeKey of the lists a Pod (and any object's metadata) merges by key in a strategic
# merge patch (k8s.io/api/core/v1/types.go); every other list is replaced.
_CONTAINER_KEYS = {"env": "name", "ports": "containerPort", "volumeMounts": "mountPath", "volumeDevices": "devicePath"}
MERGE_KEYS: dict[tuple[str, ...], str] = {("metadata", "ownerReferences"): "uid"}
for _list in ("containers", "initContainers", "ephemeralContainers"):
    MERGE_KEYS[("spec", _list)] = "name"
    for _field, _key in _CONTAINER_KEYS.items():
        MERGE_KEYS[("spec", _list, "*", _field)] = _key
MERGE_KEYS.update({
    ("spec", "volumes"): "name",
    ("spec", "imagePullSecrets"): "name",
    ("spec", "hostAliases"): "ip",
    ("spec", "schedulingGates"): "name",
    ("spec", "resourceClaims"): "name",
    ("spec", "topologySpreadConstraints"): "topologyKey",
    ("status", "conditions"): "type",
    ("status", "podIPs"): "ip",
    ("status", "hostIPs"): "ip",
    ("status", "resourceClaimStatuses"): "name",
})
PRIMITIVE_MERGE_LISTS = {("metadata", "finalizers")}

_DELETE = object()


def _go_map(value: dict[str, Any]) -> str:
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(value.items())) + "]"


def _strip(value: Any) -> Any:
    """A patch value as stored: without `$` directives and null members."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$") and v is not None}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def strategic_merge(original: Any, patch: Any, path: tuple[str, ...] = ()) -> Any:
    """The strategic-merge-patch subset pods need: maps merge recursively, null deletes,
    keyed lists merge by key (`$patch: delete` removes an item, `$patch: replace` replaces),
    `$setElementOrder/x`, `$deleteFromPrimitiveList/x`, `$retainKeys`; other lists are replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip({k: v for k, v in patch.items() if k != "$patch"})
    if directive == "delete":
        return _DELETE
    if directive is not None:
        raise bad_request(f"Unknown patch type: {directive} in map: {_go_map(patch)}")
    result = copy.deepcopy(original) if isinstance(original, dict) else {}
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():  # directives first, as the real merge does
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            if isinstance(result.get(name), list) and isinstance(value, list):
                result[name] = [item for item in result[name] if item not in value]
        elif key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value if isinstance(value, list) else []
    for key, value in patch.items():
        if key.startswith("$"):
            if key in ("$retainKeys",) or key.startswith(("$deleteFromPrimitiveList/", "$setElementOrder/")):
                continue
            raise bad_request(f"unknown patch directive {key}")
        here = path + (key,)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_merge(result.get(key), value, here)
            if merged is _DELETE:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and here in MERGE_KEYS:
            result[key] = _merge_keyed_list(result.get(key), value, MERGE_KEYS[here], here)
        elif isinstance(value, list) and here in PRIMITIVE_MERGE_LISTS:
            merged_list = list(result.get(key) or [])
            merged_list += [item for item in value if item not in merged_list]
            result[key] = merged_list
        else:
            result[key] = _strip(value)
    for name, order in orders.items():
        if isinstance(result.get(name), list):
            result[name] = _reorder(result[name], order, MERGE_KEYS.get(path + (name,)))
    if isinstance(patch.get("$retainKeys"), list):
        keep = set(patch["$retainKeys"])
        result = {k: v for k, v in result.items() if k in keep}
    return result


def _merge_keyed_list(original: Any, items: list[Any], key: str, path: tuple[str, ...]) -> list[Any]:
    result = copy.deepcopy(original) if isinstance(original, list) else []
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in items):
        return [_strip(item) for item in items if not (isinstance(item, dict) and item.get("$patch") == "replace")]
    for item in items:
        if not isinstance(item, dict):
            raise internal(f"unable to find api field in struct {path[-1]} for the json field {item!r}")
        if key not in item:
            raise internal(f"map: {_go_map(item)} does not contain declared merge key: {key}")
        found = [i for i, existing in enumerate(result) if isinstance(existing, dict) and existing.get(key) == item[key]]
        if item.get("$patch") == "delete":
            result = [existing for i, existing in enumerate(result) if i not in found]
        elif found:
            result[found[0]] = strategic_merge(result[found[0]], item, path + ("*",))
        else:
            result.append(_strip(item))
    return result


def _reorder(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def identity(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [identity(entry) for entry in order]
    ranked = [item for item in items if identity(item) in wanted]
    ranked.sort(key=lambda item: wanted.index(identity(item)))
    return ranked + [item for item in items if identity(item) not in wanted]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(document: dict[str, Any], operations: Any) -> Any:
    """RFC 6902 JSON patch; a failing operation (a `test` included) is the real server's
    422: `NewGenericServerResponse(422, ...)` keeps only its generic message."""
    import jsonpatch  # type: ignore[import-untyped]  # a test dependency

    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        return jsonpatch.JsonPatch(operations).apply(document, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError, TypeError,
            ValueError) as exc:
        raise ApiError(422, status(422, "Invalid", "the server rejected our request due to an error in our request",
                                   {})) from exc


# -- pod strategy (pkg/registry/core/pod/strategy.go, pkg/apis/core/v1/defaults.go) ---------

_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$")
_SUFFIX = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1), "k": Fraction(10**3),
           "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12), "P": Fraction(10**15),
           "E": Fraction(10**18), "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30),
           "Ti": Fraction(2**40), "Pi": Fraction(2**50), "Ei": Fraction(2**60)}


def quantity(text: Any) -> Fraction | str:
    match = _QUANTITY.match(str(text))
    if not match:
        return str(text)
    number, suffix = Fraction(match.group(1)), match.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:])
    return number * _SUFFIX[suffix]


def pod_qos(spec: dict[str, Any]) -> str:
    """`qos.GetPodQOS` for cpu and memory (requests already defaulted from limits)."""
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    anything, guaranteed = False, bool(containers)
    for container in containers:
        resources = container.get("resources") or {}
        requests = {k: v for k, v in (resources.get("requests") or {}).items() if k in ("cpu", "memory")}
        limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in ("cpu", "memory")}
        anything = anything or bool(requests or limits)
        if set(limits) != {"cpu", "memory"}:
            guaranteed = False
        if any(quantity(requests.get(k, limits.get(k))) != quantity(limits.get(k)) for k in limits):
            guaranteed = False
    if not anything:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _pulls_always(image: str) -> bool:
    """SetDefaults_Container: `Always` for `:latest` or no tag (and no digest)."""
    name = image.split("@", 1)[0]
    if "@" in image and ":" not in name.rsplit("/", 1)[-1]:
        return False
    last = name.rsplit("/", 1)[-1]
    return ":" not in last or last.rsplit(":", 1)[1] == "latest"


def default_pod(pod: dict[str, Any]) -> None:
    """The defaulting the real server applies when it decodes a Pod (a subset, in place)."""
    spec = pod.setdefault("spec", {})
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or []:
            if "imagePullPolicy" not in container:
                container["imagePullPolicy"] = "Always" if _pulls_always(container.get("image") or "") else "IfNotPresent"
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            resources = container.setdefault("resources", {})
            if resources.get("limits"):
                requests = resources.setdefault("requests", {})
                for name, amount in resources["limits"].items():
                    requests.setdefault(name, amount)
            for port in container.get("ports") or []:
                port.setdefault("protocol", "TCP")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for condition in (pod.get("status") or {}).get("conditions") or []:
        condition.setdefault("lastProbeTime", None)  # a zero metav1.Time is serialised as null
        condition.setdefault("lastTransitionTime", None)


def admit_pod_create(pod: dict[str, Any]) -> None:
    """What the default admission plugins add on create (Priority, DefaultTolerationSeconds)."""
    spec = pod["spec"]
    if "priorityClassName" not in spec:
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(t.get("key") == taint and t.get("effect") in (None, "", "NoExecute") for t in tolerations):
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})


def validate_pod_create(pod: dict[str, Any]) -> list[FieldError]:
    spec = pod.get("spec") or {}
    errors = validate_containers(spec)
    if spec.get("ephemeralContainers"):
        errors.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errors.append(forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared"))
    return errors


def validate_containers(spec: dict[str, Any]) -> list[FieldError]:
    """`ValidatePodSpec`'s container checks (a subset), made on create and again on every update."""
    errors = []
    if not spec.get("containers"):
        errors.append(required("spec.containers"))
    names: set[str] = set()
    for field in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(field) or []):
            path = f"spec.{field}[{index}]"
            name = container.get("name") or ""
            if not name:
                errors.append(required(path + ".name"))
            elif name in names:
                errors.append(FieldError("FieldValueDuplicate", path + ".name", "", name))
            names.add(name)
            if not container.get("image"):
                errors.append(required(path + ".image"))
    return errors


# validation.go: updatablePodSpecFields
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def _differences(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in list(old) + [k for k in new if k not in old]:
            if old.get(key) != new.get(key):
                lines += _differences(old.get(key), new.get(key), f"{path}.{key}")
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new)) if a != b for line in _differences(a, b, f"{path}[{i}]")]
    return [f"  {path}: {json.dumps(old)} -> {json.dumps(new)}"]


def validate_pod_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """`ValidatePodUpdate`'s spec rules (the diff after the message is not Go's cmp.Diff).

    The new spec is validated first, as on create, so an image emptied by an update is reported
    twice (two causes, one message), and removing the last container adds `spec.containers:
    Required value`, as kube-apiserver v1.32 does (tests/e2e/test_fake_vs_real.py)."""
    errors: list[FieldError] = validate_containers(new.get("spec") or {})
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    for field in ("containers", "initContainers"):
        new_list, old_list = new_spec.get(field) or [], old_spec.get(field) or []
        if len(new_list) != len(old_list):
            return errors + [forbidden(f"spec.{field}", "pod updates may not add or remove containers")]
        for index, container in enumerate(new_list):
            image = container.get("image") or ""
            if not image:
                errors.append(required(f"spec.{field}[{index}].image"))
            if image.strip() != image:
                errors.append(invalid_value(f"spec.{field}[{index}].image", image,
                                            "must not have leading or trailing whitespace"))
    new_deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if new_deadline is not None:
        if not 0 <= new_deadline <= 2**31 - 1:
            return errors + [invalid_value("spec.activeDeadlineSeconds", new_deadline,
                                           f"must be between 0 and {2**31 - 1}, inclusive")]
        if old_deadline is not None and old_deadline < new_deadline:
            return errors + [invalid_value("spec.activeDeadlineSeconds", new_deadline,
                                           "must be less than or equal to previous value")]
    elif old_deadline is not None:
        errors.append(invalid_value("spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil value"))
    if new_spec == old_spec:
        return errors
    munged = copy.deepcopy(new_spec)
    for field in ("containers", "initContainers"):
        for container, before in zip(munged.get(field) or [], old_spec.get(field) or []):
            container["image"] = before.get("image")
    for field in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        munged.pop(field, None)
        if field in old_spec:
            munged[field] = copy.deepcopy(old_spec[field])
    old_tolerations, new_tolerations = old_spec.get("tolerations") or [], new_spec.get("tolerations") or []
    if not all(t in new_tolerations for t in old_tolerations):  # not only additions: leave the change visible
        munged["tolerations"] = copy.deepcopy(new_spec.get("tolerations"))
    old_gates, new_gates = old_spec.get("schedulingGates") or [], new_spec.get("schedulingGates") or []
    if not all(g in old_gates for g in new_gates):  # not only removals
        munged["schedulingGates"] = copy.deepcopy(new_spec.get("schedulingGates"))
    grace = old_spec.get("terminationGracePeriodSeconds")
    if grace is not None and grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = grace
    munged = {k: v for k, v in munged.items() if v is not None}
    if munged != {k: v for k, v in old_spec.items() if v is not None}:
        diff = "\n".join(_differences(old_spec, munged, "spec"))
        errors.append(forbidden("spec", "pod updates may not change fields other than "
                                + ",".join(UPDATABLE_POD_SPEC_FIELDS) + "\n" + diff))
    return errors


def validate_lease(lease: dict[str, Any]) -> list[FieldError]:
    """`ValidateLeaseSpec` (pkg/apis/coordination/validation)."""
    spec = lease.get("spec") or {}
    errors = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errors.append(invalid_value("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        errors.append(invalid_value("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    return errors


_NAME_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"  # apiserver/pkg/storage/names: utilrand alphanums


def _core_discovery() -> dict[str, Any]:
    """`GET /api/v1`: the APIResourceList of the core resources this fake serves."""
    resources = []
    for info in COLLECTIONS.values():
        if info.group:
            continue
        verbs = ["get", "list", "watch"] + (["create", "delete", "patch", "update"] if info.writable else [])
        resources.append({"name": info.resource, "singularName": info.kind.lower(), "namespaced": True,
                          "kind": info.kind, "verbs": sorted(verbs)})
        resources += [{"name": f"{info.resource}/{sub}", "singularName": "", "namespaced": True, "kind": info.kind,
                       "verbs": ["get", "patch", "update"]} for sub in info.subresources]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": resources}


def _route(path: str) -> Route | None:
    for name, info in COLLECTIONS.items():
        prefix = info.prefix + "/"
        if not path.startswith(prefix):
            continue
        parts = path[len(prefix):].split("/")
        if parts == [info.resource]:
            return Route(name, None, None, None)
        if len(parts) >= 3 and parts[0] == "namespaces" and parts[1] and parts[2] == info.resource:
            if len(parts) == 3:
                return Route(name, parts[1], None, None)
            if len(parts) in (4, 5) and parts[3]:
                return Route(name, parts[1], parts[3], parts[4] if len(parts) == 5 else None)
    return None


def _group_not_served(path: str) -> bool:
    """A path under /apis/ of a group the fake has no collection of: kube-apiserver's mux answers it, in text."""
    segments = path.split("/")
    return len(segments) > 2 and segments[1] == "apis" and segments[2] not in {i.group for i in COLLECTIONS.values()}


FAILURES = {403: "Forbidden", 404: "NotFound", 409: "Conflict", 500: ""}  # what fail_once can answer


def _rbac_forbidden(route: Route, method: str, is_watch: bool) -> dict[str, Any]:
    """RBAC's 403 wording (the fake knows no users: a made-up one)."""
    info = COLLECTIONS[route.collection]
    verb = "watch" if is_watch else {"GET": "get" if route.name else "list", "POST": "create",
                                     "PUT": "update"}.get(method, method.lower())
    scope = f'in the namespace "{route.namespace}"' if route.namespace else "at the cluster scope"
    named = f' "{route.name}"' if route.name else ""
    resource = f"{info.resource}/{route.subresource}" if route.subresource else info.resource
    return status(403, "Forbidden", (
        f'{info.qualified}{named} is forbidden: User "system:serviceaccount:fake:fake" cannot '
        f'{verb} resource "{resource}" in API group "{info.group}" {scope}'))


class FakeApiServer:
    """The TEST FAKE API server; use as a context manager (`with FakeApiServer() as api: api.url`).

    `kubelet=False` leaves pods alone (no fake kubelet thread); `kubelet_start_delay` and
    `kubelet_restart_delay` set how long the fake kubelet takes (seconds). `tls=(certfile,
    keyfile)` serves HTTPS, as every real API server does (clients then take the CA)."""

    def __init__(self, *, vpa_crd: bool = True, gone_as_http: bool = False, kubelet: bool = True,
                 kubelet_start_delay: float = 0.05, kubelet_restart_delay: float = 0.05,
                 tls: tuple[str, str] | None = None) -> None:
        self.gone_as_http = gone_as_http
        self._tls: ssl.SSLContext | None = None
        if tls is not None:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.load_cert_chain(*tls)
        self.calls: list[Call] = []
        self.gone_answers = 0  # watches answered 410 Gone, either way
        self._cond = threading.Condition()
        self._version = 1000
        self._floor = self._version  # watching from below this is 410 Gone
        self._objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {name: {} for name in COLLECTIONS}
        self._history: list[Event] = []
        self._crd = vpa_crd
        self._unavailable = False
        self._generation = 0  # bumped by drop_watches(): older watch streams are cut
        self._bookmarks = 0  # bumped by bookmark()
        self._closing = False
        self._down = False  # crash() until restart(): nothing listens on the port
        self._lists_held = False
        self._forbidden = 0  # requests still to answer 403 after restart(forbidden=N)
        self._crd_unready = 0  # VPA requests still to answer 503 + Retry-After after restart(crd_unready=N)
        self._fail_once: dict[tuple[str, str], int] = {}  # (method, path) -> the status of its next answer
        self.lists_waiting = 0  # list requests held by hold_lists() now
        self._connections: set[socket.socket] = set()  # open client connections, reset by crash()
        self._random = random.Random()
        self.kubelet = FakeKubelet(self, enabled=kubelet, start_delay=kubelet_start_delay,
                                   restart_delay=kubelet_restart_delay)
        self._listen(0)

    # -- lifecycle --------------------------------------------------------------------

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        self.kubelet.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self.kubelet.stop()
        if not self._down:
            self._stop_listening()

    def _listen(self, port: int) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))  # (SO_REUSEADDR: a restart rebinds)
        if self._tls is not None:  # the handshake happens on a connection's first read, in its own thread
            self._server.socket = self._tls.wrap_socket(self._server.socket, server_side=True,
                                                        do_handshake_on_connect=False)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def _stop_listening(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _connection(self, connection: socket.socket, alive: bool) -> None:
        with self._cond:
            (self._connections.add if alive else self._connections.discard)(connection)

    @property
    def url(self) -> str:
        return f"{'https' if self._tls is not None else 'http'}://127.0.0.1:{self._server.server_port}"

    @property
    def cond(self) -> threading.Condition:
        """The lock (and change notification) of the store; the fake kubelet syncs under it."""
        return self._cond

    @property
    def closing(self) -> bool:
        return self._closing

    # -- test controls ------------------------------------------------------------------

    @property
    def resource_version(self) -> str:
        with self._cond:
            return str(self._version)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an object as is (by kind, namespace, name); returns the stored copy.

        No defaulting, validation or kubelet start: a raw store write (see `add_pod`)."""
        collection = BY_KIND[obj["kind"]]
        stored = copy.deepcopy(obj)
        meta = stored.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        key = (meta["namespace"], meta["name"])
        with self._cond:
            if collection == VPA and not self._crd:
                raise LookupError("the VPA CRD is not installed")
            old = self._objects[collection].get(key)
            meta["uid"] = old["metadata"]["uid"] if old else str(uuid.uuid4())
            meta.setdefault("creationTimestamp", "2024-01-01T00:00:00Z")
            self._record(collection, "MODIFIED" if old else "ADDED", stored, old)
            self._objects[collection][key] = stored
            return copy.deepcopy(stored)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        collection = BY_KIND[kind]
        with self._cond:
            stored = self._objects[collection].pop((namespace, name))
            self._record(collection, "DELETED", stored, copy.deepcopy(stored))

    def add_pod(self, pod: dict[str, Any], *, start: bool = True) -> dict[str, Any]:
        """Create a pod in the store as `POST .../pods` would (defaults, uid, generation,
        Pending status, validation), without an HTTP call; returns the stored copy.

        With `start=False` the fake kubelet never touches the pod and its `status` is kept
        as given (a pod on a node the fake does not run)."""
        body = copy.deepcopy(pod)
        body.setdefault("apiVersion", "v1")
        body.setdefault("kind", "Pod")
        namespace = (body.get("metadata") or {}).get("namespace") or "default"
        given_status = body.get("status")
        with self._cond:
            if not start:
                self.kubelet.ignore(namespace, (body.get("metadata") or {}).get("name", ""))
            _, created = self._create(COLLECTIONS[POD], namespace, body, {}, keep_status=None if start else given_status)
            return created

    def get(self, collection: str, namespace: str, name: str) -> dict[str, Any]:
        """A deep copy of a stored object, as `GET` answers it (KeyError when absent)."""
        with self._cond:
            return self._wire(collection, self._objects[collection][(namespace, name)], False)

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        """A deep copy of a stored pod (KeyError when absent)."""
        return self.get(POD, namespace, name)

    def pods(self, namespace: str | None = None) -> list[dict[str, Any]]:
        with self._cond:
            return [self._wire(POD, obj, False) for (ns, _), obj in sorted(self._objects[POD].items())
                    if namespace is None or ns == namespace]

    def wait_for_pod(self, namespace: str, name: str, check: Callable[[dict[str, Any]], bool],
                     timeout: float = 5.0) -> dict[str, Any]:
        """Wait (bounded) until `check(pod)` holds; returns that pod, or raises AssertionError
        with the last state seen. Wakes on every store change: no polling sleeps."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] | None = None
        with self._cond:
            while True:
                stored = self._objects[POD].get((namespace, name))
                last = self._wire(POD, stored, False) if stored is not None else None
                if last is not None and check(last):
                    return last
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"pod {namespace}/{name} never satisfied the check; last seen: "
                                         + json.dumps(last, indent=1)[:4000])
                self._cond.wait(left)

    def writes(self, path_contains: str | None = None, method: str | None = None) -> list[Call]:
        """The HTTP writes (POST, PUT, PATCH, DELETE) the fake answered, in order."""
        return [c for c in list(self.calls) if c.method in WRITE_METHODS
                and (method is None or c.method == method.upper())
                and (path_contains is None or path_contains in c.path)]

    def compact(self) -> None:
        """Forget the history: watching from any resourceVersion older than now is 410 Gone."""
        with self._cond:
            self._floor = self._version
            self._history.clear()
            self._cond.notify_all()

    def bookmark(self) -> None:
        """Send a BOOKMARK with the current resourceVersion to watches that allow bookmarks."""
        with self._cond:
            self._bookmarks += 1
            self._cond.notify_all()

    def drop_watches(self) -> None:
        """Cut every open watch connection mid-stream (no terminating chunk)."""
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def set_unavailable(self, unavailable: bool) -> None:
        """Answer every request 503 (and cut open watches) until set back."""
        with self._cond:
            self._unavailable = unavailable
            if unavailable:
                self._generation += 1
            self._cond.notify_all()

    def crash(self) -> None:
        """The API server process goes away: open connections are reset and new ones refused
        (nothing listens on the port) until `restart()`. The store survives, as etcd does."""
        with self._cond:
            if self._down:
                return
            self._down = True
            self._generation += 1  # open watch streams end
            self._cond.notify_all()
        self._stop_listening()
        with self._cond:
            connections = list(self._connections)
        for connection in connections:  # kept-alive connections die with the process
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def restart(self, forbidden: int = 0, crd_unready: int = 0) -> None:
        """Listen again on the same port, as a freshly started API server. Its first writes (its
        identity Lease, the `kubernetes` Endpoints: objects this fake does not keep) move the
        resourceVersion on, and its watch cache begins there, so a watch resumed from any
        resourceVersion seen before is 410 Gone (the way `gone_as_http` says); lists work.
        (A real one may also resume such a watch from etcd's history while its watch cache
        starts, until etcd is compacted: the fake plays the case that needs a relist.)
        The first `forbidden` requests are answered 403 Forbidden (an authorizer not synced yet); the
        first `crd_unready` requests for VPAs 503 with `Retry-After: 5` (a CRD's path not installed yet)."""
        port = self._server.server_port
        with self._cond:
            if not self._down:
                raise RuntimeError("restart() follows crash()")
            self._version += 1
            self._floor = self._version
            self._history.clear()
            self._forbidden = forbidden
            self._crd_unready = crd_unready
        for attempt in range(50):
            try:
                self._listen(port)
                break
            except OSError:  # (the old socket not released yet)
                if attempt == 49:
                    raise
                time.sleep(0.02)
        with self._cond:
            self._down = False
        self._thread.start()

    def fail_once(self, method: str, path: str, code: int) -> None:
        """Answer the next `method` request for `path` (no query) with `code` instead of serving it.
        404 deletes the object first (another client deleted it between the caller's read and
        this request), so the store, the watch and the answer agree."""
        if code not in FAILURES:
            raise ValueError(f"fail_once: {code} is not one of {sorted(FAILURES)}")
        with self._cond:
            self._fail_once[(method.upper(), path)] = code

    @property
    def failures_pending(self) -> list[tuple[str, str, int]]:
        """The `fail_once` failures not consumed yet: (method, path, code)."""
        with self._cond:
            return [(method, path, code) for (method, path), code in self._fail_once.items()]

    def hold_lists(self, held: bool = True) -> None:
        """While held, list requests (not watches, not single GETs) wait, then answer what is stored
        when released: a slow API server."""
        with self._cond:
            self._lists_held = held
            self._cond.notify_all()

    def install_crd(self) -> None:
        with self._cond:
            self._crd = True

    def remove_crd(self) -> None:
        """Delete the CRD: its objects go, open VPA watches end, the path answers 404."""
        with self._cond:
            self._crd = False
            self._objects[VPA].clear()
            self._history = [e for e in self._history if e.collection != VPA]
            self._generation += 1
            self._cond.notify_all()

    def list_calls(self, collection: str) -> int:
        return sum(1 for c in list(self.calls) if c.collection == collection and not c.watch and c.status == 200
                   and c.method == "GET" and c.name is None)

    def watch_versions(self, collection: str) -> list[str | None]:
        """The resourceVersion of every watch request on a collection, in order."""
        return [c.resource_version for c in list(self.calls) if c.collection == collection and c.watch]

    # -- the store (callers hold self._cond) ------------------------------------------------

    def _record(self, collection: str, kind: str, stored: dict[str, Any], previous: dict[str, Any] | None = None) -> None:
        self._version += 1
        stored["metadata"]["resourceVersion"] = str(self._version)
        self._history.append(Event(self._version, collection, kind, copy.deepcopy(stored),
                                   copy.deepcopy(previous) if previous is not None else None))
        self._cond.notify_all()

    def _wire(self, collection: str, obj: dict[str, Any], in_list: bool) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        info = COLLECTIONS[collection]
        if in_list and info.builtin:
            out.pop("apiVersion", None)
            out.pop("kind", None)
        else:
            out["apiVersion"], out["kind"] = info.api_version, info.kind
        return out

    @staticmethod
    def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
        """Equal but for resourceVersion (and apiVersion/kind, which are not stored data)."""
        def strip(obj: dict[str, Any]) -> dict[str, Any]:
            out = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
            out["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"}
            return out
        return strip(a) == strip(b)

    def kubelet_pods(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The live pod objects (for the fake kubelet, under `cond`; do not mutate)."""
        return self._objects[POD]

    def kubelet_commit(self, namespace: str, name: str, pod: dict[str, Any]) -> str | None:
        """Store the fake kubelet's (or scheduler's) version of a pod: a MODIFIED event and a
        new resourceVersion, or nothing when it changes nothing. Returns the new resourceVersion."""
        old = self._objects[POD].get((namespace, name))
        if old is None or self._same(old, pod):
            return None
        stored = copy.deepcopy(pod)
        self._record(POD, "MODIFIED", stored, old)
        self._objects[POD][(namespace, name)] = stored
        return str(stored["metadata"]["resourceVersion"])

    # -- REST semantics (callers hold self._cond) ------------------------------------------

    def _scope(self, info: Collection, namespace: str | None, params: dict[str, str], name: str | None) -> Scope:
        try:
            labels = tuple(parse_label_selector(params.get("labelSelector", "")))
        except ValueError as exc:
            raise bad_request(str(exc)) from exc
        fields = tuple(parse_field_selector(params.get("fieldSelector", ""), info))
        if name is not None:
            fields += (FieldTerm("metadata.name", True, name),)
        return Scope(namespace, labels, fields)

    def _list(self, collection: str, scope: Scope) -> dict[str, Any]:
        info = COLLECTIONS[collection]
        items = [self._wire(collection, obj, True) for _, obj in sorted(self._objects[collection].items())
                 if scope.matches(obj)]
        return {"apiVersion": info.api_version, "kind": info.kind + "List",
                "metadata": {"resourceVersion": str(self._version)}, "items": items}

    def _check_type(self, info: Collection, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request(f"json: cannot unmarshal {type(body).__name__} into Go value of type {info.kind}")
        if body.get("apiVersion", info.api_version) != info.api_version:
            raise bad_request(f"the API version in the data ({body['apiVersion']}) does not match the expected API "
                              f"version ({info.api_version})")
        if body.get("kind", info.kind) != info.kind:
            raise bad_request(f"{body['kind']} in version {_quote(info.api_version.rsplit('/', 1)[-1])} cannot be handled "
                              f"as a {info.kind}: no kind {_quote(body['kind'])} is registered")
        checked: dict[str, Any] = copy.deepcopy(body)
        checked["apiVersion"], checked["kind"] = info.api_version, info.kind
        checked.setdefault("metadata", {})
        if not isinstance(checked["metadata"], dict):
            raise bad_request("metadata must be an object")
        return checked

    def _create(self, info: Collection, namespace: str, body: Any, params: dict[str, str],
                keep_status: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        collection = BY_KIND[info.kind]
        obj = self._check_type(info, body)
        meta = obj["metadata"]
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = namespace
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(self._random.choice(_NAME_SUFFIX) for _ in range(5))
        name = meta.get("name") or ""
        if not name:
            raise invalid(info.kind, info.group, "", [required("metadata.name", "name or generateName is required")])
        if meta.get("resourceVersion"):
            raise internal("resourceVersion should not be set on objects to be created")  # v1.32: a 500
        if (namespace, name) in self._objects[collection]:
            raise already_exists(info, name)
        # rest.BeforeCreate / FillObjectMetaSystemFields
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            meta.pop(field, None)
        _omit_empty_maps(meta)
        if collection == POD:
            default_pod(obj)
            admit_pod_create(obj)
            spec = obj["spec"]
            obj["status"] = {"phase": "Pending", "qosClass": pod_qos(spec)}
            if spec.get("schedulingGates"):
                obj["status"]["conditions"] = [{
                    "type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": now(),
                    "reason": "SchedulingGated", "message": "Scheduling is blocked due to non-empty scheduling gates"}]
            if keep_status is not None:
                obj["status"] = copy.deepcopy(keep_status)
            errors = validate_pod_create(obj)
        else:
            errors = validate_lease(obj) if collection == LEASE else []
        if errors:
            raise invalid(info.kind, info.group, name, errors)
        if params.get("dryRun") == "All":
            return 201, self._wire(collection, obj, False)
        self._record(collection, "ADDED", obj)
        self._objects[collection][(namespace, name)] = obj
        return 201, self._wire(collection, obj, False)

    def _update(self, info: Collection, namespace: str, name: str, subresource: str | None, params: dict[str, str],
                produce: Callable[[dict[str, Any]], Any], put: bool) -> tuple[int, dict[str, Any]]:
        """The generic store's Update, for PUT (`produce` returns the body) and PATCH
        (`produce` applies the patch to the current object)."""
        collection = BY_KIND[info.kind]
        key = (namespace, name)
        old = self._objects[collection].get(key)
        if old is None:
            if put and info.allow_create_on_update and subresource is None:
                body = produce({})
                checked = self._check_type(info, body)
                self._check_name(checked, namespace, name)
                checked["metadata"].pop("resourceVersion", None)
                return self._create(info, namespace, checked, params)
            raise not_found(info, name)
        current = self._wire(collection, old, False)
        new = self._check_type(info, produce(copy.deepcopy(current)))
        self._check_name(new, namespace, name)
        meta, old_meta = new["metadata"], old["metadata"]
        meta["namespace"] = namespace
        # Preconditions: the object's own uid for PUT; resourceVersion (store.go Update).
        if put and meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise conflict(info, name, f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
                                       f"{old_meta['uid']}")
        if not put and meta.get("uid", old_meta["uid"]) != old_meta["uid"]:
            raise invalid(info.kind, info.group, name, [invalid_value("metadata.uid", meta["uid"], "field is immutable")])
        version = str(meta.get("resourceVersion") or "")
        if not version:
            if not info.allow_unconditional_update:
                raise invalid(info.resource, info.group, name,
                              [invalid_value("metadata.resourceVersion", GoRaw("0x0"), "must be specified for an update")])
        elif not version.isdigit():
            raise internal(f'strconv.ParseUint: parsing {_quote(version)}: invalid syntax')  # v1.32: a 500
        elif version != old_meta["resourceVersion"]:
            raise conflict(info, name)
        # rest.BeforeUpdate: system fields come from the stored object.
        for field in ("uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(field, None)
            if field in old_meta:
                meta[field] = copy.deepcopy(old_meta[field])
        meta["resourceVersion"] = old_meta["resourceVersion"]
        _omit_empty_maps(meta)
        errors: list[FieldError] = []
        if collection == POD:
            default_pod(new)
            if subresource == "status":  # podStatusStrategy.PrepareForUpdate
                new["spec"] = copy.deepcopy(old["spec"])
                meta.pop("ownerReferences", None)
                if "ownerReferences" in old_meta:
                    meta["ownerReferences"] = copy.deepcopy(old_meta["ownerReferences"])
                new_status = new.setdefault("status", {})
                if not new_status.get("qosClass") and (old.get("status") or {}).get("qosClass"):
                    new_status["qosClass"] = old["status"]["qosClass"]
                before = (old.get("status") or {}).get("qosClass")
                if new_status.get("qosClass") != before:
                    errors.append(invalid_value("status.qosClass", new_status.get("qosClass"), "field is immutable"))
            else:  # podStrategy.PrepareForUpdate
                new["status"] = copy.deepcopy(old.get("status") or {})
                errors += validate_pod_update(new, old)
        elif collection == LEASE:
            errors += validate_lease(new)
        if errors:
            raise invalid(info.kind, info.group, name, errors)
        if self._same(old, new) or params.get("dryRun") == "All":
            return 200, self._wire(collection, new if params.get("dryRun") == "All" else old, False)
        self._record(collection, "MODIFIED", new, old)
        self._objects[collection][key] = new
        return 200, self._wire(collection, new, False)

    @staticmethod
    def _check_name(obj: dict[str, Any], namespace: str, name: str) -> None:
        meta = obj["metadata"]
        if meta.get("name") != name:
            raise bad_request(f"the name of the object ({meta.get('name') or ''}) does not match the name on the URL ({name})")
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")

    def _patch(self, info: Collection, namespace: str, name: str, subresource: str | None, params: dict[str, str],
               content_type: str, patch: Any) -> tuple[int, dict[str, Any]]:
        media = content_type.split(";", 1)[0].strip()
        accepted = list(PATCH_TYPES) if info.builtin else [t for t in PATCH_TYPES if t != STRATEGIC_MERGE_PATCH]
        if media == APPLY_PATCH:
            raise ApiError(415, status(415, "UnsupportedMediaType",
                                       "server-side apply (application/apply-patch+yaml) is not implemented by this test fake"))
        if media not in accepted:  # (kube-apiserver v1.32 says no more, though the handler lists the types)
            raise ApiError(415, status(415, "UnsupportedMediaType", "415: Unsupported Media Type"))
        if media == JSON_PATCH:
            def produce(current: dict[str, Any]) -> Any:
                return json_patch(current, patch)
        elif media == MERGE_PATCH:
            if not isinstance(patch, dict):
                raise bad_request(f"error decoding patch: json: cannot unmarshal {_json_type(patch)} into Go value of "
                                  "type map[string]interface {}")

            def produce(current: dict[str, Any]) -> Any:
                return merge_patch(current, patch)
        else:
            if not isinstance(patch, dict):
                raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")

            def produce(current: dict[str, Any]) -> Any:
                merged = strategic_merge(current, patch)
                return {} if merged is _DELETE else merged
        return self._update(info, namespace, name, subresource, params, produce, put=False)

    def _delete(self, info: Collection, namespace: str, name: str, params: dict[str, str],
                options: Any) -> tuple[int, dict[str, Any]]:
        collection = BY_KIND[info.kind]
        old = self._objects[collection].get((namespace, name))
        if old is None:
            raise not_found(info, name)
        preconditions = (options or {}).get("preconditions") or {} if isinstance(options, dict) else {}
        # rest.BeforeDelete: a Conflict on the Kind (`Pod "web"`, `Lease.coordination.k8s.io "x"`).
        on_kind = f"{info.kind}.{info.group}" if info.group else info.kind
        details = {k: v for k, v in {"name": name, "group": info.group, "kind": info.kind}.items() if v}
        for field, record, why in (("uid", "UID", "deleted and then recreated"),
                                   ("resourceVersion", "ResourceVersion", "modified")):
            if preconditions.get(field) and preconditions[field] != old["metadata"][field]:
                raise ApiError(409, status(409, "Conflict", f"Operation cannot be fulfilled on {on_kind} {_quote(name)}: "
                                           f"the {record} in the precondition ({preconditions[field]}) does not match the "
                                           f"{record} in record ({old['metadata'][field]}). The object might have been "
                                           f"{why}", details))
        if collection == POD:  # graceful deletion with no grace: stored marked first (a MODIFIED event)
            marked = copy.deepcopy(old)
            marked["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0)
            if params.get("dryRun") != "All":
                self._record(collection, "MODIFIED", marked, old)
            old = marked
        if params.get("dryRun") != "All":
            del self._objects[collection][(namespace, name)]
            self._record(collection, "DELETED", old, copy.deepcopy(old))
        if info.return_deleted_object:
            return 200, self._wire(collection, old, False)
        return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                     "details": _details(info, name, uid=old["metadata"]["uid"])}

    # -- serving --------------------------------------------------------------------------

    def _injected(self, code: int, route: Route, method: str, is_watch: bool) -> dict[str, Any]:
        """The Status a real server sends for `fail_once`'s code (under the lock)."""
        info = COLLECTIONS[route.collection]
        name = route.name or ""
        if code == 403:
            return _rbac_forbidden(route, method, is_watch)
        if code == 409:
            return conflict(info, name).body
        if code == 404:
            stored = self._objects[route.collection].pop((route.namespace or "", name), None)
            if stored is not None:
                self._record(route.collection, "DELETED", stored, copy.deepcopy(stored))
            return not_found(info, name).body
        return internal("etcdserver: request timed out").body  # (500: what etcd trouble looks like)

    @staticmethod
    def _read_body(handler: BaseHTTPRequestHandler) -> bytes:
        if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
            data = b""
            while True:
                size = int(handler.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    handler.rfile.readline()
                    return data
                data += handler.rfile.read(size)
                handler.rfile.readline()
        length = int(handler.headers.get("Content-Length") or 0)
        return handler.rfile.read(length) if length > 0 else b""

    def _serve(self, handler: BaseHTTPRequestHandler, method: str = "GET") -> None:
        parts = urlsplit(handler.path)
        params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        route = _route(parts.path)
        collection = route.collection if route else None
        is_watch = params.get("watch", "").lower() in ("true", "1")
        version = params.get("resourceVersion")
        content_type = handler.headers.get("Content-Type")
        user_agent = handler.headers.get("User-Agent")
        raw = self._read_body(handler) if method != "GET" else b""
        body: Any = None
        body_error: str | None = None
        if raw.strip():
            try:
                body = json.loads(raw)
            except ValueError as exc:
                body_error = f"error decoding request body: {exc}"

        def answer(code: int, payload: dict[str, Any] | str, headers: dict[str, str] | None = None) -> None:
            self.calls.append(Call(collection, is_watch, version, params, code, method, parts.path, content_type, body,
                                   route.namespace if route else None, route.name if route else None,
                                   route.subresource if route else None, user_agent))
            plain = isinstance(payload, str)  # (the mux's own 404 is text)
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            handler.send_response(code)
            handler.send_header("Content-Type", "text/plain; charset=utf-8" if plain else "application/json")
            handler.send_header("Content-Length", str(len(data)))
            for header, text in (headers or {}).items():
                handler.send_header(header, text)
            handler.end_headers()
            handler.wfile.write(data)

        with self._cond:
            if self._unavailable:
                return answer(503, status(503, "ServiceUnavailable", "the fake is unavailable"))
            if self._forbidden > 0 and route is not None and collection is not None:
                self._forbidden -= 1
                return answer(403, _rbac_forbidden(route, method, is_watch))
            injected = self._fail_once.pop((method, parts.path), None)
            if injected is not None:
                if route is None or collection is None:
                    return answer(injected, status(injected, FAILURES[injected], "injected by fail_once"))
                return answer(injected, self._injected(injected, route, method, is_watch))
            if self._crd_unready > 0 and collection == VPA:
                self._crd_unready -= 1  # kube-apiserver's words (its handler for paths not installed yet)
                return answer(503, status(503, "ServiceUnavailable", "the request has been made before all known "
                                          "HTTP paths have been installed, please try again",
                                          {"retryAfterSeconds": 5}), {"Retry-After": "5"})
            if method == "GET" and parts.path.rstrip("/") == "/api/v1":  # discovery (Helm asks before a `lookup`)
                return answer(200, _core_discovery())
            if route is None or collection is None or (collection == VPA and not self._crd):
                if collection == VPA or _group_not_served(parts.path):  # no handler for the group at all
                    return answer(404, "404 page not found\n")
                return answer(404, status(404, "NotFound", "the server could not find the requested resource"))
            info = COLLECTIONS[collection]
            if route.subresource is not None and route.subresource not in info.subresources:
                return answer(404, status(404, "NotFound", "the server could not find the requested resource"))
            try:
                if body_error is not None:
                    raise bad_request(body_error)
                if method == "GET" and not is_watch:
                    if route.name is None:
                        self.lists_waiting += 1
                        while self._lists_held and not self._closing:
                            self._cond.wait()
                        self.lists_waiting -= 1
                        return answer(200, self._list(collection, self._scope(info, route.namespace, params, None)))
                    stored = self._objects[collection].get((route.namespace or "", route.name))
                    if stored is None:
                        raise not_found(info, route.name)
                    return answer(200, self._wire(collection, stored, False))
                if method in WRITE_METHODS and not info.writable:
                    raise method_not_allowed(f"{method} on {info.qualified} is not implemented by this test fake")
                if method == "POST" and route.namespace is not None and route.name is None:
                    return answer(*self._create(info, route.namespace, body, params))
                if method == "PUT" and route.namespace is not None and route.name is not None:
                    def produce(current: dict[str, Any]) -> Any:
                        return body
                    return answer(*self._update(info, route.namespace, route.name, route.subresource, params, produce,
                                                put=True))
                if method == "PATCH" and route.namespace is not None and route.name is not None:
                    return answer(*self._patch(info, route.namespace, route.name, route.subresource, params,
                                               content_type or "", body))
                if method == "DELETE" and route.namespace is not None and route.name is not None and not route.subresource:
                    return answer(*self._delete(info, route.namespace, route.name, params, body))
                if method == "DELETE" and route.name is None:
                    raise method_not_allowed(f"deletecollection on {info.qualified} is not implemented by this test fake")
                if method != "GET":
                    raise method_not_allowed()
                scope = self._scope(info, route.namespace, params, route.name)
            except ApiError as error:
                return answer(error.code, error.body)
            start = int(version) if version and version.isdigit() and version != "0" else None
            gone = start is not None and start < self._floor
            self.gone_answers += gone
            if gone and self.gone_as_http:
                return answer(410, status(410, "Expired", f"too old resource version: {start} ({self._floor})"))
            self.calls.append(Call(collection, True, version, params, 200, method, parts.path, content_type, body,
                                   route.namespace, route.name, route.subresource, user_agent))
            generation, bookmarks = self._generation, self._bookmarks
            if start is None:  # no resourceVersion: synthetic ADDED for what exists, then changes
                initial = [{"type": "ADDED", "object": self._wire(collection, o, False)}
                           for _, o in sorted(self._objects[collection].items()) if scope.matches(o)]
                cursor = self._version
            else:
                initial, cursor = [], start
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        if gone:
            expired = status(410, "Expired", f"too old resource version: {start} ({self._floor})")
            self._chunk(handler, [{"type": "ERROR", "object": expired}])
            return self._chunk(handler, None)
        self._chunk(handler, initial)
        self._stream(handler, collection, cursor, generation, bookmarks, params, scope)

    def _event_line(self, collection: str, event: Event, scope: Scope) -> dict[str, Any] | None:
        """The line a watch with this scope gets for an event, if any (cacher.go convertToWatchEvent)."""
        if event.collection != collection:
            return None
        if scope.everything:
            return {"type": event.type, "object": self._wire(collection, event.object, False)}
        current = event.type != "DELETED" and scope.matches(event.object)
        before = event.previous is not None and scope.matches(event.previous)
        if current and not before:
            return {"type": "ADDED", "object": self._wire(collection, event.object, False)}
        if current:
            return {"type": event.type, "object": self._wire(collection, event.object, False)}
        if before and event.previous is not None:
            gone = self._wire(collection, event.previous, False)
            gone["metadata"]["resourceVersion"] = str(event.resource_version)
            return {"type": "DELETED", "object": gone}
        return None

    def _stream(self, handler: BaseHTTPRequestHandler, collection: str, cursor: int, generation: int,
                bookmarks: int, params: dict[str, str], scope: Scope | None = None) -> None:
        scope = scope or Scope()
        timeout = float(params.get("timeoutSeconds", "1800"))
        deadline = time.monotonic() + timeout
        allow_bookmarks = params.get("allowWatchBookmarks", "").lower() in ("true", "1")
        while True:
            if time.monotonic() >= deadline:
                return self._chunk(handler, None)
            with self._cond:
                pending = [e for e in self._history if e.resource_version > cursor]
                send_bookmark = allow_bookmarks and self._bookmarks != bookmarks
                cut = self._closing or self._generation != generation
                expired = cursor < self._floor and not cut
                if not (pending or send_bookmark or cut or expired):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return self._chunk(handler, None)
                    self._cond.wait(left)
                    continue
                bookmarks = self._bookmarks
                if pending:
                    cursor = pending[-1].resource_version
                lines = [line for e in pending if (line := self._event_line(collection, e, scope)) is not None]
                if send_bookmark:
                    cursor = self._version
                    info = COLLECTIONS[collection]
                    lines.append({"type": "BOOKMARK", "object": {"apiVersion": info.api_version, "kind": info.kind,
                                                                 "metadata": {"resourceVersion": str(cursor)}}})
                if expired:
                    self.gone_answers += 1
                    lines = [{"type": "ERROR", "object": status(410, "Expired", "too old resource version")}]
            if cut:
                handler.close_connection = True
                try:
                    handler.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self._chunk(handler, lines)
            if expired:
                return self._chunk(handler, None)

    @staticmethod
    def _chunk(handler: BaseHTTPRequestHandler, lines: list[dict[str, Any]] | None) -> None:
        """Write JSON lines as one HTTP chunk, or the terminating chunk for None."""
        if lines is None:
            handler.wfile.write(b"0\r\n\r\n")
        elif lines:
            data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.wfile.flush()


def _handler(fake: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in separate writes: without this, Nagle's algorithm
            # and the client's delayed ACK stall every keep-alive request by ~40 ms.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            fake._connection(self.connection, True)

        def finish(self) -> None:
            fake._connection(self.connection, False)
            try:
                super().finish()
            except OSError:  # (a connection crash() reset)
                pass

        def _run(self, method: str) -> None:
            try:
                fake._serve(self, method)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def do_GET(self) -> None:
            self._run("GET")

        def do_POST(self) -> None:
            self._run("POST")

        def do_PUT(self) -> None:
            self._run("PUT")

        def do_PATCH(self) -> None:
            self._run("PATCH")

        def do_DELETE(self) -> None:
            self._run("DELETE")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
