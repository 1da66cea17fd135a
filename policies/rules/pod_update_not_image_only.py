"""A Pod UPDATE changes more than container images (admission, validating).

## What it does
On `UPDATE` of a Pod (the `pods` resource itself), compares `oldObject.spec` with
`object.spec` and denies any difference other than `spec.containers[*].image` and
`spec.initContainers[*].image`. The message names every offending field path, e.g.
`spec.containers[name=app].env, spec.tolerations`. Metadata (labels, annotations,
finalizers, ownerReferences) is never compared: controllers edit it all the time.

Containers are compared **by index**, as the API server's `ValidatePodUpdate` does:
an added or removed container is reported at its index (`spec.containers[1]`), and so
is a reordered or renamed one. Images must be non-empty and free of surrounding
whitespace; the API server rejects those anyway, the message just says so earlier.
A null, absent, `{}` or `[]` value counts as the same "empty" value. Specs nested
deeper than Python's recursion limit are compared without recursion and judged like
any other (a change is named at most 32 keys deep).

Sub-resources:

- `pods/status`: the kubelet and controllers write conditions and container
  statuses, and the API server ignores spec changes sent there; but it stores label
  and annotation changes, so only the exemption check below is made there;
- `pods/resize` and `pods/ephemeralcontainers` are judged like a pod update (their
  spec change is named: `spec.containers[name=app].resources`,
  `spec.ephemeralContainers`) only when option `subresources` lists them; by default
  they are not: an in-place resize (and the VPA's `InPlaceOrRecreate` mode) changes
  container `resources` on purpose without a restart, and `kubectl debug` is the
  cluster's break-glass tool, which RBAC on those sub-resources already controls (the
  API server lets nothing else change through them, metadata included);
- anything else (`binding`, `eviction`, `exec`, ... are not UPDATEs of the pod spec).

Exemptions cannot be granted by the request they would exempt: the webhook reads the
`fieldwarden.io/ignore` annotation from `oldObject` on UPDATE, and this rule denies a
`pods` or `pods/status` UPDATE that adds or changes that annotation, or that sets the
opt-out label (option `opt-out-label`, the chart's `admission.optOutLabel`, whose
objectSelector skips pods so labelled) to its opt-out value. Removing either is
allowed. Whoever may exempt a running pod is, in effect, not policed by this rule: list
them in `exempt-users` / `exempt-groups`, which skip the rule, this check included. A
pod created with the annotation or the label is exempt from the start: that is its
creator's decision (for a workload's pods, the template's), which FW401, a rule about
updates, does not police.

Pods that still carry `spec.schedulingGates` in `oldObject` have never been scheduled,
and queue controllers (Kueue and the like) finish them: with
`allow-gated-pod-scheduling-changes` (default true) this rule does not judge, on such a
pod, the removal of scheduling gates (adding one is still reported), nor changes of
`spec.nodeSelector`, `spec.affinity.nodeAffinity` and `spec.tolerations`. The API
server still applies its own limits there (gates can only be removed, a gated pod's
nodeSelector and required node affinity can only gain entries, tolerations can only
be added). Everything else (pod affinity, resources, env, ...) stays denied. Once
the last gate is gone the pod is ordinary and only images may change.

With `require-gate-false` (default false) an image change is also denied unless
`oldObject.status.conditions` holds the condition `gate-condition-type` (default
`InPlaceUpdateReady`, the readiness gate FW402 injects) with status `"False"`: the
in-place update protocol first takes the pod out of its Services, then swaps the
image. This applies to every pod, gated by FW402 or not; exempt the others.

The webhook applies `enforcement` (`deny`, `warn`: allowed with a warning, `dryrun`:
logged and counted only) and the exemptions (namespaces, users, groups, the
`fieldwarden.io/ignore` annotation); this rule only tells what is wrong.

## Why is this bad?
An image change is the one spec edit Kubernetes can apply in place: the kubelet sees
the container's hash change and restarts that container only; the pod keeps its
node, IP and volumes. The API server permits a few other edits (added tolerations,
`activeDeadlineSeconds`, removing scheduling gates, ...), which breaks the promise
"a running pod is what its template said, plus a new image": a deploy tool that
patches pods in place, or a person with `kubectl edit`, drifts a pod away from every
other replica. Anything else needs a new pod, made by rolling the workload.

## Example
```yaml
# kubectl edit pod web-7d9c-abcde: env changed, toleration added
spec:
  containers:
    - name: app
      image: registry.example.com/app:1.2
      env: [{name: LOG_LEVEL, value: debug}]
  tolerations: [{key: dedicated, operator: Exists}]
```

## Use instead
```yaml
# kubectl set image pod/web-7d9c-abcde app=registry.example.com/app:1.3
# (only spec.containers[*].image changes); roll the Deployment for anything else
spec:
  containers:
    - name: app
      image: registry.example.com/app:1.3
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..model import ERROR, FieldPath, format_path
from ..suppression import ANNOTATION
from ..rule import ADMISSION, COMMON_DEFAULTS, COMMON_OPTIONS, ENFORCEMENT_DEFAULT, ENFORCEMENT_OPTION
from ._readiness_gate import CONDITION_TYPE_SCHEMA, DEFAULT_CONDITION_TYPE, pod_condition

# Pod sub-resources `subresources` may name; `status` is always looked at (for exemptions only).
OPTIONAL_SUBRESOURCES = ("ephemeralcontainers", "resize")
STATUS = "status"
LABEL_VALUE_SCHEMA: dict[str, Any] = {
    "type": "string", "pattern": r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$", "maxLength": 63,
}

if TYPE_CHECKING:  # the webhook's request model: the linter reads this rule's options only
    from ..admission import AdmissionRequest, AutoscalerIndex, Verdict

CODE = "FW401"
NAME = "pod-update-not-image-only"
SEVERITY = ERROR
SCOPE = ADMISSION
FIXABLE = False
OPTIONS: dict[str, Any] = {
    **COMMON_OPTIONS,
    **ENFORCEMENT_OPTION,
    "allow-gated-pod-scheduling-changes": {
        "type": "boolean",
        "description": "on pods with schedulingGates, allow removing gates and changing nodeSelector, "
        "node affinity and tolerations (queue controllers such as Kueue)",
    },
    "require-gate-false": {
        "type": "boolean",
        "description": "allow an image change only while the pod's gate-condition-type condition is False",
    },
    "gate-condition-type": {
        **CONDITION_TYPE_SCHEMA,
        "description": "the readiness-gate condition require-gate-false reads (FW402's condition-type)",
    },
    "opt-out-label": {
        "type": "object",
        "properties": {"key": CONDITION_TYPE_SCHEMA, "value": LABEL_VALUE_SCHEMA},
        "required": ["key", "value"],
        "additionalProperties": False,
        "description": "the label {key, value} whose pods the webhook is never sent (the chart's "
        "admission.optOutLabel): a pod update may not set it",
    },
    "subresources": {
        "type": "array",
        "items": {"enum": list(OPTIONAL_SUBRESOURCES)},
        "uniqueItems": True,
        "description": "pod sub-resources judged like a pod update: ephemeralcontainers (kubectl debug), "
        "resize (in-place resize, the VPA's InPlaceOrRecreate)",
    },
}
DEFAULTS: dict[str, Any] = {
    **COMMON_DEFAULTS,
    **ENFORCEMENT_DEFAULT,
    "allow-gated-pod-scheduling-changes": True,
    "require-gate-false": False,
    "gate-condition-type": DEFAULT_CONDITION_TYPE,
    "opt-out-label": {"key": "fieldwarden.io/admission", "value": "disabled"},
    "subresources": [],
}

CONTAINER_LISTS = ("containers", "initContainers")
# What a queue controller may change on a pod that still has scheduling gates.
GATED_POD_FIELDS: frozenset[FieldPath] = frozenset(
    {("spec", "nodeSelector"), ("spec", "affinity", "nodeAffinity"), ("spec", "tolerations")}
)
_EMPTY: tuple[Any, ...] = (None, {}, [])
# Changes below this many path parts are reported at this depth: no real pod spec nests
# mappings that deep, and a path of hundreds of parts helps nobody.
_MAX_PATH_PARTS = 32


def validate(request: AdmissionRequest, conf: Mapping[str, Any], autoscalers: AutoscalerIndex) -> Verdict | None:
    """Deny a Pod UPDATE whose spec changes anything but container images, or that grants an exemption."""
    sub = request.sub_resource
    if request.operation != "UPDATE" or request.group != "" or request.kind != "Pod" or request.resource != "pods":
        return None
    if sub and sub != STATUS and sub not in (conf.get("subresources") or ()):
        return None
    old, new = request.old_object, request.object
    # (`type(...) is dict` first: the objects are parsed JSON, and typing's isinstance is slow)
    if (type(old) is not dict and not isinstance(old, Mapping)) or (
        type(new) is not dict and not isinstance(new, Mapping)
    ):
        return None
    reasons = exemption_changes(old, new, conf.get("opt-out-label") or DEFAULTS["opt-out-label"])
    if sub == STATUS:  # the API server keeps the spec there: only the metadata can grant anything
        return _verdict(reasons)
    old_spec, new_spec = _mapping(old.get("spec")), _mapping(new.get("spec"))
    gated = bool(conf.get("allow-gated-pod-scheduling-changes", True)) and bool(old_spec.get("schedulingGates"))
    changes = _spec_changes(old_spec, new_spec, new, gated) + _bad_images(new_spec, new)
    if changes:
        reasons.append(
            "a pod update may only change spec.containers[*].image and spec.initContainers[*].image; "
            f"this one also changes {', '.join(changes)} (roll the workload to get a new pod instead)"
        )
    if conf.get("require-gate-false") and _images_change(old_spec, new_spec):
        condition_type = str(conf.get("gate-condition-type", DEFAULT_CONDITION_TYPE))
        status = (pod_condition(old, condition_type) or {}).get("status")
        if status != "False":
            shown = "absent" if status is None else f'"{status}"' if isinstance(status, str) else "not a string"
            reasons.append(
                f'an image may only change while the pod\'s condition {condition_type} is "False", and it is '
                f"{shown} (set it to False first so the pod leaves its Services, then change the image)"
            )
    return _verdict(reasons)


def _verdict(reasons: list[str]) -> Verdict | None:
    if not reasons:
        return None
    from ..admission import Verdict  # (the webhook's module: loaded by the time it asks)

    return Verdict(False, "; ".join(reasons))


EXEMPTION_DENIED = " (only subjects exempt from this rule, its exempt-users and exempt-groups, may exempt a running pod)"


def exemption_changes(old: Mapping[str, Any], new: Mapping[str, Any], opt_out: Mapping[str, Any]) -> list[str]:
    """Why the update grants the pod an exemption: the ignore annotation added or changed, the opt-out label set."""
    found: list[str] = []
    old_note, new_note = _meta(old, "annotations", ANNOTATION), _meta(new, "annotations", ANNOTATION)
    if new_note is not None and new_note != old_note:
        verb = "adds" if old_note is None else "changes"
        found.append(f"a pod update may not grant exemptions; this one {verb} the annotation {ANNOTATION}"
                     + EXEMPTION_DENIED)
    key, value = str(opt_out.get("key")), opt_out.get("value")
    if _meta(new, "labels", key) == value and _meta(old, "labels", key) != value:
        found.append(f"a pod update may not grant exemptions; this one sets the opt-out label {key}={value}"
                     + EXEMPTION_DENIED)
    return found


def _meta(obj: Mapping[str, Any], field: str, key: str) -> Any:
    """metadata.<field>[key] (labels or annotations), or None."""
    meta = obj.get("metadata")
    entries = meta.get(field) if isinstance(meta, dict) else None
    return entries.get(key) if isinstance(entries, dict) else None


def _spec_changes(
    old_spec: Mapping[str, Any], new_spec: Mapping[str, Any], new: Mapping[str, Any], gated: bool
) -> list[str]:
    try:
        if _without_images(old_spec) == _without_images(new_spec):
            return []  # the common case (an image change, or nothing), decided by one C-level comparison
    except RecursionError:
        pass  # nested deeper than `==` can go: the walk below compares without recursion
    found: list[str] = []
    relaxed = GATED_POD_FIELDS if gated else frozenset()
    for key in _keys(old_spec, new_spec):
        if key in CONTAINER_LISTS:
            found += _container_changes(key, old_spec.get(key), new_spec.get(key), new)
        elif key == "schedulingGates" and gated:
            if not _gates_only_removed(old_spec.get(key), new_spec.get(key)):
                found.append("spec.schedulingGates (gates can only be removed)")
        else:
            old_value, new_value = old_spec.get(key), new_spec.get(key)
            if _equal(old_value, new_value):
                continue  # what _diff finds first: nothing (most fields of a spec)
            found += [format_path(p, new) for p in _diff(old_value, new_value, ("spec", key), relaxed)]
    return found


def _without_images(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A shallow copy of the spec whose containers carry no `image`."""
    copy = dict(spec)
    for field in CONTAINER_LISTS:
        containers = copy.get(field)
        if isinstance(containers, list):
            copy[field] = [
                {k: v for k, v in c.items() if k != "image"} if isinstance(c, dict) else c for c in containers
            ]
    return copy


def _diff(old: Any, new: Any, path: FieldPath, relaxed: frozenset[FieldPath]) -> list[FieldPath]:
    """Paths under `path` where old and new differ: mappings are descended, lists are not.

    A mapping that one side lacks is reported whole, unless a relaxed path lies inside it,
    and so is one `_MAX_PATH_PARTS` deep. Walked with a stack, not recursion, and compared
    without it (`_equal`): a spec may nest as deep as the JSON parser allows.
    """
    found: list[FieldPath] = []
    pending = [(old, new, path)]
    while pending:
        old, new, path = pending.pop()
        if path in relaxed:
            continue
        walk = isinstance(old, dict) and isinstance(new, dict) and bool(old) and bool(new)
        walk = walk and len(path) < _MAX_PATH_PARTS
        if walk:
            try:
                if old == new:
                    continue
            except RecursionError:
                pass  # too deep for `==`: the keys below are compared one by one
        elif _same(old, new):
            continue
        descend = walk or (
            any(r[: len(path)] == path for r in relaxed) and _mapping_or_empty(old) and _mapping_or_empty(new)
        )
        if not descend:
            found.append(path)
            continue
        old_map, new_map = _mapping(old), _mapping(new)
        keys = reversed(_keys(old_map, new_map))  # (pushed last to first: reported in order)
        pending.extend((old_map.get(key), new_map.get(key), path + (key,)) for key in keys)
    return found


def _container_changes(field: str, old: Any, new: Any, new_obj: Mapping[str, Any]) -> list[str]:
    """Differences of a container list, compared by index as the API server does."""
    where = f"spec.{field}"
    if not _list_or_empty(old) or not _list_or_empty(new):
        return [] if _same(old, new) else [where]
    old_list: list[Any] = old or []
    new_list: list[Any] = new or []
    old_names = [_name(c, i) for i, c in enumerate(old_list)]
    new_names = [_name(c, i) for i, c in enumerate(new_list)]
    found: list[str] = []
    if len(old_list) != len(new_list):
        for i, name in enumerate(old_names):
            if name not in new_names:
                found.append(f'{where}[{i}] (container "{name}" removed: an update cannot remove containers)')
        for i, name in enumerate(new_names):
            if name not in old_names:
                found.append(f'{where}[{i}] (container "{name}" added: an update cannot add containers)')
        pairs = [(old_names.index(name), j) for j, name in enumerate(new_names) if name in old_names]
        return found + _field_changes(field, old_list, new_list, pairs, new_obj)
    pairs = [(i, i) for i in range(len(new_list)) if old_names[i] == new_names[i]]
    moved = [i for i in range(len(new_list)) if old_names[i] != new_names[i]]
    if moved and sorted(old_names) == sorted(new_names):
        found += [f"{where}[{i}]" for i in moved]
        found[-1] += (
            f" (containers reordered from {', '.join(old_names)} to {', '.join(new_names)}: "
            "the API server compares them by index)"
        )
    else:
        found += [f'{where}[{i}] (container "{old_names[i]}" replaced by "{new_names[i]}")' for i in moved]
    return found + _field_changes(field, old_list, new_list, pairs, new_obj)


def _field_changes(
    field: str, old_list: list[Any], new_list: list[Any], pairs: list[tuple[int, int]], new_obj: Mapping[str, Any]
) -> list[str]:
    """Changed fields (the image aside) of containers paired as (old index, new index)."""
    found: list[str] = []
    for i, j in pairs:
        old_c, new_c = old_list[i], new_list[j]
        if not isinstance(old_c, dict) or not isinstance(new_c, dict):
            if not _same(old_c, new_c):
                found.append(f"spec.{field}[{j}]")
            continue
        for key in _keys(old_c, new_c):
            if key != "image":
                old_value, new_value = old_c.get(key), new_c.get(key)
                if _equal(old_value, new_value):
                    continue  # what _diff finds first: nothing (most fields of a container)
                paths = _diff(old_value, new_value, ("spec", field, j, key), frozenset())
                found += [format_path(p, new_obj) for p in paths]
    return found


def _bad_images(spec: Mapping[str, Any], new_obj: Mapping[str, Any]) -> list[str]:
    """Images the API server would reject: empty, not a string, or with surrounding whitespace."""
    found: list[str] = []
    for field in CONTAINER_LISTS:
        containers = spec.get(field)
        for index, container in enumerate(containers if isinstance(containers, list) else []):
            if not isinstance(container, dict):
                continue
            image = container.get("image")
            if isinstance(image, str) and image and image == image.strip():
                continue  # a good image (all but never otherwise): no path to render
            where = format_path(("spec", field, index, "image"), new_obj)
            if not isinstance(image, str) or not image.strip():
                found.append(f"{where} (empty: the API server rejects it anyway)")
            elif image != image.strip():
                found.append(f"{where} ({image!r} has surrounding whitespace: the API server rejects it anyway)")
    return found


def _images_change(old_spec: Mapping[str, Any], new_spec: Mapping[str, Any]) -> bool:
    """Whether some container (paired by index) gets another image."""
    for field in CONTAINER_LISTS:
        old_list, new_list = old_spec.get(field), new_spec.get(field)
        if isinstance(old_list, list) and isinstance(new_list, list):
            for old_c, new_c in zip(old_list, new_list):
                if isinstance(old_c, dict) and isinstance(new_c, dict):
                    if not _equal(old_c.get("image"), new_c.get("image")):
                        return True
    return False


def _gates_only_removed(old: Any, new: Any) -> bool:
    """Whether every scheduling gate in `new` is in `old` too (named gates by name)."""
    old_names, old_others = _gates(old)
    new_names, new_others = _gates(new)
    return new_names <= old_names and all(any(_equal(g, o) for o in old_others) for g in new_others)


def _gates(gates: Any) -> tuple[set[str], list[Any]]:
    """The names of the gates `{name: ...}`, and the other items (which the API server rejects)."""
    if not isinstance(gates, list):
        return set(), [] if gates in _EMPTY else [gates]
    names: set[str] = set()
    others: list[Any] = []
    for gate in gates:
        name = gate.get("name") if isinstance(gate, dict) else None
        if isinstance(name, str):
            names.add(name)
        else:
            others.append(gate)
    return names, others


def _name(container: Any, index: int) -> str:
    name = container.get("name") if isinstance(container, dict) else None
    return name if isinstance(name, str) else f"#{index}"


def _keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Keys of both mappings: new's order first, then keys only old has."""
    return list(new) + [k for k in old if k not in new]


def _same(old: Any, new: Any) -> bool:
    return (old in _EMPTY and new in _EMPTY) or _equal(old, new)


def _equal(old: Any, new: Any) -> bool:
    """`old == new`, also for values nested deeper than the interpreter's recursion limit."""
    try:
        return old is new or bool(old == new)
    except RecursionError:
        return _equal_without_recursion(old, new)


def _equal_without_recursion(old: Any, new: Any) -> bool:
    """`old == new` for parsed JSON, walked with a stack."""
    pending = [(old, new)]
    while pending:
        old, new = pending.pop()
        if old is new:
            continue
        if type(old) is dict:
            if type(new) is not dict or old.keys() != new.keys():
                return False
            pending.extend((value, new[key]) for key, value in old.items())
        elif type(old) is list:
            if type(new) is not list or len(old) != len(new):
                return False
            pending.extend(zip(old, new))
        elif type(new) is dict or type(new) is list or old != new:
            return False
    return True


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _mapping_or_empty(value: Any) -> bool:
    return isinstance(value, dict) or value in _EMPTY


def _list_or_empty(value: Any) -> bool:
    return isinstance(value, list) or value in _EMPTY
