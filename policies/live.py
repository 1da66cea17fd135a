"""What the next apply of one object will do: the facts the live rules (FW5xx) judge.

`fieldwarden lint --cluster` (linter/live/checks.py) fetches the live object, asks the API server for
a dry run of the apply the team uses, and hands each object's outcome to the live rules as a
`LiveCase`; everything here is pure and works on plain dicts: the API server's Status and its
causes, field paths in its two spellings (validation's `spec.containers[0].image`, server-side
apply's `.spec.containers[name="web"].image`), the manifest, the live object and the object the
dry run would store.

Facts taken from the API server's behaviour (checked against a v1.32 kube-apiserver):

- a refused dry run answers with a Status: 422 `Invalid` with causes whose `field` is the path,
  409 `Conflict` with one `FieldManagerConflict` cause per field (`field` in server-side-apply
  spelling), and a denial by an admission webhook or a ValidatingAdmissionPolicy whatever its
  code, worded `admission webhook "NAME" denied the request: ...` or
  `ValidatingAdmissionPolicy 'NAME' with binding 'B' denied request: ...` (a webhook that cannot
  be called under `failurePolicy: Fail`: `failed calling webhook "NAME": ...`, a 500);
- managers are told apart by name, operation and subresource: `kubectl scale` writes as
  `kubectl` (Update, subresource `scale`), which a `kubectl apply --server-side` (`kubectl`,
  Apply) conflicts with;
- a client-side apply (Update) owns every field of the object it created, the defaulted ones
  included; a server-side apply owns what it sent, and defaulted fields belong to nobody.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

from .kube import get_path, group_kind
from .model import FieldPath

SERVER = "server"
CLIENT = "client"
APPLY_MODES = (SERVER, CLIENT)
DEFAULT_FIELD_MANAGER = {SERVER: "kubectl", CLIENT: "kubectl-client-side-apply"}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# Managers kubectl writes as when it creates an object: their ownership of defaulted fields
# says nothing about another writer (see `ours_or_creation`).
CREATION_MANAGERS = frozenset({"kubectl-client-side-apply", "kubectl-create", "before-first-apply"})
KUBECTL_APPLIERS = {"kubectl": "Apply", "kubectl-client-side-apply": "Update"}  # manager -> operation

# Kinds whose `spec.replicas` defaults to 1 when it is absent (what a removed field becomes).
REPLICAS_DEFAULT_ONE = frozenset({
    ("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("", "ReplicationController"),
})

_MISSING: Any = object()
MISSING: Any = _MISSING  # what `value_at` returns for an absent path


class LiveCase(NamedTuple):
    """One object of the manifests and what the cluster says about it."""

    manifest: Mapping[str, Any]  # the object as written
    live: Mapping[str, Any] | None  # as it is in the cluster (None: it does not exist yet)
    result: Mapping[str, Any] | None  # what the dry run would store (None: no dry run, or refused)
    refusal: Mapping[str, Any] | None  # the Status of a refused dry run
    mode: str = SERVER  # how the team applies: server-side or client-side `kubectl apply`
    field_manager: str = "kubectl"
    force: bool = False  # the team's server-side applies take conflicting fields over (--force-conflicts)
    read_only: bool = False  # no dry run: predictions from the live object only
    hpas: tuple[Mapping[str, Any], ...] = ()  # the autoscalers (live, and of the manifests) that target it
    vpas: tuple[Mapping[str, Any], ...] = ()
    fresh: Mapping[str, Any] | None = None  # a dry-run create of the manifest as a new object (its defaults)
    served: bool = True  # False: the cluster serves no such kind
    served_versions: tuple[str, ...] = ()  # then, the versions of its group that it serves
    missing_namespace: int = 0  # >0 on the first object of a namespace that does not exist: its object count
    sensitive: tuple[str, ...] = ()  # KIND:PATH of fields whose values are never shown (cluster.sensitive-fields)


# --- the API server's Status --------------------------------------------------------------------

CONFLICT = "conflict"
ADMISSION = "admission"
INVALID = "invalid"
FORBIDDEN = "forbidden"
NOT_FOUND = "not-found"
OTHER = "other"

# (searched with `re.search`, whose cache compiles them once, on first use: a plain lint imports
# this module with the rules and never compiles them)
_ADMISSION_WORDS = (r'admission webhook "[^"]*" denied the request|ValidatingAdmissionPolicy \'[^\']*\''
                    r'.* denied request|MutatingAdmissionPolicy \'[^\']*\'|denied by [A-Za-z]+ admission|'
                    r'failed calling webhook "')
_IMMUTABLE_WORDS = (r"(?i)immutable|may not change once set|updates to [a-z]+ spec for fields other than|"
                    r"cannot change roleRef|cannot be changed|may not be changed")


class Cause(NamedTuple):
    """One cause of a Status: its reason, message and field ("" when it names none)."""

    reason: str
    message: str
    field: str


def status_message(status: Mapping[str, Any]) -> str:
    message = status.get("message")
    return message if isinstance(message, str) else ""


def causes(status: Mapping[str, Any]) -> list[Cause]:
    details = status.get("details")
    found = details.get("causes") if isinstance(details, Mapping) else None
    out = []
    for cause in found if isinstance(found, list) else ():
        if isinstance(cause, Mapping):
            out.append(Cause(*(str(cause.get(k) or "") for k in ("reason", "message", "field"))))
    return out


def refusal_kind(status: Mapping[str, Any]) -> str:
    """What kind of refusal a Status is (CONFLICT, ADMISSION, INVALID, FORBIDDEN, NOT_FOUND, OTHER)."""
    message = status_message(status)
    if re.search(_ADMISSION_WORDS, message):
        return ADMISSION
    code = status.get("code")
    reason = status.get("reason")
    if code == 409 and reason == "Conflict" or any(c.reason == "FieldManagerConflict" for c in causes(status)):
        return CONFLICT
    if code == 403 or reason == "Forbidden":
        return FORBIDDEN
    if code == 404 or reason == "NotFound":
        return NOT_FOUND
    if code in (400, 422) or reason in ("Invalid", "BadRequest") or "field not declared in schema" in message \
            or "failed to create typed patch object" in message:
        return INVALID
    return OTHER


def is_immutable(message: str) -> bool:
    """Whether a validation message says the field may not change (immutable fields)."""
    return bool(re.search(_IMMUTABLE_WORDS, message))


def invalid_causes(status: Mapping[str, Any]) -> list[Cause]:
    """The field errors of an INVALID Status: its causes, or the message's own `path: error` list.

    A server-side apply refused before validation (`failed to create typed patch object ...:
    .spec.foo: field not declared in schema`) has no causes; its path is read from the message.
    """
    found = causes(status)
    if found:
        return found
    message = status_message(status)
    typed = re.search(r"\): (\.[^:]+): (.+)$", message)
    if typed:
        return [Cause("FieldValueInvalid", typed.group(2), typed.group(1))]
    return [Cause("", message, "")]


# --- field paths ----------------------------------------------------------------------------------

_STEP = r"([^.\[\]]+)|\[([^\]]*)\]"
MERGE_KEYS = ("name", "containerPort", "port", "mountPath", "devicePath", "ip", "type", "key", "topologyKey")


def parse_field(field: str) -> list[str | int]:
    """Validation's field path (`spec.containers[0].ports[1]`, `metadata.labels[app]`) as steps."""
    steps: list[str | int] = []
    for name, bracket in re.findall(_STEP, field.strip().lstrip(".")):
        if name:
            steps.append(name)
        elif bracket.isdigit():
            steps.append(int(bracket))
        else:
            steps.append(bracket)
    return steps


def value_at(obj: Any, path: Sequence[str | int]) -> Any:
    """The value at `path`, or MISSING."""
    node = obj
    for step in path:
        if isinstance(step, int):
            if not isinstance(node, list) or not 0 <= step < len(node):
                return MISSING
            node = node[step]
        else:
            if not isinstance(node, Mapping) or step not in node:
                return MISSING
            node = node[step]
    return node


def _item_key(item: Any) -> tuple[str, Any] | None:
    if isinstance(item, Mapping):
        for key in MERGE_KEYS:
            if key in item and not isinstance(item[key], (dict, list)):
                return key, item[key]
    return None


def follow(target: Any, path: Sequence[str | int], source: Any) -> FieldPath | None:
    """`path` of `source` as the path of the same field in `target`, or None where it has none.

    List items are matched by their merge key (`name`, `containerPort`, ...) when the item of
    `source` has one, else by position; map keys as they are.
    """
    out: list[str | int] = []
    node, other = source, target
    for step in path:
        if isinstance(step, int):
            item = node[step] if isinstance(node, list) and 0 <= step < len(node) else MISSING
            if not isinstance(other, list):
                return None
            key = _item_key(item)
            if key is not None:
                index = next((n for n, x in enumerate(other) if isinstance(x, Mapping) and x.get(key[0]) == key[1]), -1)
            else:
                index = step if step < len(other) else -1
            if index < 0:
                return None
            out.append(index)
            node, other = item, other[index]
        else:
            if not isinstance(other, Mapping) or step not in other:
                return None
            out.append(step)
            node = node.get(step) if isinstance(node, Mapping) else MISSING
            other = other[step]
    return tuple(out)


def nearest(target: Any, path: Sequence[str | int], source: Any) -> FieldPath:
    """The longest prefix of `path` (a path of `source`) that `target` has, as a path of `target`."""
    for length in range(len(path), 0, -1):
        found = follow(target, path[:length], source)
        if found is not None:
            return found
    return ()


def manifest_path(case: LiveCase, field: str) -> FieldPath:
    """A validation field path of the object the server checked, as a path of the manifest.

    Indices are those of the object the API server validated: the live object merged with the
    manifest; an item is found in the manifest by its merge key in the live object (else by its
    index in the manifest). A path the manifest does not have becomes its nearest parent.
    """
    steps = parse_field(field)
    base = case.live if case.live is not None and case.result is None else case.result or case.manifest
    if value_at(base, steps) is MISSING:
        base = case.manifest
    mapped = nearest(case.manifest, steps, base)
    if len(mapped) < len(steps) and base is not case.manifest:
        direct = nearest(case.manifest, steps, case.manifest)
        if len(direct) > len(mapped):
            return direct
    return mapped


def ssa_paths(obj: Mapping[str, Any], managed_from: Mapping[str, Any]) -> dict[str, FieldPath]:
    """Server-side-apply path texts (`.spec.replicas`) of `obj`'s fields that `managed_from`'s managers own.

    The FieldsV1 tries of `managed_from` (a live object) are resolved against `obj` (the manifest),
    so each text comes with the manifest's own path to the field.
    """
    from .managed_fields import ManagedFieldsError, owned_fields

    meta = managed_from.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, Mapping) else None
    out: dict[str, FieldPath] = {}
    for entry in entries if isinstance(entries, list) else ():
        trie = entry.get("fieldsV1") if isinstance(entry, Mapping) else None
        if not isinstance(trie, Mapping):
            continue
        try:
            for path, text in owned_fields(trie, obj):
                out.setdefault(text, path)
        except (ManagedFieldsError, RecursionError):
            continue
    return out


def ssa_text_path(text: str, case: LiveCase) -> FieldPath:
    """A server-side-apply path (`.spec.template.spec.containers[name="web"].image`) in the manifest."""
    if case.live is not None:
        found = ssa_paths(case.manifest, case.live).get(text)
        if found is not None:
            return found
    plain = []
    for name, bracket in re.findall(_STEP, text.lstrip(".")):
        if not name:
            break  # a key selector: no plain path beyond it
        plain.append(name)
    return nearest(case.manifest, plain, case.manifest)


# --- ownership ------------------------------------------------------------------------------------

class Owner(NamedTuple):
    manager: str
    operation: str
    subresource: str
    api_version: str


def owners(obj: Mapping[str, Any]) -> dict[FieldPath, list[Owner]]:
    """Each owned leaf field of `obj` (its own paths) and who owns it, per its managedFields."""
    from .managed_fields import ManagedFieldsError, field_managers

    try:
        entries = field_managers(obj)
    except (ManagedFieldsError, RecursionError):
        return {}
    out: dict[FieldPath, list[Owner]] = {}
    for entry in entries:
        owner = Owner(entry.manager, entry.operation, entry.subresource, entry.api_version)
        for path, _text in entry.fields:
            out.setdefault(path, []).append(owner)
    return out


def owners_of(table: Mapping[FieldPath, list[Owner]], path: FieldPath) -> list[Owner]:
    """Who owns `path`: its own entry, or that of the nearest enclosing owned field (atomic maps)."""
    for length in range(len(path), 0, -1):
        found = table.get(tuple(path[:length]))
        if found:
            return found
    return []


def is_ours(owner: Owner, case: LiveCase) -> bool:
    """Whether this manager entry is the team's applier: the field manager, as its apply writes."""
    if owner.subresource:
        return False
    if case.mode == SERVER:
        return owner.manager == case.field_manager and owner.operation == "Apply"
    return owner.manager == case.field_manager and owner.operation == "Update"


def ours_or_creation(owner: Owner, case: LiveCase) -> bool:
    """The applier, or a kubectl command that created the object (it owns the defaults it stored).

    With kubectl's own field managers, kubectl's other apply mode counts as the applier too (a team
    moving from client- to server-side apply is not another writer).
    """
    if owner.subresource:
        return False
    if is_ours(owner, case) or owner.manager in CREATION_MANAGERS:
        return True
    return case.field_manager in KUBECTL_APPLIERS and KUBECTL_APPLIERS.get(owner.manager) == owner.operation


def manager_text(owner: Owner) -> str:
    """A manager as the API server names it in a conflict."""
    from .managed_fields import go_quote

    text = go_quote(owner.manager)
    if owner.subresource:
        text += f" with subresource {go_quote(owner.subresource)}"
    if owner.operation == "Update" and owner.api_version:
        text += f" using {owner.api_version}"
    return text


def ssa_text(obj: Mapping[str, Any], path: FieldPath) -> str:
    """The server-side-apply spelling of a path of `obj` (`.spec.containers[name="web"].image`)."""
    import json

    from .managed_fields import go_quote

    out = []
    node: Any = obj
    for step in path:
        if isinstance(step, int):
            item = node[step] if isinstance(node, list) and 0 <= step < len(node) else None
            key = _item_key(item)
            if key is not None:
                value = key[1]
                shown = go_quote(value) if isinstance(value, str) else json.dumps(value)
                out.append(f"[{key[0]}={shown}]")
            else:
                out.append(f"[{step}]")
            node = item
        else:
            out.append(f".{step}")
            node = node.get(step) if isinstance(node, Mapping) else None
    return "".join(out)


# Fields of a live object that are the API server's and kubectl's bookkeeping, not a configuration.
BOOKKEEPING: tuple[FieldPath, ...] = (
    ("status",), ("metadata", "managedFields"), ("metadata", "resourceVersion"), ("metadata", "uid"),
    ("metadata", "creationTimestamp"), ("metadata", "generation"), ("metadata", "annotations", LAST_APPLIED),
)


def bookkeeping(path: Sequence[str | int]) -> bool:
    return any(tuple(path[: len(skip)]) == skip for skip in BOOKKEEPING)


# --- comparing values -----------------------------------------------------------------------------

def same(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def covered(wanted: Any, actual: Any) -> bool:
    """Whether `actual` holds every value `wanted` sets (the server adds defaults around them)."""
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(
            covered(v, actual.get(k, MISSING)) for k, v in wanted.items() if v is not None
        )
    if isinstance(wanted, list):
        return isinstance(actual, list) and len(wanted) == len(actual) and all(map(covered, wanted, actual))
    if actual is MISSING:
        return False
    if isinstance(wanted, (int, float)) and isinstance(actual, str) or isinstance(actual, (int, float)) and isinstance(wanted, str):
        return str(wanted) == str(actual)  # quantities: 1 and "1"
    return same(wanted, actual)


def leaves(obj: Any, path: FieldPath = ()) -> Iterator[tuple[FieldPath, Any]]:
    """Every leaf of a value: scalars, empty maps, and lists of scalars (whole)."""
    if isinstance(obj, Mapping) and obj:
        for key, value in obj.items():
            yield from leaves(value, path + (key,))
    elif isinstance(obj, list) and obj and all(isinstance(item, Mapping) for item in obj):
        for index, item in enumerate(obj):
            yield from leaves(item, path + (index,))
    else:
        yield path, obj


def show(value: Any, limit: int = 120) -> str:
    """A value for a message: JSON, shortened."""
    import json

    if value is MISSING:
        return "(unset)"
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- values never shown ------------------------------------------------------------------------------

REDACTED = "<redacted>"
# a Secret's values, and kubectl's copy of them in the last-applied annotation
SECRET_FIELDS: tuple[FieldPath, ...] = (("data",), ("stringData",), ("metadata", "annotations", LAST_APPLIED))
_SCRUB_MIN = 4  # a value this long is replaced wherever it appears in a message; shorter ones only when quoted


def sensitive_fields(case: LiveCase) -> list[FieldPath]:
    """The field paths of this object whose values are never shown ("*": any key or index)."""
    group, kind = group_kind(case.manifest)
    fields = list(SECRET_FIELDS) if (group, kind) == ("", "Secret") else []
    for entry in case.sensitive:
        which, _, path = entry.partition(":")
        if which in ("*", kind):
            fields.append(tuple(parse_field(path)))
    return fields


def is_sensitive(case: LiveCase, path: Sequence[str | int]) -> bool:
    """Whether a value at `path` is, holds or lies inside a sensitive field (the whole object: () holds them all)."""
    for field in sensitive_fields(case):
        if all(f == "*" or f == step or str(f) == str(step) for f, step in zip(field, path)):
            return True
    return False


def show_at(case: LiveCase, path: Sequence[str | int], value: Any, limit: int = 120) -> str:
    """`show(value)`, or REDACTED for a value of a sensitive field."""
    return REDACTED if value is not MISSING and is_sensitive(case, path) else show(value, limit)


def secret_texts(case: LiveCase) -> list[str]:
    """Every sensitive value of the case's objects as a message could quote it (base64-decoded too), longest first."""
    import base64
    import json

    found: set[str] = set()
    fields = sensitive_fields(case)
    for obj in (case.manifest, case.live, case.result, case.fresh):
        if not isinstance(obj, Mapping):
            continue
        for path, value in leaves(obj):
            if not any(all(f == "*" or f == s or str(f) == str(s) for f, s in zip(field, path)) and len(path) >= len(field)
                       for field in fields):
                continue
            for item in value if isinstance(value, list) else [value]:
                text = item if isinstance(item, str) else json.dumps(item, default=str)
                found.update((text, json.dumps(text)[1:-1]))
            if isinstance(value, str) and path[:1] == ("data",):
                try:
                    found.add(base64.b64decode(value, validate=True).decode("utf-8"))
                except (ValueError, UnicodeDecodeError):
                    pass
    return sorted((t for t in found if t), key=len, reverse=True)


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with each secret replaced by REDACTED: anywhere when long enough, else where it is quoted."""
    for secret in secrets:
        if len(secret) >= _SCRUB_MIN:
            text = text.replace(secret, REDACTED)
        else:
            for quote in ('"', "'", "`"):
                text = text.replace(f"{quote}{secret}{quote}", f"{quote}{REDACTED}{quote}")
    return text


def label(obj: Mapping[str, Any]) -> str:
    """`Kind/namespace/name` of an object of the cluster."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    parts = [str(obj.get("kind") or "?"), str(meta.get("namespace") or ""), str(meta.get("name") or "?")]
    return "/".join(p for p in parts if p)


def last_applied(live: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The kubectl last-applied-configuration of a live object, parsed (None: none, or unreadable)."""
    notes = get_path(live or {}, ("metadata", "annotations"))
    text = notes.get(LAST_APPLIED) if isinstance(notes, Mapping) else None
    if not isinstance(text, str):
        return None
    import json

    try:
        found = json.loads(text)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


# --- fields the API server will not change --------------------------------------------------------

EXACT = "exact"  # the live value must equal the manifest's
SET_VALUES = "set"  # every value the manifest sets must be live (defaults come on top)

# (group, kind) -> paths that may not change once the object exists; from the API server's
# validation of updates (apps, batch, core, rbac, storage). StatefulSet: every spec field but
# replicas, ordinals, template, updateStrategy, revisionHistoryLimit,
# persistentVolumeClaimRetentionPolicy and minReadySeconds.
IMMUTABLE: dict[tuple[str, str], tuple[tuple[FieldPath, str], ...]] = {
    ("apps", "Deployment"): ((("spec", "selector"), EXACT),),
    ("apps", "ReplicaSet"): ((("spec", "selector"), EXACT),),
    ("apps", "DaemonSet"): ((("spec", "selector"), EXACT),),
    ("apps", "StatefulSet"): (
        (("spec", "selector"), EXACT), (("spec", "serviceName"), EXACT),
        (("spec", "podManagementPolicy"), EXACT), (("spec", "volumeClaimTemplates"), SET_VALUES),
    ),
    ("batch", "Job"): (
        (("spec", "selector"), SET_VALUES), (("spec", "template"), SET_VALUES), (("spec", "completionMode"), EXACT),
    ),
    ("", "Service"): ((("spec", "clusterIP"), EXACT), (("spec", "clusterIPs"), EXACT)),
    ("", "PersistentVolumeClaim"): (
        (("spec", "accessModes"), EXACT), (("spec", "selector"), EXACT), (("spec", "storageClassName"), EXACT),
        (("spec", "volumeMode"), EXACT), (("spec", "dataSource"), EXACT), (("spec", "dataSourceRef"), EXACT),
    ),
    ("", "Secret"): ((("type",), EXACT),),
    ("rbac.authorization.k8s.io", "RoleBinding"): ((("roleRef",), EXACT),),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ((("roleRef",), EXACT),),
    ("storage.k8s.io", "StorageClass"): (
        (("provisioner",), EXACT), (("parameters",), EXACT), (("reclaimPolicy",), EXACT),
        (("volumeBindingMode",), EXACT),
    ),
}
# ConfigMaps and Secrets marked `immutable: true` keep their data.
_IMMUTABLE_DATA: tuple[tuple[FieldPath, str], ...] = ((("data",), EXACT), (("binaryData",), EXACT))


def immutable_changes(manifest: Mapping[str, Any], live: Mapping[str, Any]) -> list[tuple[FieldPath, Any, Any]]:
    """(path, live value, manifest value) of each field the manifest changes that may not change."""
    group, kind = group_kind(manifest)
    table = IMMUTABLE.get((group, kind), ())
    if (group, kind) in (("", "ConfigMap"), ("", "Secret")) and live.get("immutable") is True:
        table = table + _IMMUTABLE_DATA
    out = []
    for path, how in table:
        wanted = value_at(manifest, path)
        if wanted is MISSING or wanted is None:
            continue
        actual = value_at(live, path)
        if actual is MISSING and how == SET_VALUES:
            continue
        if how == EXACT and _normal(wanted) != _normal(actual) or how == SET_VALUES and not covered(wanted, actual):
            out.append((path, actual, wanted))
    return out


def _normal(value: Any) -> Any:
    """Equality modulo what the server drops: empty maps and lists, and nulls."""
    if isinstance(value, Mapping):
        return {k: _normal(v) for k, v in value.items() if v not in (None, {}, []) and _normal(v) not in ({}, [])}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if value is MISSING:
        return None
    return value


def format_steps(path: Sequence[str | int]) -> str:
    """`spec.containers[0].image`: a path as validation messages spell it."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out
