"""An update resets `spec.replicas` or container `resources` that an autoscaler owns.

## What it does
A mutating admission rule. On `UPDATE` of a workload — a Deployment, StatefulSet,
ReplicaSet, DaemonSet, ReplicationController, Job or CronJob, or a custom resource
listed in `custom-resources` — it keeps the live values (`oldObject`) of the fields
an autoscaler owns, and says so in a warning:

- **replicas**, when a HorizontalPodAutoscaler (any `autoscaling` version) or a
  KEDA ScaledObject in the same namespace targets the workload (group, kind, name;
  `extensions` Deployments mean the `apps` ones). The live `spec.replicas` is put
  back whenever the request carries another value — 0 included, for scale-to-zero
  autoscalers. A request cannot say "I did not set replicas": a manifest without
  the field arrives already defaulted to 1, so any other value is restored. The
  field is never removed (the API server would default it to 1 again), and
  `status.replicas` (which counts surge pods mid-rollout) is never used. When the
  live object has no replicas field (a custom resource), nothing is kept.
  DaemonSets, Jobs and CronJobs have no replicas.
- **resources**, when a VerticalPodAutoscaler (`autoscaling.k8s.io`) whose
  `updateMode` is not `Off` targets the workload: for each container of the pod
  template that the live object has too (matched by name), the requests and
  limits the VPA controls (`resourcePolicy.containerPolicies`: the container's own
  policy, else `*`; `mode: Off`; `controlledResources`, default cpu and memory;
  `controlledValues: RequestsOnly` leaves limits alone) keep their live values. A
  controlled value the live template does not set is removed from the request, so
  the template stays as it is live. Init containers, and containers the live
  object does not have, are left alone.

On `CREATE` there is no live value. `on-create` chooses what happens to the
replicas of a workload an HPA already targets:

- `keep` (default): the manifest's value stands;
- `clamp`: the value is clamped to the autoscalers' range — `minReplicas`
  (default 1; `0` for an HPA that scales to zero, a valid value under the
  `HPAScaleToZero` feature gate) to `maxReplicas` for an HPA, `minReplicaCount` (default 0) to
  `maxReplicaCount` (default 100) for a ScaledObject; with several autoscalers the
  tightest bounds apply (the upper bound wins if they cross);
- `drop`: the manifest's value is dropped *in favour of the autoscalers' minimum*
  (the lower bound above). Removing the field instead would not drop it: the API
  server re-defaults the patched object to `replicas: 1`.

A custom resource without a replicas value on `CREATE` is left as it is. Resources
are never changed on `CREATE`.

The rule never touches requests to a subresource (`scale`, which is how the HPA
writes; `status`; `pods/resize`, which is how the VPA writes in place), nor
`DELETE`. Server-side `dryRun` requests get exactly the same answer, so GitOps
tools' server-side diffs (Argo CD, Flux drift detection) converge instead of
flapping.

Options: `on-create` (above); `custom-resources`, a list of `{group, kind,
replicas-path, template-path}` where the paths are lists of keys (default
`[spec, replicas]` and `[spec, template]`; an empty list means "has none"); an
entry for a built-in kind replaces its paths. Plus the common exemptions.

A kept value never makes the object one the API server must refuse (a request above
its limit, naming a value the user never wrote). Per container and resource, when
the live value kept and the manifest's other one do not fit — `RequestsOnly` keeps
the live request 100m, the manifest lowers the limit to 80m — the live other one is
kept too (the live limit: the live pair always fitted), and a warning says so. When
there is no live one to keep (the live template sets no limit), the manifest's
request and limit both stand, unchanged: removing the user's limit would lift a bound
a quota or LimitRange may require. The warning says that too. With
`RequestsAndLimits` both live values are kept and fit as they did live. Values that
are not quantities (a custom resource's oddity) are neither kept nor compared.

## Why is this bad?
If git says `replicas: 3` and the HPA scaled the Deployment to 10, every deploy
sets it back to 3 — under load, every release scales the application down until
the HPA catches up. The same goes for container resources under a VPA: a deploy
that rewrites them rolls every pod for values the VPA replaces anyway. werf's
`set-replicas-only-on-creation` and `set-resources-only-on-creation` annotations
solve this in one deploy tool; this rule solves it in the cluster for all of them.

## Example
```yaml
# live: the HPA "web" (minReplicas 2, maxReplicas 10) scaled it to 7
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3          # kubectl apply -f deploy.yaml would scale to 3
```

## Use instead
```yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  # no replicas: the HPA owns them. With this rule the apply above also keeps 7,
  # and kubectl prints: Warning: kept spec.replicas=7, the live value (request
  # had 3): HPA web scales it
```
Custom resources are named in the configuration:
```yaml
rules:
  autoscaler-owned-field-reset:
    on-create: clamp
    custom-resources:
      - {group: argoproj.io, kind: Rollout}
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple, Sequence

from ..autoscalers import (
    NOTHING,
    OFF,
    SCALED_OBJECT,
    ControlledResources,
    vpa_controlled,
    vpa_update_mode,
)
from ..kube import canonical_group, get_path, group_kind, pod_template_path
from ..model import WARNING, FieldPath, ObjectKey
from ..rule import ADMISSION, COMMON_DEFAULTS, COMMON_OPTIONS

if TYPE_CHECKING:  # the webhook's request model: the linter reads this rule's options only
    from ..admission import AdmissionRequest, AutoscalerIndex
    from ..draft import Draft

CODE = "FW403"
NAME = "autoscaler-owned-field-reset"
SEVERITY = WARNING
SCOPE = ADMISSION
FIXABLE = False

KEEP = "keep"
CLAMP = "clamp"
DROP = "drop"

_KEYS = {"type": "array", "items": {"type": "string", "minLength": 1}}

OPTIONS: dict[str, Any] = {
    **COMMON_OPTIONS,
    "on-create": {
        "enum": [KEEP, CLAMP, DROP],
        "description": "replicas on CREATE under an HPA: keep the manifest's value, clamp it to "
        "[minReplicas, maxReplicas], or drop it for minReplicas (never removed: that means 1)",
    },
    "custom-resources": {
        "type": "array",
        "description": "custom workload kinds an autoscaler may target, with their paths",
        "items": {
            "type": "object",
            "required": ["group", "kind"],
            "additionalProperties": False,
            "properties": {
                "group": {"type": "string", "description": "API group, e.g. argoproj.io"},
                "kind": {"type": "string", "minLength": 1},
                "replicas-path": {**_KEYS, "description": "keys to the replica count; [] for none"},
                "template-path": {**_KEYS, "description": "keys to the pod template; [] for none"},
            },
        },
    },
}
DEFAULTS: dict[str, Any] = {**COMMON_DEFAULTS, "on-create": KEEP, "custom-resources": []}

REPLICAS_PATH: FieldPath = ("spec", "replicas")
TEMPLATE_PATH: FieldPath = ("spec", "template")
_WITH_REPLICAS = frozenset(
    {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet"), ("", "ReplicationController")}
)
_SHORT_KINDS = {"HorizontalPodAutoscaler": "HPA", "VerticalPodAutoscaler": "VPA"}
_MAX_WARNING = 120
_MAX_CONTAINER_WARNINGS = 3
_MAX_NOTES = 1  # why a pair was kept or left whole: the first one, then how many more


class _Paths(NamedTuple):
    """Where a workload kind keeps its replica count and its pod template (None: nowhere)."""

    replicas: FieldPath | None
    template: FieldPath | None


def mutate(
    request: AdmissionRequest, draft: Draft, conf: Mapping[str, Any], autoscalers: AutoscalerIndex
) -> list[str]:
    """Keep autoscaler-owned fields of a workload at their live values; return warnings."""
    if request.sub_resource or request.operation not in ("CREATE", "UPDATE"):
        return []
    group = canonical_group(request.group, request.kind)
    paths = _workload_paths(group, request.kind, conf)
    if paths is None:
        return []  # (a pod, most of the time)
    key = _key(request, draft.object, group, autoscalers.default_namespace)
    if key is None:
        return []
    horizontal = autoscalers.horizontal(key) if paths.replicas else []
    if request.operation == "CREATE":
        if not horizontal or paths.replicas is None:
            return []
        return _on_create(draft, paths.replicas, horizontal, str(conf.get("on-create", KEEP)))
    old = request.old_object
    if type(old) is not dict and not isinstance(old, Mapping):  # (dict first: typing's isinstance is slow)
        return []
    warnings: list[str] = []
    if horizontal and paths.replicas is not None:
        warnings += _keep_replicas(draft, old, paths.replicas, horizontal)
    if paths.template is not None:
        vertical = [vpa for vpa in autoscalers.vertical(key) if vpa_update_mode(vpa) != OFF]
        if vertical:
            warnings += _keep_resources(draft, old, paths.template, vertical)
    return warnings


def _workload_paths(group: str, kind: str, conf: Mapping[str, Any]) -> _Paths | None:
    for entry in conf.get("custom-resources") or ():
        if isinstance(entry, Mapping) and entry.get("group", "") == group and entry.get("kind") == kind:
            return _Paths(
                _configured_path(entry.get("replicas-path"), REPLICAS_PATH),
                _configured_path(entry.get("template-path"), TEMPLATE_PATH),
            )
    template = pod_template_path(group, kind)
    if template is None:
        return None
    return _Paths(REPLICAS_PATH if (group, kind) in _WITH_REPLICAS else None, template)


def _configured_path(value: Any, default: FieldPath) -> FieldPath | None:
    if value is None:
        return default
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return tuple(value) or None
    return None


def _key(request: AdmissionRequest, obj: Mapping[str, Any], group: str, default_namespace: str) -> ObjectKey | None:
    meta = obj.get("metadata")
    meta = meta if type(meta) is dict or isinstance(meta, Mapping) else {}
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        name = request.name
    if not name:
        return None  # generateName: no autoscaler can name it yet
    namespace = request.namespace or meta.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        namespace = default_namespace
    return ObjectKey(group, request.kind, namespace, name)


# --- replicas ---------------------------------------------------------------------------


def _keep_replicas(
    draft: Draft, old: Mapping[str, Any], path: FieldPath, horizontal: Sequence[Mapping[str, Any]]
) -> list[str]:
    live = get_path(old, path)
    if not _is_count(live):
        return []  # nothing live to keep; never invent a value
    asked = get_path(draft.object, path)
    if _is_count(asked) and asked == live:
        return []
    if not _set_path(draft, path, live):
        return []
    had = asked if _is_count(asked) else "none"
    return [_short(f"kept {_dotted(path)}={live}, the live value (request had {had}): {_names(horizontal)} scales it")]


def _on_create(
    draft: Draft, path: FieldPath, horizontal: Sequence[Mapping[str, Any]], mode: str
) -> list[str]:
    asked = get_path(draft.object, path)
    if mode not in (CLAMP, DROP) or not _is_count(asked):
        return []
    lower, upper = _bounds(horizontal)
    wanted = asked if mode == CLAMP else lower
    wanted = max(wanted, lower)
    if upper is not None:
        wanted = min(wanted, upper)
    if wanted == asked or not _set_path(draft, path, wanted):
        return []
    span = f"{lower}-{upper}" if upper is not None else f">={lower}"
    return [_short(f"set {_dotted(path)}={wanted} (request had {asked}; on-create {mode}): {_names(horizontal)} range {span}")]


def _bounds(horizontal: Sequence[Mapping[str, Any]]) -> tuple[int, int | None]:
    """The tightest [min, max] replica range of the autoscalers (max None: unbounded)."""
    lowers: list[int] = []
    uppers: list[int] = []
    for scaler in horizontal:
        if group_kind(scaler) == SCALED_OBJECT:
            low, high = get_path(scaler, ("spec", "minReplicaCount")), get_path(scaler, ("spec", "maxReplicaCount"))
            lowers.append(low if _is_count(low) else 0)
            uppers.append(high if _is_count(high) else 100)
        else:
            low, high = get_path(scaler, ("spec", "minReplicas")), get_path(scaler, ("spec", "maxReplicas"))
            lowers.append(low if _is_count(low) else 1)
            if _is_count(high):
                uppers.append(high)
    return max(lowers, default=1), min(uppers, default=None)


# --- resources --------------------------------------------------------------------------


def _keep_resources(
    draft: Draft, old: Mapping[str, Any], template: FieldPath, vertical: Sequence[Mapping[str, Any]]
) -> list[str]:
    containers_path = template + ("spec", "containers")
    containers = get_path(draft.object, containers_path)
    old_containers = get_path(old, template + ("spec", "containers"))
    if not isinstance(containers, list) or not isinstance(old_containers, list):
        return []
    live: dict[str, Mapping[str, Any]] = {}
    for item in old_containers:
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            live.setdefault(item["name"], item)
    kept: list[tuple[str, list[tuple[str, str]]]] = []
    notes: list[str] = []
    for index, container in enumerate(containers):
        name = container.get("name") if isinstance(container, dict) else None
        if not isinstance(name, str) or name not in live:
            continue
        controlled = _union(vpa_controlled(vpa, name) for vpa in vertical)
        if controlled:
            fields = _keep_container(draft, containers_path + (index,), live[name], controlled, notes)
            if fields:
                kept.append((name, fields))
    who = _names(vertical)
    warnings = [
        _short(f"kept live resources of container {name} ({_fields(fields)}): {who} controls them")
        for name, fields in kept[:_MAX_CONTAINER_WARNINGS]
    ]
    if len(kept) > _MAX_CONTAINER_WARNINGS:
        rest = len(kept) - _MAX_CONTAINER_WARNINGS
        warnings.append(_short(f"kept live resources of {rest} more container(s) too: {who} controls them"))
    warnings += [_short(note) for note in notes[:_MAX_NOTES]]
    if len(notes) > _MAX_NOTES:
        rest = len(notes) - _MAX_NOTES
        warnings.append(f"{rest} more request/limit pair(s) adjusted likewise: no request may exceed its limit")
    return warnings


def _fields(kept: Sequence[tuple[str, str]]) -> str:
    """`requests cpu,memory; limits cpu`."""
    by_kind: dict[str, list[str]] = {}
    for kind, resource in kept:
        by_kind.setdefault(kind, []).append(resource)
    return "; ".join(f"{kind} {','.join(names)}" for kind, names in by_kind.items())


def _union(parts: Iterable[ControlledResources]) -> ControlledResources:
    requests: frozenset[str] = frozenset()
    limits: frozenset[str] = frozenset()
    for part in parts:
        requests |= part.requests
        limits |= part.limits
    return ControlledResources(requests, limits) if requests or limits else NOTHING


_Pair = tuple[Any, Any]  # (request, limit) of one resource; None: not set
_KINDS = ("requests", "limits")
_SLOT_NAMES = ("request", "limit")
_VALUE_TYPES = (type(None), str, int, float)  # what a quantity can be in JSON, or not set


def exceeds(request: Any, limit: Any) -> bool:
    """Whether `request` is above `limit` (_quantity.exceeds, imported on first use: it needs
    `decimal`, and the linter, which loads every rule, never calls it)."""
    from ._quantity import exceeds as compare

    return compare(request, limit)


def _keep_container(
    draft: Draft, at: FieldPath, live: Mapping[str, Any], controlled: ControlledResources, notes: list[str]
) -> list[tuple[str, str]]:
    """Restore the controlled requests / limits of the container at `at`; return those kept.

    Per resource, the request and the limit that result must still fit (request <= limit),
    or the API server refuses the object naming a value the user never wrote. When the
    kept value and the manifest's other one do not fit, the live other one is kept too;
    when that is impossible (not set live), the manifest's pair stands. `notes` gets why.
    """
    live_resources = _mapping(live.get("resources"))
    live_values = [_mapping(live_resources.get(kind)) for kind in _KINDS]
    asked_resources = _mapping(get_path(draft.object, at + ("resources",)))
    asked_values = [_mapping(asked_resources.get(kind)) for kind in _KINDS]
    kept: list[tuple[str, str]] = []
    for resource in sorted(controlled.requests | controlled.limits):
        live_pair: _Pair = (live_values[0].get(resource), live_values[1].get(resource))
        asked: _Pair = (asked_values[0].get(resource), asked_values[1].get(resource))
        if type(live_pair[0]) not in _VALUE_TYPES or type(live_pair[1]) not in _VALUE_TYPES:
            continue  # not a quantity live (a custom resource's oddity): nothing sensible to keep
        keeps = (resource in controlled.requests, resource in controlled.limits)
        wanted: _Pair = (live_pair[0] if keeps[0] else asked[0], live_pair[1] if keeps[1] else asked[1])
        if exceeds(*wanted):
            kept_slot = None if all(keeps) else keeps.index(True)
            wanted = _fitting(live_pair, asked, kept_slot, resource, str(live["name"]), notes)
        for slot, kind in enumerate(_KINDS):
            value = wanted[slot]
            if value is asked[slot] or (value is not None and value == asked[slot]):
                continue
            values_path = at + ("resources", kind)
            if value is None:  # not set live: remove it, so the template stays as it is live
                writable_values = _replaced_mapping(draft, values_path)
                del writable_values[resource]
                if not writable_values and kind not in live_resources:
                    del _replaced_mapping(draft, at + ("resources",))[kind]
            else:
                _replaced_mapping(draft, values_path)[resource] = value
            if keeps[slot]:
                kept.append((kind, resource))  # (a value kept beyond them has a note of its own)
    return kept


def _fitting(
    live: _Pair, asked: _Pair, kept_slot: int | None, resource: str, container: str, notes: list[str]
) -> _Pair:
    """The pair to write instead of one whose request exceeds its limit: the live pair, else the manifest's.

    `kept_slot` is the live value that was kept (0 the request, 1 the limit), None when both were.
    """
    if kept_slot is None:  # (a live object the API server would not have stored)
        notes.append(f"left {resource} of container {container} as sent: its live request "
                     f"{_shown(live[0])} is above its live limit {_shown(live[1])}")
        return asked
    other = 1 - kept_slot
    kept_name, other_name = _SLOT_NAMES[kept_slot], _SLOT_NAMES[other]
    clash = (f"the new {other_name} {_shown(asked[other])} is {'below' if other else 'above'} "
             f"the live {kept_name} {_shown(live[kept_slot])}")
    if live[other] is not None and not exceeds(*live):
        kept = f"{other_name} {resource}={_shown(live[other])}"
        notes.append(f"kept the live {kept} of container {container} too: {clash}")
        return live
    why = f"no live {other_name} to keep" if live[other] is None else f"the live {other_name} does not fit either"
    notes.append(f"left {resource} of container {container} as sent: {clash}, and {why}")
    return asked


def _replaced_mapping(draft: Draft, path: FieldPath) -> dict[str, Any]:
    """The writable mapping at `path`; a missing one is made, anything else there is replaced by {}."""
    found = draft.mapping(path)
    if found is None:
        found = _replaced_mapping(draft, path[:-1])[path[-1]] = {}  # type: ignore[index]
    return found


# --- small helpers ----------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def _shown(value: Any) -> str:
    """A quantity for a warning (cut short: it comes from the request)."""
    text = "none" if value is None else str(value) if type(value) in _VALUE_TYPES else "?"
    return text if len(text) <= 16 else text[:15] + "…"


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _set_path(draft: Draft, path: FieldPath, value: Any) -> bool:
    """Set the draft's value at `path`, creating missing mappings; False if something else is in the way."""
    parent = draft.mapping(path[:-1])
    if parent is None:
        return False
    parent[path[-1]] = value  # type: ignore[index]
    return True


def _dotted(path: FieldPath) -> str:
    return ".".join(str(part) for part in path)


def _names(scalers: Sequence[Mapping[str, Any]]) -> str:
    """`HPA web`, `ScaledObject api, VPA web` — short labels for a warning."""
    labels = []
    for scaler in scalers:
        kind = str(scaler.get("kind", ""))
        name = str(get_path(scaler, ("metadata", "name")))
        name = name if len(name) <= 40 else name[:39] + "…"
        labels.append(f"{_SHORT_KINDS.get(kind, kind)} {name}")
    return ", ".join(labels)


def _short(text: str) -> str:
    """Warnings over ~120 characters may be truncated by the API server: do it ourselves."""
    return text if len(text) <= _MAX_WARNING else text[: _MAX_WARNING - 1] + "…"
