"""FW401 pod-update-not-image-only as a ValidatingAdmissionPolicy (see policies/export/assemble.py).

The policy compares `oldObject.spec` with `object.spec` key by key, as the rule does:
containers by index with their images left out, mappings descended and lists compared
whole, a null, absent, `{}` or `[]` value the same empty value, and on a pod that still
has scheduling gates (with `allow-gated-pod-scheduling-changes`) nodeSelector, node
affinity and tolerations left alone and gates only removable. Its message names every
changed path the way the rule does (`spec.tolerations`, `spec.containers[name=app].env`),
in the order the API server writes the fields. `require-gate-false` reads
`oldObject.status.conditions`. Exemptions are match conditions; `enforcement` becomes the
binding's validationActions (policies/export/assemble.py).
"""

from __future__ import annotations

from typing import Any

from .cel import (
    Options,
    Policy,
    changed_paths,
    child,
    exemption_changes,
    exemption_conditions,
    judged_request,
    let,
    literal,
    shown_key,
    union_keys,
)
from ..rules import pod_update_not_image_only as rule

CODE, NAME = rule.CODE, rule.NAME

# The order in which the API server writes these structs' fields (k8s.io/api core/v1, 1.36):
# where several fields change, the message lists them in this order, as the rule does.
POD_SPEC_FIELDS = (
    "volumes initContainers containers ephemeralContainers restartPolicy terminationGracePeriodSeconds "
    "activeDeadlineSeconds dnsPolicy nodeSelector serviceAccountName serviceAccount automountServiceAccountToken "
    "nodeName hostNetwork hostPID hostIPC shareProcessNamespace securityContext imagePullSecrets hostname subdomain "
    "affinity schedulerName tolerations hostAliases priorityClassName priority dnsConfig readinessGates "
    "runtimeClassName enableServiceLinks preemptionPolicy overhead topologySpreadConstraints setHostnameAsFQDN os "
    "hostUsers schedulingGates resourceClaims resources hostnameOverride schedulingGroup"
).split()
CONTAINER_FIELDS = (
    "name image command args workingDir ports envFrom env resources resizePolicy restartPolicy restartPolicyRules "
    "volumeMounts volumeDevices livenessProbe readinessProbe startupProbe lifecycle terminationMessagePath "
    "terminationMessagePolicy imagePullPolicy securityContext stdin stdinOnce tty"
).split()
FIELD_ORDER: dict[str, list[str]] = {
    "spec": POD_SPEC_FIELDS,
    "spec.containers[]": CONTAINER_FIELDS,
    "spec.initContainers[]": CONTAINER_FIELDS,
    "spec.affinity": ["nodeAffinity", "podAffinity", "podAntiAffinity"],
    "spec.affinity.nodeAffinity": [
        "requiredDuringSchedulingIgnoredDuringExecution",
        "preferredDuringSchedulingIgnoredDuringExecution",
    ],
    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution": ["nodeSelectorTerms"],
}
GATED_POD_FIELDS = sorted(".".join(str(p) for p in path) for path in rule.GATED_POD_FIELDS)

# Containers can change nothing but images by the time a request reaches admission (the API
# server refuses anything else first): their fields are named, not descended.
CONTAINER_PATH_PARTS = 4

# The pod and the sub-resources FW401 may judge; the match condition `judged-request` keeps those the
# options leave out (and the kubelet's status writes, unless they touch an exemption) from the policy.
RESOURCES = ("pods", "pods/status", *(f"pods/{sub}" for sub in rule.OPTIONAL_SUBRESOURCES))

ONLY_IMAGES = ("a pod update may only change spec.containers[*].image and spec.initContainers[*].image; "
               "this one also changes ")
ROLL = " (roll the workload to get a new pod instead)"


def _container_name(container: str, index: str) -> str:
    return f"(type({container}) == map && has({container}.name) && type({container}.name) == string " \
           f"? {container}.name : '#' + string({index}))"


def _containers() -> str:
    """CEL: the changes of the container list `key` (containers or initContainers), compared by index."""
    where = "'spec.' + key"
    raw = "'spec.' + key + '[]'"
    item = ("(type(cp[1]) == map && has(cp[1].name) && type(cp[1].name) == string "
            "? '[name=' + cp[1].name + ']' : '[' + string(ci) + ']')")
    fields = changed_paths("cv[0]", "cv[1]", raw + " + '.' + ck", f"{where} + {item} + {shown_key('ck')}",
                           4, "[]", "variables.order", level=10, max_parts=CONTAINER_PATH_PARTS)
    field_pair = "[" + child("cp[0]", "ck") + ", " + child("cp[1]", "ck") + "]"
    old_name, new_name = _container_name("cp[0]", "ci"), _container_name("cp[1]", "ci")
    index = f"{where} + '[' + string(ci) + ']'"
    one = (f"{old_name} != {new_name} ? {index} + ' (container \"' + {old_name} + "
           f"'\" replaced by \"' + {new_name} + '\")' : "
           f"!(type(cp[0]) == map && type(cp[1]) == map) ? (cp[0] == cp[1] ? '' : {index}) : "
           f"{union_keys(raw, 'cp[0]', 'cp[1]', 'variables.order', 'cu')}"
           f".filter(ck, ck != 'image').map(ck, {let('cv', field_pair, fields)})"
           ".filter(s, s != '').join(', ')")
    listed = (f"size(cl[0]) != size(cl[1]) ? {where} : cl[1].map(cx, cl[1].indexOf(cx))"
              f".map(ci, {let('cp', '[cl[0][ci], cl[1][ci]]', one)}).filter(s, s != '').join(', ')")
    lists = "(type(cs[0]) == list || cs[0] == null) && (type(cs[1]) == list || cs[1] == null)"
    body = (f"!({lists}) ? (cs[0] == cs[1] ? '' : {where}) : "
            f"{let('cl', '[cs[0] == null ? [] : cs[0], cs[1] == null ? [] : cs[1]]', listed)}")
    pair = "[" + child("oldObject.spec", "key") + ", " + child("object.spec", "key") + "]"
    return let("cs", pair, body)


def _gates() -> str:
    """CEL: '' when a gated pod's scheduling gates were only removed, else the rule's complaint."""
    named = "type(g) == map && has(g.name) && type(g.name) == string"
    kept = (f"type(gs[0]) == list && ({named} ? gs[0].exists(o, type(o) == map && has(o.name) && o.name == g.name)"
            " : gs[0].exists(o, o == g))")
    body = f"(type(gs[1]) == list ? gs[1] : []).all(g, {kept}) ? '' : 'spec.schedulingGates (gates can only be removed)'"
    return let("gs", "[" + child("oldObject.spec", "key") + ", " + child("object.spec", "key") + "]", body)


def _spec_changes() -> str:
    """CEL: every changed path of the spec, images aside, in the API server's field order."""
    other = let("v", "[" + child("oldObject.spec", "key") + ", " + child("object.spec", "key") + "]",
                changed_paths("v[0]", "v[1]", "'spec.' + key", f"'spec' + {shown_key('key')}", 2,
                              "variables.relaxed", "variables.order"))
    return (f"variables.specKeys.map(key, (key == 'containers' || key == 'initContainers') ? {_containers()} : "
            f"(key == 'schedulingGates' && variables.gated) ? {_gates()} : {other}).filter(s, s != '')")


def _images_change() -> str:
    pair = ("type(object.spec[f][i]) == map && type(oldObject.spec[f][i]) == map && "
            + child("oldObject.spec[f][i]", "'image'") + " != " + child("object.spec[f][i]", "'image'"))
    return ("['containers', 'initContainers'].exists(f, f in object.spec && f in oldObject.spec && "
            "type(object.spec[f]) == list && type(oldObject.spec[f]) == list && "
            f"object.spec[f].map(x, object.spec[f].indexOf(x)).exists(i, i < size(oldObject.spec[f]) && {pair}))")


def build(options: Options) -> list[Policy]:
    """The ValidatingAdmissionPolicy of FW401."""
    def cel(option: str) -> str:
        return options.cel(CODE, option)

    condition = cel("gate-condition-type")
    conditions = ("has(oldObject.status) && has(oldObject.status.conditions) && "
                  "type(oldObject.status.conditions) == list ? oldObject.status.conditions.filter(c, "
                  f"type(c) == map && has(c.type) && c.type == {condition}) : []")
    shown = ("variables.gateStatus == null ? 'absent' : type(variables.gateStatus) == string ? "
             "'\"' + variables.gateStatus + '\"' : 'not a string'")
    gate_reason = (literal("an image may only change while the pod's condition ") + f" + {condition} + "
                   + literal(' is "False", and it is ') + f" + ({shown}) + "
                   + literal(" (set it to False first so the pod leaves its Services, then change the image)"))
    reasons = (f"variables.exemptions + (size(variables.changes) > 0 ? [{literal(ONLY_IMAGES)} + "
               "variables.changes.join(', ') + "
               f"{literal(ROLL)}] : []) + ({cel('require-gate-false')} && variables.imageChanged && "
               f"variables.gateStatus != 'False' ? [{gate_reason}] : [])")
    variables = [
        {"name": "order", "expression": literal(FIELD_ORDER)},
        {"name": "gated", "expression": f"{cel('allow-gated-pod-scheduling-changes')} && "
                                        "has(oldObject.spec.schedulingGates) && "
                                        "type(oldObject.spec.schedulingGates) == list && "
                                        "size(oldObject.spec.schedulingGates) > 0"},
        {"name": "relaxed", "expression": f"variables.gated ? {literal(GATED_POD_FIELDS)} : []"},
        {"name": "specKeys", "expression": union_keys("'spec'", "oldObject.spec", "object.spec",
                                                       "variables.order", "sk")},
        {"name": "changes", "expression": _spec_changes()},
        {"name": "imageChanged", "expression": _images_change()},
        {"name": "gateConditions", "expression": conditions},
        {"name": "gateStatus", "expression": "size(variables.gateConditions) > 0 && "
                                             "has(variables.gateConditions[0].status) ? "
                                             "variables.gateConditions[0].status : null"},
        {"name": "exemptions", "expression": exemption_changes(cel("opt-out-label"))},
        {"name": "reasons", "expression": reasons},
    ]
    spec: dict[str, Any] = {
        "matchConstraints": {
            "matchPolicy": "Equivalent",
            "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                               "resources": list(RESOURCES), "scope": "Namespaced"}],
        },
        "matchConditions": [judged_request(cel("subresources"), cel("opt-out-label")),
                            *exemption_conditions(CODE, NAME, cel("exempt-namespaces"), cel("exempt-users"),
                                                  cel("exempt-groups"))],
        "variables": variables,
        "validations": [{
            "expression": "size(variables.reasons) == 0",
            "messageExpression": f"{literal(f'[{CODE} {NAME}] ')} + variables.reasons.join('; ')",
            "message": f"[{CODE} {NAME}] a pod update may only change container images",
            "reason": "Forbidden",
        }],
    }
    return [Policy("ValidatingAdmissionPolicy", f"{CODE.lower()}-{NAME}", spec)]


EXACTNESS = "exact"
NOTES = (
    "Everything a Pod UPDATE can still change when it reaches admission is judged as the webhook judges "
    "it: images (spec.containers[*].image, spec.initContainers[*].image) and metadata pass; "
    "activeDeadlineSeconds, added tolerations, terminationGracePeriodSeconds (negative to 1) and, on "
    "gated pods, removed scheduling gates, nodeSelector and node affinity are denied (or allowed, per "
    "allow-gated-pod-scheduling-changes) with the same message, naming the same paths in the same order.",
    'require-gate-false reads oldObject.status.conditions as the rule does (the message says absent, "True", ...).',
    "Exemptions (namespaces, users, groups) and the fieldwarden.io/ignore annotation are match conditions; "
    "enforcement deny/warn/dryrun is validationActions Deny/Warn/Audit. The API server words the wrapper "
    "of the same message: `pods \"<name>\" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding "
    "'<binding>' denied request: [FW401 ...] ...` (the webhook's: `admission webhook \"...\" denied the "
    "request: [FW401 ...] ...`; Warn: `Validation failed for ValidatingAdmissionPolicy '<policy>' with "
    "binding '<binding>': [FW401 ...] ...`); dryrun goes to the audit log (annotation "
    "validation.policy.admission.k8s.io/validation_failure) instead of fieldwarden's log and metrics.",
    "Worded differently only where the API server's own pod update validation refuses the request before "
    "any validating admission runs, so that no request gets the difference: containers added, removed or "
    "reordered are named `spec.containers` or `spec.containers[i] (container \"a\" replaced by \"b\")`, "
    "empty or padded images are not named, paths are followed 5 parts deep and container fields to the "
    "field (`spec.containers[name=c].resources`; the webhook: 32 parts).",
    "A request cannot exempt itself: the fieldwarden.io/ignore annotation is read from oldObject, and "
    "adding or changing it, or setting the opt-out label (opt-out-label, the bindings' objectSelector), on "
    "pods or pods/status is denied unless the requester is exempt (exempt-users, exempt-groups), as by the "
    "webhook. pods/resize and pods/ephemeralcontainers are judged when `subresources` lists them; a match "
    "condition leaves out the others and the status writes that change neither the annotation nor the label.",
)
