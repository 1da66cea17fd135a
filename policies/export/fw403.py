"""FW403 autoscaler-owned-field-reset as two MutatingAdmissionPolicies (see policies/export/assemble.py).

The autoscalers are the policies' params: the binding selects every HorizontalPodAutoscaler
(`autoscaling/v2`), respectively every VerticalPodAutoscaler (`autoscaling.k8s.io/v1`), of
the request's namespace, and the API server evaluates the policy once per param. Each
evaluation asks whether its autoscaler targets the workload (group, kind, name, as
policies/autoscalers.py reads a target) and, if so, keeps the live values:

- `fw403-replicas` (HPAs): on UPDATE, the live replica count whenever the request carries
  another one; on CREATE, `on-create` clamp or drop to the HPA's range;
- `fw403-resources` (VPAs whose updateMode is not Off): on UPDATE, the requests and limits
  the VPA controls in each container the live template has too (containerPolicies: the
  container's own, else the last `*`; `mode: Off`; `controlledResources`, default cpu and
  memory; `RequestsOnly`), with the rule's request-within-limit fitting.

Both are JSONPatch mutations of the workload itself: the `scale` subresource (the HPA's
writes) and pods (the VPA's) are never matched. The workload kinds and where they keep
their replica count and pod template come from the rule, `custom-resources` included.
"""

from __future__ import annotations

from typing import Any

from ..autoscalers import _VPA_WELL_KNOWN  # the kinds a VPA resolves by kind alone (same package)
from .cel import Options, Policy, child, exemption_conditions, let, literal
from ..rules import autoscaler_owned_field_reset as rule

CODE, NAME = rule.CODE, rule.NAME

# The built-in workloads: (group, kind, resource).
WORKLOADS = (
    ("apps", "Deployment", "deployments"),
    ("apps", "StatefulSet", "statefulsets"),
    ("apps", "ReplicaSet", "replicasets"),
    ("apps", "DaemonSet", "daemonsets"),
    ("batch", "Job", "jobs"),
    ("batch", "CronJob", "cronjobs"),
    ("", "ReplicationController", "replicationcontrollers"),
)
MAX_PATH_KEYS = 8  # a configured replicas-path or template-path longer than this is not followed
POSITIONS = list(range(64))  # (controlledResources entries read at most)
HPA = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"}
VPA = {"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler"}
_MOVED = ["Deployment", "DaemonSet", "ReplicaSet"]  # legacy extensions kinds that mean the apps ones


def builtin_paths() -> dict[str, list[list[str]]]:
    """`group/Kind` -> [replicas path, template path] ([] for none), as the rule reads them."""
    table: dict[str, list[list[str]]] = {}
    for group, kind, _ in WORKLOADS:
        paths = rule._workload_paths(group, kind, {})  # (the rule's own table: same package)
        assert paths is not None
        table[f"{group}/{kind}"] = [[str(part) for part in path or ()] for path in (paths.replicas, paths.template)]
    return table


def custom_paths(entries: Any) -> dict[str, list[list[str]]]:
    """The `custom-resources` option as the policies read it: `group/Kind` -> [replicas path, template path].

    The first entry for a kind wins, an absent path is the default one, `[]` means none (the rule's reading).
    """
    table: dict[str, list[list[str]]] = {}
    for entry in entries or ():
        key = f"{entry.get('group', '')}/{entry['kind']}"
        if key not in table:
            table[key] = [[str(part) for part in entry.get(name, default)] for name, default in
                          (("replicas-path", rule.REPLICAS_PATH), ("template-path", rule.TEMPLATE_PATH))]
    return table


def get_path(root: str, path: str, depth: int = 0) -> str:
    """CEL: the value at `path` (a CEL list of keys) below `root`, null where a key is missing."""
    if depth == MAX_PATH_KEYS:
        return "null"
    var = f"a{depth}"
    inner = f"size({path}) == {depth + 1} ? {var} : {get_path(var, path, depth + 1)}"
    return let(var, child(root, f"{path}[{depth}]"), inner) if depth else \
        f"(size({path}) == 0 ? null : {let(var, child(root, f'{path}[0]'), inner)})"


def pointer(path: str) -> str:
    """CEL: the JSON pointer of a CEL list of keys."""
    return f"'/' + {path}.map(p, jsonpatch.escapeKey(p)).join('/')"


def _count(value: str) -> str:
    return f"(type({value}) == int && {value} >= 0)"


def _group_of(api_version: str, kind: str) -> str:
    """CEL: the canonical API group an apiVersion names for `kind` (`extensions` Deployments mean apps)."""
    return let("av", api_version, let(
        # (`contains` first: Kubernetes 1.32's ''.lastIndexOf('/') fails with "index out of range: -1")
        "ag", "av.contains('/') ? av.substring(0, av.lastIndexOf('/')) : ''",
        f"ag == 'extensions' && {kind} in {literal(_MOVED)} ? 'apps' : ag"))


def _workload(options: Options, body: str) -> str:
    """CEL: `body` with `group` (canonical), `paths` ([replicas path, template path] of the request's kind)
    and `name` (the object's, or the request's) bound. No `variables`: a MutatingAdmissionPolicy with
    variables and match conditions is refused when it is the first one an API server validates
    (kubernetes/kubernetes#134808), and two with different variables can be refused in turn; lets
    (one-element comprehensions) say the same thing, evaluated in order."""
    group = f"request.kind.group == 'extensions' && request.kind.kind in {literal(_MOVED)} ? 'apps' : request.kind.group"
    custom = options.cel(CODE, "custom-resources")
    builtin = literal(builtin_paths())
    paths = (f"[group + '/' + request.kind.kind].map(wk, wk in {custom} ? {custom}[wk] : "
             f"wk in {builtin} ? {builtin}[wk] : [[], []])[0]")
    name = ("has(object.metadata.name) && object.metadata.name != '' ? object.metadata.name : "
            "has(request.name) ? request.name : ''")  # (generateName: neither has one yet)
    return let("group", group, let("paths", paths, let("name", name, body)))


def _match_constraints(options: Options, operations: list[str]) -> dict[str, Any]:
    rules: list[dict[str, Any]] = []
    for group in dict.fromkeys(g for g, _, _ in WORKLOADS):
        rules.append({"apiGroups": [group], "apiVersions": ["*"], "operations": operations,
                      "resources": [r for g, _, r in WORKLOADS if g == group], "scope": "Namespaced"})
    groups = options.custom_groups(CODE)
    if groups:  # custom resources: every resource of their groups; `paths` picks the kinds
        rules.append({"apiGroups": groups, "apiVersions": ["*"], "operations": operations, "resources": ["*"],
                      "scope": "Namespaced"})
    return {"matchPolicy": "Equivalent", "resourceRules": rules}


def _conditions(options: Options) -> list[dict[str, str]]:
    def cel(option: str) -> str:
        return options.cel(CODE, option)

    return exemption_conditions(CODE, NAME, cel("exempt-namespaces"), cel("exempt-users"), cel("exempt-groups"))


def replicas(options: Options) -> Policy:
    """Keep the live spec.replicas of a workload an HPA scales (on CREATE: on-create)."""
    ref = "params.spec.scaleTargetRef"
    on_create = options.cel(CODE, "on-create")
    targeted = (f"has({ref}) && has({ref}.kind) && {ref}.kind == request.kind.kind && has({ref}.name) && "
                f"{ref}.name == name && "
                + _group_of(f"has({ref}.apiVersion) ? {ref}.apiVersion : ''", f"{ref}.kind") + " == group")
    lower = f"has(params.spec.minReplicas) && {_count('params.spec.minReplicas')} ? params.spec.minReplicas : 1"
    upper = f"has(params.spec.maxReplicas) && {_count('params.spec.maxReplicas')} ? params.spec.maxReplicas : -1"
    wanted = let("w", f"{on_create} == 'clamp' ? asked : lower",
                 let("w2", "w > lower ? w : lower", "upper >= 0 && w2 > upper ? upper : w2"))
    add = "JSONPatch{op: 'add', path: " + pointer("path") + ", value: %s}"
    keep = let("live", get_path("oldObject", "path"),
               f"{_count('live')} && !({_count('asked')} && asked == live) ? [{add % 'live'}] : []")
    create = (f"{on_create} in ['clamp', 'drop'] && {_count('asked')} ? "
              + let("lower", lower, let("upper", upper, let("wanted", wanted,
                                                            f"wanted != asked ? [{add % 'wanted'}] : []"))) + " : []")
    patch = _workload(options, let("path", "paths[0]", "size(path) == 0 ? [] : " + let(
        "targeted", targeted, "!targeted ? [] : " + let(
            "asked", get_path("object", "path"), f"request.operation == 'UPDATE' ? {keep} : {create}"))))
    spec: dict[str, Any] = {
        "paramKind": HPA,
        "matchConstraints": _match_constraints(options, ["CREATE", "UPDATE"]),
        "matchConditions": _conditions(options),
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
        "reinvocationPolicy": "IfNeeded",
    }
    return Policy("MutatingAdmissionPolicy", f"{CODE.lower()}-replicas", spec, param_kind=HPA)


def _exceeds(request: str, limit: str) -> str:
    return (f"(type({request}) == string && type({limit}) == string && isQuantity({request}) && "
            f"isQuantity({limit}) && quantity({request}).isGreaterThan(quantity({limit})))")


def _resource_tokens() -> str:
    """CEL: for resource `r` of container `i` (live resources `lr`, asked `ar`, controlled `ctl`), the
    operations to do as tokens `S|i|requests|r` (set the live value) or `D|i|limits|r` (remove)."""
    values = "[" + ", ".join(child(child(side, f"'{kind}'"), "r") for side in ("lr", "ar")
                             for kind in ("requests", "limits")) + "]"
    kr, kl = "(r in ctl[0])", "(r in ctl[1])"
    wanted = f"[{kr} ? p[0] : p[2], {kl} ? p[1] : p[3]]"
    # A kept value must not leave a request above its limit: then the live pair if it fits, else the request's.
    fitted = (f"{_exceeds('w[0]', 'w[1]')} ? ({kr} && {kl} ? [p[2], p[3]] : "
              f"(({kr} ? p[1] : p[0]) != null && !{_exceeds('p[0]', 'p[1]')} ? [p[0], p[1]] : [p[2], p[3]])) : w")
    tokens = ("(f[0] == p[2] ? '' : (f[0] == null ? 'D|' : 'S|') + string(i) + '|requests|' + r) + ';' + "
              "(f[1] == p[3] ? '' : (f[1] == null ? 'D|' : 'S|') + string(i) + '|limits|' + r)")
    return let("p", values, let("w", wanted, let("f", fitted, tokens)))


def _container_tokens() -> str:
    """CEL: the tokens of container `i` of the request (one the live template has too, by name)."""
    named = "type(c) == map && has(c.name) && type(c.name) == string"
    policy = let("own", "policies.filter(q, type(q) == map && has(q.containerName) && q.containerName == c.name)",
                 let("star", "policies.filter(q, type(q) == map && has(q.containerName) && q.containerName == '*')",
                     "size(own) > 0 ? own[0] : size(star) > 0 ? star[size(star) - 1] : null"))
    listed = ("pol != null && has(pol.controlledResources) && type(pol.controlledResources) == list ? "
              "pol.controlledResources.filter(x, type(x) == string) : ['cpu', 'memory']")
    unique = f"{literal(POSITIONS)}.filter(n, n < size(res) && res.indexOf(res[n]) == n).map(n, res[n])"
    controlled = let("pol", policy, (
        "pol != null && has(pol.mode) && pol.mode == 'Off' ? [[], []] : "
        + let("res", listed, let("res", unique, "[res, pol != null && has(pol.controlledValues) && "
                                                "pol.controlledValues == 'RequestsOnly' ? [] : res]"))))
    resources = "type(R) == map && has(R.resources) && type(R.resources) == map ? R.resources : {}"
    per_container = let("ctl", controlled, let(
        "lr", resources.replace("R", "lm[0]"), let(
            "ar", resources.replace("R", "c"),
            f"ctl[0].map(r, {_resource_tokens()}).join(';')")))
    # Missing maps are added before values are set in them.
    prefixed = ("(!has(c.resources) && sd.contains('S|') ? 'R|' + string(i) + ';' : '') + "
                "((!has(c.resources) || !has(c.resources.requests)) && sd.contains('S|' + string(i) + '|requests|') "
                "? 'M|' + string(i) + '|requests;' : '') + "
                "((!has(c.resources) || !has(c.resources.limits)) && sd.contains('S|' + string(i) + '|limits|') "
                "? 'M|' + string(i) + '|limits;' : '') + sd")
    body = let("lm", "live.filter(l, type(l) == map && has(l.name) && l.name == c.name)",
               f"size(lm) == 0 ? '' : {let('sd', per_container, prefixed)}")
    return let("c", "containers[i]", f"!({named}) ? '' : {body}")


SPLIT = "t.split('|')"


def resources(options: Options) -> Policy:
    """Keep the live requests and limits a VPA controls in a workload's pod template."""
    ref = "params.spec.targetRef"
    mode = "params.spec.updatePolicy.updateMode"
    base = pointer("cpath") + " + '/' + q[1] + '/resources'"
    key = " + '/' + q[2] + '/' + jsonpatch.escapeKey(q[3])"
    live_value = "live.filter(l, type(l) == map && has(l.name) && l.name == containers[int(q[1])].name)[0].resources[q[2]][q[3]]"

    def each(tag: str, patch: str) -> str:
        return f"tk.filter(t, t.startsWith('{tag}|')).map(t, {let('q', SPLIT, patch)})"

    ops = let("tk", "tokens.split(';').filter(t, t != '')", " + ".join([
        each("R", f"JSONPatch{{op: 'add', path: {base}, value: {{}}}}"),
        each("M", f"JSONPatch{{op: 'add', path: {base} + '/' + q[2], value: {{}}}}"),
        each("S", f"JSONPatch{{op: 'add', path: {base}{key}, value: {live_value}}}"),
        each("D", f"JSONPatch{{op: 'remove', path: {base}{key}}}"),
    ]))
    targeted = (f"has({ref}) && has({ref}.kind) && {ref}.kind == request.kind.kind && has({ref}.name) && "
                f"{ref}.name == name && ({ref}.kind in {literal(_VPA_WELL_KNOWN)} ? "
                f"{literal(_VPA_WELL_KNOWN)}[{ref}.kind] : has({ref}.apiVersion) ? "
                f"{_group_of(f'{ref}.apiVersion', f'{ref}.kind')} : '') == group")
    off = (f"has(params.spec.updatePolicy) && has({mode}) && type({mode}) == string && {mode} == 'Off'")
    policies = ("has(params.spec.resourcePolicy) && has(params.spec.resourcePolicy.containerPolicies) && "
                "type(params.spec.resourcePolicy.containerPolicies) == list ? "
                "params.spec.resourcePolicy.containerPolicies : []")
    tokens = f"containers.map(x, containers.indexOf(x)).map(i, {_container_tokens()}).join(';')"
    patch = _workload(options, "size(paths[1]) == 0 ? [] : " + let(
        "targeted", targeted, f"!targeted || {off} ? [] : " + let(
            "cpath", "paths[1] + ['spec', 'containers']", let(
                "containers", get_path("object", "cpath"), let(
                    "live", get_path("oldObject", "cpath"),
                    "type(containers) != list || type(live) != list ? [] : " + let(
                        "policies", policies, let("tokens", tokens, ops)))))))
    spec: dict[str, Any] = {
        "paramKind": VPA,
        "matchConstraints": _match_constraints(options, ["UPDATE"]),
        "matchConditions": _conditions(options),
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
        "reinvocationPolicy": "IfNeeded",
    }
    # Without the VPA CRD the API server cannot resolve the paramKind and fails the policy on every
    # workload update: Ignore keeps that from blocking deploys (as the webhook finds no VPAs then).
    return Policy("MutatingAdmissionPolicy", f"{CODE.lower()}-resources", spec, param_kind=VPA,
                  failure_policy_fixed="Ignore")


def build(options: Options) -> list[Policy]:
    """The MutatingAdmissionPolicies of FW403."""
    return [replicas(options), resources(options)]


EXACTNESS = "approximate"
NOTES = (
    "Stored objects are the webhook's: on UPDATE the live spec.replicas of a workload an HPA of its "
    "namespace targets (0 included; never removed, never status.replicas), and the live requests and "
    "limits a VPA (updateMode not Off) controls, with containerPolicies, mode Off, controlledResources, "
    "RequestsOnly and the request-within-limit fitting; on CREATE, on-create clamp/drop; server-side dry "
    "runs get the same answer; custom-resources with their own paths.",
    "No warnings: a MutatingAdmissionPolicy cannot add one, so `kept spec.replicas=7 ...` is not said "
    "(the object is the same).",
    "KEDA ScaledObjects are seen through the HPA KEDA makes for each (keda-hpa-<name>); on CREATE, "
    "on-create clamp/drop then use that HPA's range instead of the ScaledObject's own "
    "minReplicaCount/maxReplicaCount.",
    "Two autoscalers on one workload (FW302 flags it): the API server applies each param in turn, so "
    "on-create clamp/drop take the last HPA's range instead of the tightest of all, and two VPAs' "
    "controlled resources are kept one VPA after the other instead of as one union (the same result "
    "unless the request-within-limit fitting involves both).",
    "A custom resource whose request lacks the mapping that holds its replica count (custom-resources "
    "replicas-path) is left as it is (the webhook creates the mapping); paths longer than 8 keys are "
    "not followed; VPA controlledResources past the 64th entry are not read.",
    "The VPA policy needs the VerticalPodAutoscaler CRD; without it the API server cannot resolve its "
    "params and ignores the policy (failurePolicy Ignore, always): nothing to keep, as with the webhook.",
    "Keep the bindings in place: on an API server without the fix of kubernetes/kubernetes#130887, once "
    "no binding names HPAs as params (fieldwarden-fw403-replicas deleted, even for a moment) the API "
    "server no longer sees any HPA until it restarts, and this policy keeps nothing; replace it with "
    "`kubectl apply` or `helm upgrade`, not delete and create (VPAs, a CRD, are not affected).",
    "scale, status and pods/resize are never matched (the autoscalers' own writes go through).",
)
