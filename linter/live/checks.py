"""Live checks: what the next apply of each object will meet in the cluster (`fieldwarden lint --cluster`).

`check(objects, options, settings_for, api)` takes objects with the places their fields are
written (from plain files, or from rendered units: each `LiveObject.locate` says where a field
path is, whether that place is approximate, or that it lies in no file being linted, and the
finding is then dropped) and a sender of HTTP requests (linter/live/cluster.py, or a test's), and
returns findings of the live rules (FW5xx, policies/rules) plus notices. The plan, per run:

1. discovery: `GET /api`, `/apis` and one `GET` per group-version the objects use, for each
   kind's resource name and scope (unserved kinds: FW509);
2. namespaces: one `GET` each (a missing one is reported once: FW508);
3. live objects: one `LIST` per resource and namespace holding at least `LIST_MIN` of the
   objects (paged), a `GET` for the others;
4. autoscalers: one `LIST` of HorizontalPodAutoscalers (and of VerticalPodAutoscalers, when
   the cluster serves them) per namespace that holds workloads;
5. unless `--read-only`, one dry run per object: the server-side apply (`PATCH`,
   `application/apply-patch+yaml`, `dryRun=All`, the field manager, `force` as the team's) or
   what client-side `kubectl apply` sends (client_apply.py, with `fieldValidation=Strict` as kubectl
   sends it; `POST` for a new object; refusals naming no field reworded: refusals.py); and for
   existing objects a dry-run create of the manifest under a generated name, whose defaults
   FW507 compares;
6. each object's `policies.live.LiveCase` goes to every live rule its file's settings enable.

Names and namespaces enter request paths only as paths.py checks and encodes them (an object
the API server would refuse by name is FW501 and sends nothing), every answer must be about the
object asked for, and a finding never shows a Secret's values or a `cluster.sensitive-fields` one.
Each step sends its requests together (linter/live/cluster.py bounds how many are in flight).
Read-only runs stop after step 4: the rules predict what they can from the live objects, and a
notice names the checks that need the dry run.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Protocol, Sequence, Union

from ...policies.autoscalers import is_horizontal_autoscaler, is_vpa, scale_target, vpa_target
from ...policies.config import Settings
from ...policies.kube import api_group, canonical_group, group_kind, pod_template_path
from ...policies.links import DOCS
from ...policies.live import (
    ADMISSION, APPLY_MODES, CLIENT, DEFAULT_FIELD_MANAGER, FORBIDDEN, SERVER, LiveCase, last_applied, redact, refusal_kind,
    secret_texts, status_message,
)
from ...policies.model import FieldPath, ObjectKey, format_path, lighter
from ...policies.registry import RULES
from ...policies.rule import LIVE
from ..analyse import Finding
from .paths import LiveError as LiveError, collection_path, group_version_path, item_path, label_problem, name_problem

LIST_MIN = 8  # objects of one resource in one namespace: from here one LIST is cheaper than GETs
PAGE = 500  # items per LIST page
NEEDS_DRY_RUN = ("FW501", "FW504", "FW507")
PREDICTED = ("FW502", "FW503", "FW505", "FW506", "FW510")
HPA_VERSIONS = ("autoscaling/v2", "autoscaling/v1")
VPA_VERSION = "autoscaling.k8s.io/v1"
APPLY_PATCH = "application/apply-patch+yaml"
BAD_NAME = "bad name"

Place = tuple[str, int, int]  # (file, line, column)
# where a field is written: a Place, or (file, line, column, approximate); None: in no file being linted
Located = Union[Place, tuple[str, int, int, bool], None]


class Request(NamedTuple):
    """One HTTP request: a JSON body (a dict, or text sent as it is) and its content type."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    body: Any = None
    content_type: str = "application/json"


class Response(NamedTuple):
    """The status and decoded JSON body (a Status on errors; text when it is not JSON)."""

    status: int
    body: Any


class Sender(Protocol):
    """What the checks need of a cluster: requests in, responses out, in order."""

    server: str

    def send(self, requests: Sequence[Request]) -> list[Response]: ...


class LiveObject(NamedTuple):
    """An object to check, and where its fields are written."""

    obj: dict[str, Any]
    file: str  # the file findings about it go to, without a better place
    document: int  # its document in that file (-1: none)
    prefix: FieldPath  # its path in the document (a `kind: List` item), for --fix-style bookkeeping
    label: str  # `Kind/namespace/name`, as the other findings name objects
    locate: Callable[[FieldPath], Located]  # where a field path of the object is written
    default_namespace: str = "default"
    units: tuple[str, ...] = ()  # the apply units it is applied with (linter/units/plan.py), named by its findings


class LiveOptions(NamedTuple):
    """How the team applies, and how to reach the cluster (kubeconfig, context: only the command line's)."""

    apply_mode: str = SERVER
    field_manager: str | None = None
    read_only: bool = False
    force_conflicts: bool = False
    kubeconfig: str | None = None
    context: str | None = None
    timeout: float = 30.0
    parallel: int = 16
    sensitive: tuple[str, ...] = ()  # KIND:PATH of fields whose values findings never print (and Secrets' data)
    notices: tuple[str, ...] = ()  # about the options themselves (a configuration's ignored keys)

    @property
    def manager(self) -> str:
        return self.field_manager or DEFAULT_FIELD_MANAGER[self.apply_mode]


class LiveResult(NamedTuple):
    findings: list[Finding]
    notices: list[str]
    about: list[LiveObject] = []  # the object each finding is about (same order)


class Resource(NamedTuple):
    """A kind as the cluster serves it."""

    base: str  # /api/v1 or /apis/GROUP/VERSION
    plural: str
    namespaced: bool

    def collection(self, namespace: str) -> str:
        """Its collection's path (names checked and encoded: paths.py)."""
        return collection_path(self.base, self.plural, namespace if self.namespaced else "")

    def item(self, namespace: str, name: str) -> str:
        return item_path(self.base, self.plural, namespace if self.namespaced else "", name)


class _Item:
    """One object through the run (mutable bookkeeping; the decisions go through LiveCase)."""

    def __init__(self, source: LiveObject, api_version: str, kind: str, name: str) -> None:
        self.source = source
        self.api_version = api_version
        self.kind = kind
        self.name = name
        self.namespace = ""
        self.resource: Resource | None = None
        self.served_versions: tuple[str, ...] = ()
        self.live: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.refusal: dict[str, Any] | None = None
        self.fresh: dict[str, Any] | None = None
        self.skip = ""  # why it is not checked
        self.bad_name = ""  # with skip BAD_NAME: what is wrong with its name or namespace
        self.bad_field: FieldPath = ()
        self.secrets: list[str] = []  # the sensitive values its messages must not show (policies.live.secret_texts)
        self.missing_namespace = 0
        self.hpas: list[Mapping[str, Any]] = []
        self.vpas: list[Mapping[str, Any]] = []

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(canonical_group(api_group(self.api_version), self.kind), self.kind, self.namespace, self.name)


def check(objects: Sequence[LiveObject], options: LiveOptions, settings_for: Callable[[str], Settings],
          api: Sender) -> LiveResult:
    """The live rules' findings about `objects`, and notices for what was not checked."""
    if options.apply_mode not in APPLY_MODES:
        raise LiveError(f"--apply-mode must be one of {', '.join(APPLY_MODES)}")
    notices: list[str] = []
    items, unnamed = _items(objects)
    if unnamed:
        notices.append(f"--cluster: {unnamed} object{_s(unnamed)} without metadata.name not checked (generateName)")
    catalog, groups = _discover(api, {i.api_version for i in items} | set(HPA_VERSIONS) | {VPA_VERSION})
    _place(items, catalog, groups, objects, notices)
    _namespaces(api, items, notices)
    _fetch_live(api, [i for i in items if not i.skip], notices)
    _autoscalers(api, items, catalog, notices)
    wanted = [i for i in items if not i.skip]
    if options.read_only:
        new = sum(1 for i in wanted if i.live is None)
        if new:
            notices.append(f"--cluster --read-only: {new} object{_s(new)} not in the cluster yet, not checked (a dry-run "
                           "create needs create rights)")
        notices.append(f"--cluster --read-only: {', '.join(NEEDS_DRY_RUN)} need a dry run and were not checked; "
                       f"{', '.join(PREDICTED)} are predicted from the live objects")
    else:
        _dry_runs(api, wanted, options, catalog, settings_for)
    how = "read only" if options.read_only else (
        f"{'server-side' if options.apply_mode == SERVER else 'client-side'} apply as {options.manager!r}"
        f"{', forced' if options.force_conflicts and options.apply_mode == SERVER else ''}, dry run")
    notices.append(f"--cluster: {len(items)} object{_s(len(items))} checked against {api.server} ({how})")
    judged = _judge(items, options, settings_for)
    return LiveResult([finding for finding, _ in judged], notices, [source for _, source in judged])


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _items(objects: Sequence[LiveObject]) -> tuple[list[_Item], int]:
    items, unnamed = [], 0
    for source in objects:
        meta = source.obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(name, str) or not name:
            unnamed += 1
            continue
        items.append(_Item(source, str(source.obj["apiVersion"]), str(source.obj["kind"]), name))
    return items, unnamed


# --- 1. discovery ---------------------------------------------------------------------------------

def _discover(api: Sender, versions: Iterable[str]) -> tuple[dict[tuple[str, str], Resource], dict[str, list[str]]]:
    """(apiVersion, kind) -> Resource for the group-versions asked for; and each group's served versions."""
    wanted = sorted(set(versions))
    first = api.send([Request("GET", "/api"), Request("GET", "/apis")])
    for response in first:
        _fatal(response, "read the API's discovery")
    groups: dict[str, list[str]] = {"": [str(v) for v in (first[0].body or {}).get("versions") or ()]}
    for group in (first[1].body or {}).get("groups") or ():
        groups[str(group.get("name"))] = [str(v.get("version")) for v in group.get("versions") or ()]
    served = [v for v in wanted if v.rpartition("/")[2] in groups.get(api_group(v), ())]
    paths = [group_version_path(v) for v in served]
    catalog: dict[tuple[str, str], Resource] = {}
    for version, path, response in zip(served, paths, api.send([Request("GET", p) for p in paths])):
        if response.status == 404:
            continue
        _fatal(response, f"read the API's discovery ({path})")
        for resource in (response.body or {}).get("resources") or ():
            name = str(resource.get("name") or "")
            if name and "/" not in name and not label_problem(name):
                catalog.setdefault((version, str(resource.get("kind"))), Resource(path, name, bool(resource.get("namespaced"))))
    return catalog, groups


def _fatal(response: Response, doing: str) -> None:
    """LiveError for what no check can work around: bad credentials, missing rights, a broken server."""
    if response.status == 401:
        raise LiveError(f"--cluster: the API server refused the credentials (401 Unauthorized) to {doing}")
    if response.status == 403 and refusal_kind(response.body if isinstance(response.body, dict) else {}) != ADMISSION:
        raise LiveError(f"--cluster: not allowed to {doing}: {_said(response)} (the identity needs the rights of "
                        f"the chart's lint-reader role: {DOCS}live/#in-ci)")
    if response.status >= 500 or response.status == 0:
        raise LiveError(f"--cluster: the API server failed to {doing}: {_said(response)}")


def _said(response: Response) -> str:
    body = response.body
    return status_message(body) if isinstance(body, dict) and status_message(body) else f"HTTP {response.status}"


def _place(items: list[_Item], catalog: dict[tuple[str, str], Resource], groups: dict[str, list[str]],
           objects: Sequence[LiveObject], notices: list[str]) -> None:
    """Each object's resource and namespace; unserved kinds are FW509 unless the run creates their CRD."""
    crds = {(str(_get(o.obj, "spec", "group")), str(_get(o.obj, "spec", "names", "kind"))) for o in objects
            if group_kind(o.obj) == ("apiextensions.k8s.io", "CustomResourceDefinition")}
    pending = 0
    for item in items:
        item.resource = catalog.get((item.api_version, item.kind))
        group = api_group(item.api_version)
        if item.resource is None:
            if (group, item.kind) in crds:
                item.skip = "crd"
                pending += 1
            else:
                item.skip = "unserved"
                item.served_versions = tuple(f"{group}/{v}" if group else v for v in groups.get(group, ()))
            continue
        if item.resource.namespaced:
            meta = item.source.obj.get("metadata")
            namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
            item.namespace = namespace if isinstance(namespace, str) and namespace else item.source.default_namespace
        _check_names(item)
    bad = [i for i in items if i.skip == BAD_NAME]
    if bad:
        notices.append(f"--cluster: {len(bad)} object{_s(len(bad))} with a name or namespace the API server refuses not "
                       f"checked, and no request sent for {'it' if len(bad) == 1 else 'them'}: "
                       + "; ".join(f"{i.kind} {i.bad_name}" for i in bad[:3]) + (" ..." if len(bad) > 3 else ""))
    if pending:
        notices.append(f"--cluster: {pending} object{_s(pending)} of kinds whose CustomResourceDefinition these "
                       "manifests create not checked")


def _check_names(item: _Item) -> None:
    """An object whose namespace or name the API server would refuse is not requested (BAD_NAME, reported as FW501)."""
    problem = label_problem(item.namespace) if item.namespace else None
    if problem is not None:
        item.bad_name = f"namespace {problem}"
        item.bad_field = ("metadata", "namespace")
    else:
        problem = name_problem(canonical_group(api_group(item.api_version), item.kind), item.kind, item.name)
        if problem is None:
            return
        item.bad_name = f"name {problem}"
        item.bad_field = ("metadata", "name")
    item.skip = BAD_NAME


def _get(obj: Any, *path: str) -> Any:
    for step in path:
        obj = obj.get(step) if isinstance(obj, Mapping) else None
    return obj


# --- 2. namespaces --------------------------------------------------------------------------------

def _namespaces(api: Sender, items: list[_Item], notices: list[str]) -> None:
    names = sorted({i.namespace for i in items if not i.skip and i.namespace})
    created = {i.name for i in items if (i.api_version, i.kind) == ("v1", "Namespace")}
    responses = api.send([Request("GET", item_path("/api/v1", "namespaces", "", n)) for n in names]) if names else []
    denied = False
    for name, response in zip(names, responses):
        if response.status == 404:
            members = [i for i in items if not i.skip and i.namespace == name]
            if name in created:
                notices.append(f"--cluster: namespace {name} is created by these manifests: its {len(members)} "
                               f"object{_s(len(members))} not checked")
                for member in members:
                    member.skip = "new namespace"
                continue
            for member in members:
                member.skip = "missing namespace"
            members[0].missing_namespace = len(members)
            members[0].refusal = response.body if isinstance(response.body, dict) else None
        elif response.status == 403:
            denied = True
        elif response.status != 200:
            _fatal(response, f"read namespace {name}")
    if denied:
        notices.append("--cluster: not allowed to read namespaces: missing namespaces are not reported")


# --- 3. live objects ------------------------------------------------------------------------------

def _fetch_live(api: Sender, items: list[_Item], notices: list[str]) -> None:
    """Each object's live version (None: it does not exist); objects the identity may not read are skipped."""
    groups: dict[tuple[Resource, str], list[_Item]] = {}
    for item in items:
        assert item.resource is not None
        groups.setdefault((item.resource, item.namespace), []).append(item)
    listed = {key: members for key, members in groups.items() if len(members) >= LIST_MIN}
    single = [m for key, members in groups.items() if key not in listed for m in members]
    requests = [Request("GET", m.resource.item(m.namespace, m.name)) for m in single if m.resource is not None]
    denied: dict[str, int] = {}
    for item, response in zip(single, api.send(requests) if requests else []):
        if response.status == 200 and isinstance(response.body, dict):
            _same_object(item, response.body, "get")
            item.live = response.body
        elif _forbidden(response):
            item.skip = "forbidden"
            where = f"get {item.resource.plural if item.resource else item.kind}{_in(item.namespace)}"
            denied[where] = denied.get(where, 0) + 1
        elif response.status != 404:
            _fatal(response, f"get {item.key.label()}")
            raise LiveError(f"--cluster: cannot get {item.key.label()}: {_said(response)}")
    collections = [(resource.collection(namespace), f"{resource.plural}{_in(namespace)}") for resource, namespace in listed]
    found, failed = _list_all(api, collections, tolerate=_forbidden)
    for index, ((key, members), objects) in enumerate(zip(listed.items(), found)):
        if index in failed:
            for member in members:
                member.skip = "forbidden"
            denied[f"list {collections[index][1]}"] = len(members)
            continue
        by_name = {str(_get(o, "metadata", "name")): o for o in objects}
        for member in members:
            live = by_name.get(member.name)
            if live is not None:
                live.setdefault("apiVersion", member.api_version)  # list items omit them
                live.setdefault("kind", member.kind)
                _same_object(member, live, "list")
                member.live = live
    if denied:
        count = sum(denied.values())
        notices.append(f"--cluster: not allowed to {'; '.join(sorted(denied))}: {count} object{_s(count)} not checked")


def _in(namespace: str) -> str:
    return f" in {namespace}" if namespace else ""


def _forbidden(response: Response) -> bool:
    """An authorization refusal (RBAC), not an admission denial."""
    return response.status == 403 and refusal_kind(response.body if isinstance(response.body, dict) else {}) == FORBIDDEN


def _list_all(api: Sender, collections: list[tuple[str, str]], tolerate: Callable[[Response], bool] = lambda r: False
              ) -> tuple[list[list[dict[str, Any]]], dict[int, str]]:
    """Every item of each collection, page by page (the pages of all collections go together).

    A collection whose answer `tolerate`s is left empty and named in the second value (its index:
    what the API server said); any other failure is a LiveError.
    """
    out: list[list[dict[str, Any]]] = [[] for _ in collections]
    failed: dict[int, str] = {}
    tokens: dict[int, str] = {index: "" for index in range(len(collections))}
    while tokens:
        order = sorted(tokens)
        requests = [Request("GET", collections[i][0], (("limit", str(PAGE)),) + ((("continue", tokens[i]),) if tokens[i] else ()))
                    for i in order]
        tokens = {}
        for index, response in zip(order, api.send(requests)):
            if response.status != 200 or not isinstance(response.body, dict):
                if tolerate(response):
                    failed[index] = _said(response)
                    out[index] = []
                    continue
                _fatal(response, f"list {collections[index][1]}")
                raise LiveError(f"--cluster: cannot list {collections[index][1]}: {_said(response)}")
            out[index].extend(i for i in response.body.get("items") or () if isinstance(i, dict))
            token = _get(response.body, "metadata", "continue")
            if isinstance(token, str) and token:
                tokens[index] = token
    return out, failed


# --- 4. autoscalers -------------------------------------------------------------------------------

def _autoscalers(api: Sender, items: list[_Item], catalog: dict[tuple[str, str], Resource], notices: list[str]) -> None:
    """The HPAs and VPAs (live, and of the manifests) that target each existing object."""
    scaled = [i for i in items if i.live is not None and _scalable(i)]
    if not scaled:
        return
    namespaces = sorted({i.namespace for i in scaled})
    kinds = []
    hpa = next((catalog[(v, "HorizontalPodAutoscaler")] for v in HPA_VERSIONS if (v, "HorizontalPodAutoscaler") in catalog), None)
    if hpa is not None:
        kinds.append(("HorizontalPodAutoscalers", hpa))
    vpa = catalog.get((VPA_VERSION, "VerticalPodAutoscaler"))
    if vpa is not None:
        kinds.append(("VerticalPodAutoscalers", vpa))
    collections = [(resource.collection(n), f"{what} in {n}") for what, resource in kinds for n in namespaces]
    lists, failed = _list_all(api, collections, tolerate=lambda response: response.status in (403, 404))
    if failed:
        names = [f"{collections[i][1]} ({said})" for i, said in sorted(failed.items())]
        notices.append(f"--cluster: cannot list {'; '.join(names[:3])}{' ...' if len(names) > 3 else ''}: the "
                       "autoscalers there are not taken into account (FW505)")
    found: list[tuple[Mapping[str, Any], str]] = []  # (autoscaler, its namespace)
    for number, (what, resource) in enumerate(kinds):
        kind = what[:-1]
        version = resource.base.split("/apis/", 1)[-1]
        for listed in lists[number * len(namespaces):(number + 1) * len(namespaces)]:
            for live in listed:
                live.setdefault("apiVersion", version)  # list items omit them
                live.setdefault("kind", kind)
                found.append((live, str(_get(live, "metadata", "namespace") or "")))
    found.extend((i.source.obj, i.namespace) for i in items
                 if is_horizontal_autoscaler(i.source.obj) or is_vpa(i.source.obj))
    by_target: dict[tuple[ObjectKey, str], dict[str, Mapping[str, Any]]] = {}
    for obj, namespace in found:
        target = scale_target(obj, namespace) if is_horizontal_autoscaler(obj) else vpa_target(obj, namespace)
        if target is not None:
            which = "hpa" if is_horizontal_autoscaler(obj) else "vpa"
            by_target.setdefault((target, which), {}).setdefault(str(_get(obj, "metadata", "name")), obj)
    for item in scaled:
        item.hpas = list(by_target.get((item.key, "hpa"), {}).values())
        item.vpas = list(by_target.get((item.key, "vpa"), {}).values())


def _scalable(item: _Item) -> bool:
    return pod_template_path(*group_kind(item.source.obj)) is not None or "replicas" in (item.source.obj.get("spec") or {})


# --- 5. dry runs ----------------------------------------------------------------------------------

def _dry_runs(api: Sender, items: list[_Item], options: LiveOptions, catalog: dict[tuple[str, str], Resource],
              settings_for: Callable[[str], Settings]) -> None:
    schemas = _openapi(api, items) if options.apply_mode == CLIENT else {}
    requests: list[Request] = []  # one round of apply dry runs, then one of creates for FW507
    asked: list[_Item] = []
    for item in items:
        request = _apply_request(item, options, schemas)
        if request is None:
            item.result = item.live  # kubectl sends nothing when there is nothing to change
            continue
        requests.append(request)
        asked.append(item)
    for item, response in zip(asked, api.send(requests) if requests else []):
        _take(item, response)
        if item.refusal is not None:  # a patch dump or a decoding error: reworded with its field (refusals.py)
            from .refusals import readable_refusal, schema_for

            item.refusal = readable_refusal(item.refusal, item.source.obj, schema_for(item.api_version, item.kind, schemas),
                                            _sensitive(item, options, settings_for))
    # FW507's baseline, a dry-run create of the manifest under a generated name, for the objects whose
    # spec the apply changes (a default left behind comes from a change of another field)
    fresh = [i for i in items if i.live is not None and i.result is not None and _changes(i.live, i.result)
             and settings_for(i.source.file).enabled("FW507")]
    for item, response in zip(fresh, api.send([_fresh_request(i, options) for i in fresh]) if fresh else []):
        if 200 <= response.status < 300 and isinstance(response.body, dict) and item.live is not None:
            _same_object(item, response.body, "dry-run the create of", generated=True)
            item.fresh = _as_live(response.body, item.live)


def _same_object(item: _Item, body: Mapping[str, Any], doing: str, generated: bool = False) -> None:
    """LiveError unless the API server's answer is the object asked about (kind, group, namespace, name)."""
    from .paths import shown

    found = body.get("metadata")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    kind, version = body.get("kind"), body.get("apiVersion")
    name, namespace = meta.get("name"), meta.get("namespace") or ""
    same_name = isinstance(name, str) and (name.startswith(item.name[:40] + "-") if generated else name == item.name)
    if kind == item.kind and isinstance(version, str) and api_group(version) == api_group(item.api_version) \
            and same_name and namespace == item.namespace:
        return
    got = "/".join(shown(str(part)) for part in (version, kind, namespace, name) if part)
    raise LiveError(f"--cluster: asked to {doing} {item.key.label()}, the API server answered about {got}: refusing to "
                    "go on (a proxy or a path that does not lead where it should)")


def _changes(live: Mapping[str, Any], result: Mapping[str, Any]) -> bool:
    """Whether the apply changes the object beyond its metadata and status."""
    from ...policies.live import same

    keys = (set(live) | set(result)) - {"metadata", "status"}
    return any(not same(live.get(key), result.get(key)) for key in keys)


def _take(item: _Item, response: Response) -> None:
    body = response.body if isinstance(response.body, dict) else {"message": str(response.body), "code": response.status}
    if 200 <= response.status < 300:
        _same_object(item, body, "dry-run the apply of")
        item.result = body
        return
    if response.status == 401:
        _fatal(response, f"dry-run the apply of {item.key.label()}")
    if _forbidden(response):
        raise LiveError(f"--cluster: not allowed to dry-run the apply of {item.key.label()}: {_said(response)} (a dry run "
                        "needs the patch right, and create for an object that does not exist yet: bind the chart's "
                        "lint-dryrun role, or use --read-only)")
    item.refusal = body


def _apply_request(item: _Item, options: LiveOptions, schemas: dict[str, dict[str, Any]]) -> Request | None:
    assert item.resource is not None
    manifest = item.source.obj
    query: tuple[tuple[str, str], ...] = (("dryRun", "All"), ("fieldManager", options.manager))
    if options.apply_mode == SERVER:
        force = (("force", "true"),) if options.force_conflicts else ()
        return Request("PATCH", item.resource.item(item.namespace, item.name), query + force,
                       json.dumps(_with_namespace(manifest, item)), APPLY_PATCH)
    from .client_apply import BUILTIN_GROUPS, MERGE, STRATEGIC, modified_configuration, root_schema, three_way_patch

    query += (("fieldValidation", "Strict"),)  # as kubectl sends it (--validate=strict): unknown fields are refused
    if item.live is None:
        return Request("POST", item.resource.collection(item.namespace), query,
                       _with_namespace(modified_configuration(manifest), item))
    group, _, version = item.api_version.rpartition("/")
    schema = None
    if group in BUILTIN_GROUPS:
        document = schemas.get(item.api_version)
        schema = root_schema(document, group, version, item.kind) if document is not None else None
    patch = three_way_patch(manifest, item.live, last_applied(item.live), schema)
    if not patch:
        return None
    return Request("PATCH", item.resource.item(item.namespace, item.name), query, patch,
                   STRATEGIC if schema is not None else MERGE)


def _with_namespace(obj: dict[str, Any], item: _Item) -> dict[str, Any]:
    """The object as sent: with the namespace it goes to (kubectl fills it in the same way)."""
    if not item.namespace or _get(obj, "metadata", "namespace") == item.namespace:
        return obj
    sent = dict(obj)
    sent["metadata"] = {**(obj.get("metadata") or {}), "namespace": item.namespace}
    return sent


def _fresh_request(item: _Item, options: LiveOptions) -> Request:
    """A dry-run create of the manifest as a new object (a generated name): the defaults it would get today."""
    assert item.resource is not None
    body = copy.deepcopy(item.source.obj)
    meta = body.setdefault("metadata", {})
    meta.pop("name", None)
    meta.pop("resourceVersion", None)
    meta["generateName"] = item.name[:40] + "-"
    if item.namespace:
        meta["namespace"] = item.namespace
    return Request("POST", item.resource.collection(item.namespace), (("dryRun", "All"), ("fieldManager", options.manager)), body)


def _as_live(fresh: dict[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """The fresh object with its generated name and uid replaced by the live ones (labels and selectors carry them)."""
    swaps = {}
    for field in ("name", "uid"):
        new, old = _get(fresh, "metadata", field), _get(live, "metadata", field)
        if isinstance(new, str) and new and isinstance(old, str):
            swaps[new] = old

    def swap(value: Any) -> Any:
        if isinstance(value, str):
            for new, old in swaps.items():
                if new in value:
                    value = value.replace(new, old)
            return value
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        if isinstance(value, list):
            return [swap(v) for v in value]
        return value

    swapped: dict[str, Any] = swap(fresh)
    return swapped


def _openapi(api: Sender, items: list[_Item]) -> dict[str, dict[str, Any]]:
    """The OpenAPI v3 documents of the group-versions of existing built-in objects (for their patch strategies)."""
    from .client_apply import BUILTIN_GROUPS

    versions = sorted({i.api_version for i in items if i.live is not None and api_group(i.api_version) in BUILTIN_GROUPS})
    if not versions:
        return {}
    index = api.send([Request("GET", "/openapi/v3")])[0]
    _fatal(index, "read the API's OpenAPI index (/openapi/v3)")
    paths = (index.body or {}).get("paths") or {} if isinstance(index.body, dict) else {}
    wanted = []
    for version in versions:
        entry = paths.get(f"api/{version}" if "/" not in version else f"apis/{version}")
        url = entry.get("serverRelativeURL") if isinstance(entry, dict) else None
        if isinstance(url, str):
            path, _, query = url.partition("?")
            wanted.append((version, Request("GET", path, tuple(tuple(p.split("=", 1)) for p in query.split("&") if "=" in p))))  # type: ignore[misc]
    documents = {}
    for (version, _), response in zip(wanted, api.send([r for _, r in wanted])):
        _fatal(response, f"read the OpenAPI document of {version}")
        if response.status == 200 and isinstance(response.body, dict):
            documents[version] = response.body
    return documents


# --- 6. judging -----------------------------------------------------------------------------------

def _judge(items: list[_Item], options: LiveOptions, settings_for: Callable[[str], Settings]
           ) -> list[tuple[Finding, LiveObject]]:
    rules = [(code, rule) for code, rule in RULES.items() if rule.SCOPE == LIVE]
    findings: list[tuple[Finding, LiveObject]] = []
    explained: set[int] = set()  # the items a rule has reported on
    for item in items:
        if item.skip == BAD_NAME:
            finding = _bad_name(item, settings_for)
            if finding is not None:
                findings.append((finding, item.source))
            continue
        if item.skip not in ("", "unserved", "missing namespace"):
            continue
        if item.skip == "missing namespace" and not item.missing_namespace:
            continue
        case = LiveCase(
            manifest=item.source.obj, live=item.live, result=item.result, refusal=item.refusal,
            mode=options.apply_mode, field_manager=options.manager, force=options.force_conflicts,
            read_only=options.read_only, hpas=tuple(item.hpas), vpas=tuple(item.vpas), fresh=item.fresh,
            served=item.skip != "unserved", served_versions=item.served_versions,
            missing_namespace=item.missing_namespace, sensitive=_sensitive(item, options, settings_for),
        )
        item.secrets = secret_texts(case)
        if item.skip:  # only the rule that says why it could not be checked
            wanted = {"FW509"} if item.skip == "unserved" else {"FW508"}
        else:
            wanted = {code for code, _ in rules} - {"FW508", "FW509"}
        for code, rule in rules:
            if code not in wanted:
                continue
            for violation in rule.check(case, {}):
                explained.add(id(item))
                finding = _finding(item, code, tuple(violation.path), redact(violation.message, item.secrets),
                                   redact(violation.hint, item.secrets),
                                   lambda severity: lighter(severity, violation), settings_for)
                if finding is not None:
                    findings.append((finding, item.source))
    _other_failures([i for i in items if id(i) not in explained], findings, settings_for)
    return findings


def _sensitive(item: _Item, options: LiveOptions, settings_for: Callable[[str], Settings]) -> tuple[str, ...]:
    """The run's sensitive fields and those of the configuration of the object's file (each only hides more)."""
    own = (getattr(settings_for(item.source.file), "cluster", None) or {}).get("sensitive-fields") or ()
    return tuple(dict.fromkeys((*options.sensitive, *(str(entry) for entry in own))))


def _bad_name(item: _Item, settings_for: Callable[[str], Settings]) -> Finding | None:
    """FW501 on an object whose name or namespace the API server refuses (nothing was sent for it)."""
    message = f"the API server refuses this object: its {item.bad_name}; not checked against the cluster (no request sent)"
    hint = "use a name the API server accepts (kubectl apply would fail the same way)"
    for path in (item.bad_field, ()):
        if item.source.locate(path) is not None:
            return _finding(item, "FW501", path, message, hint, lambda severity: severity, settings_for)
    return None


def _finding(item: _Item, code: str, path: FieldPath, message: str, hint: str, severity: Callable[[str], str],
             settings_for: Callable[[str], Settings]) -> Finding | None:
    """A finding on a field of the item, where its object says the field is written (None: not reported there)."""
    where = item.source.locate(path)
    if where is None:
        return None
    file, line, column = where[0], where[1], where[2]
    settings = settings_for(file)
    if not settings.enabled(code):
        return None
    return Finding(
        file, line, column, code, severity(settings.severity[code]), item.source.label,
        format_path(path, item.source.obj) if path else "", message, hint,
        item.source.document, item.source.prefix + path, units=item.source.units,
        approximate=bool(where[3]) if len(where) > 3 else False,
    )


def _other_failures(items: list[_Item], findings: list[tuple[Finding, LiveObject]],
                    settings_for: Callable[[str], Settings]) -> None:
    """A refusal no rule explains (a 500, a timeout in a webhook) is not dropped: it is reported as FW501."""
    for item in items:
        if item.refusal is None or item.skip or refusal_kind(item.refusal) not in ("other", "not-found"):
            continue
        message = redact(f"the dry run of the apply failed: {status_message(item.refusal) or json.dumps(item.refusal)[:300]}",
                         item.secrets)
        finding = _finding(item, "FW501", (), message, "the apply will probably fail the same way: check the cluster's "
                           "answer above", lambda severity: severity, settings_for)
        if finding is not None:
            findings.append((finding, item.source))
