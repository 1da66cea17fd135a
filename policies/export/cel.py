"""CEL text for the exported admission policies (policies/export/assemble.py); not a rule module.

Small builders that the three exported rules share: literals written the way Go's
`encoding/json` writes them (so that Helm's `toJson` renders the very same text), a
`let` made of a one-element comprehension, key ordering, the exemption match
conditions, and the field-by-field comparison FW401 names changed paths with.

Only what Kubernetes 1.31's CEL environment offers is used (the environment a 1.32 API
server compiles new expressions in): the standard macros, the Kubernetes `lists`, `strings`
(version 2) and `quantity` libraries, and, in mutations, `JSONPatch` and `jsonpatch.escapeKey`.
No `cel.bind`, no two-variable comprehensions, no `sort`. `object`, `oldObject` and `params`
are dynamically typed in admission policies: field presence is tested with `has()` for
fixed names and `in` for keys read from data.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, NamedTuple, Protocol

from ..suppression import ANNOTATION

# How deep FW401's comparison descends into mappings, in path parts (`spec` counts):
# every change the API server lets through to admission lies within 5.
MAX_PATH_PARTS = 5


class Options(Protocol):
    """A rule's options as the exported policies read them.

    `cel` gives an option's value as CEL text: a literal when exporting (policies/export/assemble.py),
    a Helm template expression that renders the same literal when the chart is generated
    (helm/sync_policies.py). The policies' structure never depends on the values, only
    their CEL does, so one chart template serves every configuration.
    """

    def cel(self, code: str, option: str) -> str:
        """The option's value as CEL text."""
        ...

    def custom_groups(self, code: str) -> list[str]:
        """The API groups of the rule's `custom-resources` (for the policies' resource rules)."""
        ...


class Policy(NamedTuple):
    """One exported policy, before its metadata and binding are added (policies/export/assemble.py)."""

    kind: str  # "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy"
    suffix: str  # its name after the prefix, e.g. "fw403-replicas"
    spec: dict[str, Any]
    param_kind: dict[str, str] | None = None  # the params the binding selects (all of the request's namespace)
    failure_policy_fixed: str | None = None  # a failurePolicy the scope may not change (see FW403's VPA policy)


def literal(value: Any) -> str:
    """A CEL literal of JSON data, byte for byte what Go's json.Marshal (Helm's toJson) writes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def let(name: str, value: str, body: str) -> str:
    """`body` with `name` bound to `value`, evaluated once: `[value].map(name, body)[0]`."""
    return f"[{value}].map({name}, {body})[0]"


def keys(mapping: str) -> str:
    """The keys of a value that may be no map at all (then none)."""
    return f"(type({mapping}) == map ? {mapping}.map(kk, kk) : [])"


def child(mapping: str, key: str) -> str:
    """`mapping[key]`, or null when `mapping` is no map or lacks the key."""
    return f"(type({mapping}) == map && {key} in {mapping} ? {mapping}[{key}] : null)"


def sorted_keys(names: str, var: str) -> str:
    """A list of distinct strings in ascending order (no `sort()` before Kubernetes 1.35's lists library).

    Each position i takes the one name with i names below it.
    """
    body = f"{var}.map(x, {var}.indexOf(x)).map(i, {var}.filter(y, {var}.filter(z, z < y).size() == i)[0])"
    return let(var, names, body)


def empty(value: str) -> str:
    """The webhook's empty value: null (absent), `{}` or `[]`."""
    return f"({value} == null || {value} == {{}} || {value} == [])"


def same(old: str, new: str) -> str:
    """Equal, or both empty."""
    return f"(({empty(old)} && {empty(new)}) || {old} == {new})"


def shown_key(key: str) -> str:
    """How fieldwarden's field paths show a key after a parent: `.key`, or `["a.b/c"]`."""
    return (f"({key}.contains('.') || {key}.contains('[') || {key}.contains('/') "
            f"? '[\"' + {key} + '\"]' : '.' + {key})")


# --- match conditions -------------------------------------------------------------------


def exemption_conditions(code: str, name: str, namespaces: str, users: str, groups: str) -> list[dict[str, str]]:
    """The webhook's guard clauses as matchConditions (the request is left alone when one is false).

    `namespaces`, `users`, `groups` are CEL list literals (the rule's exempt-* options). The
    annotation is the stored object's (`oldObject` on UPDATE and DELETE), as the webhook reads
    it: a request cannot exempt itself.
    """
    annotations = "stored.metadata.annotations"
    codes = (f"{annotations}[{literal(ANNOTATION)}].split(',').map(p, p.trim()).filter(p, p != '')")
    names = (f"size(codes) == 0 || codes.exists(c, c.lowerAscii() in ['all', '*'] || "
             f"c.upperAscii() == {literal(code)} || c.lowerAscii() == {literal(name)})")
    ignored = f"has(stored.metadata.annotations) && {literal(ANNOTATION)} in {annotations} && {let('codes', codes, names)}"
    return [
        {"name": "namespace-not-exempt", "expression": f"!(request.namespace in {namespaces})"},
        {"name": "user-not-exempt",
         "expression": f"!(has(request.userInfo.username) && request.userInfo.username in {users})"},
        {"name": "groups-not-exempt",
         "expression": f"!(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {groups}))"},
        {"name": "not-ignored-by-annotation",
         "expression": "!" + let("stored", "oldObject != null ? oldObject : object", ignored)},
    ]


def metadata_value(obj: str, field: str, key: str) -> str:
    """CEL: `obj.metadata.<field>[key]` (labels or annotations), or null."""
    entries = f"{obj}.metadata.{field}"
    return f"(has({entries}) && {key} in {entries} ? {entries}[{key}] : null)"


EXEMPTION_DENIED = " (only subjects exempt from this rule, its exempt-users and exempt-groups, may exempt a running pod)"


def exemption_changes(opt_out: str) -> str:
    """CEL: FW401's reasons (a list of strings) why a pod update grants an exemption (see its `exemption_changes`).

    `opt_out` is the CEL map literal {"key": ..., "value": ...} of the opt-out label.
    """
    head = "a pod update may not grant exemptions; this one "
    note = literal(ANNOTATION)
    annotation = let("a", f"[{metadata_value('oldObject', 'annotations', note)}, "
                          f"{metadata_value('object', 'annotations', note)}]",
                     f"a[1] != null && a[1] != a[0] ? [{literal(head)} + (a[0] == null ? 'adds' : 'changes') + "
                     f"{literal(' the annotation ' + ANNOTATION + EXEMPTION_DENIED)}] : []")
    label = let("l", opt_out,
                f"{metadata_value('object', 'labels', 'l.key')} == l.value && "
                f"{metadata_value('oldObject', 'labels', 'l.key')} != l.value ? "
                f"[{literal(head + 'sets the opt-out label ')} + l.key + '=' + l.value + {literal(EXEMPTION_DENIED)}]"
                " : []")
    return f"{annotation} + {label}"


def judged_request(subresources: str, opt_out: str) -> dict[str, str]:
    """FW401's match condition: a pod itself, a sub-resource `subresources` lists, or a status write changing
    the ignore annotation or the opt-out label (the kubelet's status writes are left alone, unsent)."""
    note = literal(ANNOTATION)
    changed = let("e", f"[object, oldObject].map(o, [{metadata_value('o', 'annotations', note)}, "
                       f"{metadata_value('o', 'labels', opt_out + '.key')}])", "e[0] != e[1]")
    body = f"sub == '' || sub in {subresources} || (sub == 'status' && {changed})"
    return {"name": "judged-request",
            "expression": let("sub", "has(request.subResource) ? request.subResource : ''", body)}


# --- FW401's comparison -----------------------------------------------------------------


def ordered_keys(raw: str, mapping: str, order: str, var: str) -> str:
    """The keys of `mapping` in the order the API server writes them.

    `order` is a CEL map from raw paths (`spec`, `spec.affinity`) to the field order of the
    struct there; keys it does not list, and every key of a plain map (the API server
    writes those sorted), come in ascending order.
    """
    known = f"{order}[{raw}]"
    body = (f"{raw} in {order} ? {known}.filter(q, q in {var}) + "
            f"{sorted_keys(f'{var}.filter(q, !({known}.exists(o, o == q)))', var + 's')} : "
            f"{sorted_keys(var, var + 's')}")
    return let(var, keys(mapping), body)


def union_keys(raw: str, old: str, new: str, order: str, var: str) -> str:
    """The new value's keys, then those only the old value has (the webhook's order)."""
    return (f"({ordered_keys(raw, new, order, var)} + "
            f"{ordered_keys(raw, old, order, var)}.filter(q, !({keys(new)}.exists(n, n == q))))")


def _kind(value: str) -> str:
    """0 empty (null, {}, []), 1 a non-empty map, 2 anything else."""
    return (f"({value} == null ? 0 : type({value}) == map ? (size({value}) == 0 ? 0 : 1) : "
            f"type({value}) == list && size({value}) == 0 ? 0 : 2)")


def changed_paths(old: str, new: str, raw: str, shown: str, parts: int, relaxed: str, order: str,
                  level: int = 0, max_parts: int = MAX_PATH_PARTS) -> str:
    """CEL: the paths (joined by ', ', '' for none) where `old` and `new` differ, as FW401 names them.

    Mappings are descended (both sides non-empty maps, fewer than MAX_PATH_PARTS parts), lists
    are not; a mapping one side lacks is named whole. `raw` is the dotted path (for `relaxed`,
    a CEL list of raw paths not judged, and `order`), `shown` the path as messages show it.
    Below the first level, keys are visited in the struct order `order` gives for `raw`, else
    sorted: the webhook's order (the new object's, then keys only the old one has) wherever
    the API server lets a change through to admission.
    """
    t, d, k, v = f"t{level}", f"d{level}", f"k{level}", f"v{level}"
    walk = f"{t}[0] == 1 && {t}[1] == 1" if parts < max_parts else "false"
    under_relaxed = f"{t}[0] < 2 && {t}[1] < 2 && {relaxed}.exists(r, r.startsWith({raw} + '.'))"
    # What to do here, decided once so that the descent is written once: 0 nothing, 1 name this path, 2 descend.
    decision = (f"{raw} in {relaxed} ? 0 : ({walk}) ? ({old} == {new} ? 0 : 2) : "
                f"(({t}[0] == 0 && {t}[1] == 0) || {old} == {new}) ? 0 : ({under_relaxed}) ? 2 : 1")
    if parts < max_parts:
        below = changed_paths(f"{v}[0]", f"{v}[1]", f"{raw} + '.' + {k}", f"{shown} + {shown_key(k)}",
                              parts + 1, relaxed, order, level + 1, max_parts)
        union = f"{keys(new)} + {keys(old)}.filter(q, !({keys(new)}.exists(n, n == q)))"
        ordered = let(f"u{level}", union, f"{raw} in {order} ? {order}[{raw}].filter(q, q in u{level}) + "
                      + sorted_keys(f"u{level}.filter(q, !({order}[{raw}].exists(o, o == q)))", f"s{level}")
                      + f" : {sorted_keys(f'u{level}', f's{level}')}")
        descend = (f"{ordered}.map({k}, {let(v, f'[{child(old, k)}, {child(new, k)}]', below)})"
                   ".filter(s, s != '').join(', ')")
    else:
        descend = "''"
    body = let(d, decision, f"{d} == 0 ? '' : {d} == 1 ? {shown} : {descend}")
    return let(t, f"[{_kind(old)}, {_kind(new)}]", body)


def join_nonempty(parts: Iterable[str]) -> str:
    """CEL: the non-empty strings of `parts` joined by ', '."""
    return f"[{', '.join(parts)}].filter(s, s != '').join(', ')"
