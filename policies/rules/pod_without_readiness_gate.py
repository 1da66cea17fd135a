"""A new Pod lacks the readiness gate of the in-place update protocol (admission, mutating).

## What it does
On `CREATE` of a Pod (the `pods` resource itself), appends
`{conditionType: InPlaceUpdateReady}` (option `condition-type`) to
`spec.readinessGates` unless an entry with that conditionType is already there, and
labels the pod `fieldwarden.io/readiness-gate: injected` (option `injected-label`,
creating `metadata.labels` when absent) so the controller that drives the condition
can watch only the pods it is responsible for.

- An absent, null or empty list becomes a one-entry list; a populated list keeps its
  entries and their order and gains one at the end.
- Idempotent: the webhook may be called twice (`reinvocationPolicy: IfNeeded`); a pod
  that already has the gate is left exactly as it is (no label either), so the second
  call produces no patch. The same holds for pods another system gates with the same
  type (OpenKruise injects `InPlaceUpdateReady` itself): they are not labelled, and
  fieldwarden's controller leaves them to their owner.
- Opt-out: a pod annotated `fieldwarden.io/readiness-gate: "disabled"` (option
  `opt-out-annotation` names the key; the value must be exactly `disabled`) is left alone.
- Never on `UPDATE` (readinessGates are immutable after creation), never on
  sub-resources, never on other kinds: injecting into a Deployment's pod template would
  roll every pod of it; the pods it creates get the gate when they are created.
- Pods created with `generateName` have no name yet and may carry no namespace in
  the object: the rule needs neither.
- It returns no warning: injection is routine, and the patch shows it.

The condition type is validated like the API server validates it (a qualified
name), at configuration load time: a bad one would make every pod creation fail.

## Why is this bad?
Without a readiness gate, a pod whose image is being replaced in place stays in its
Services' endpoints while its container restarts: requests fail. With the gate, the
in-place update protocol sets the condition `False` first (endpoints drop the pod),
waits, changes the image, waits for the new image to run and the container to be
ready, then sets the condition `True` again. readinessGates cannot be added later,
so they must be there from the pod's creation.

A gate nobody sets keeps the pod NotReady for ever: run the controller (it watches
the injected label and sets the condition `True` on new pods) before enabling this.

## Example
```yaml
apiVersion: v1
kind: Pod
metadata: {name: web-7d9c-abcde, labels: {app: web}}
spec:
  containers: [{name: app, image: registry.example.com/app:1.2}]
```

## Use instead
```yaml
apiVersion: v1
kind: Pod
metadata:
  name: web-7d9c-abcde
  labels: {app: web, fieldwarden.io/readiness-gate: injected}
spec:
  readinessGates: [{conditionType: InPlaceUpdateReady}]
  containers: [{name: app, image: registry.example.com/app:1.2}]
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..model import INFO
from ..rule import ADMISSION, COMMON_DEFAULTS, COMMON_OPTIONS
from ._readiness_gate import CONDITION_TYPE_SCHEMA, DEFAULT_CONDITION_TYPE, has_readiness_gate

if TYPE_CHECKING:  # the webhook's request model: the linter reads this rule's options only
    from ..admission import AdmissionRequest, AutoscalerIndex
    from ..draft import Draft

CODE = "FW402"
NAME = "pod-without-readiness-gate"
SEVERITY = INFO
SCOPE = ADMISSION
FIXABLE = False

OPT_OUT_VALUE = "disabled"
_LABEL_VALUE = {"type": "string", "pattern": r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$", "maxLength": 63}

OPTIONS: dict[str, Any] = {
    **COMMON_OPTIONS,
    "condition-type": {**CONDITION_TYPE_SCHEMA, "description": "conditionType of the injected readiness gate"},
    "injected-label": {
        "type": "object",
        "properties": {"key": CONDITION_TYPE_SCHEMA, "value": _LABEL_VALUE},
        "required": ["key", "value"],
        "additionalProperties": False,
        "description": "label {key, value} put on pods that get the gate, for the controller to watch",
    },
    "opt-out-annotation": {
        **CONDITION_TYPE_SCHEMA,
        "description": f'annotation key; a pod annotated with it "{OPT_OUT_VALUE}" gets no gate',
    },
}
DEFAULTS: dict[str, Any] = {
    **COMMON_DEFAULTS,
    "condition-type": DEFAULT_CONDITION_TYPE,
    "injected-label": {"key": "fieldwarden.io/readiness-gate", "value": "injected"},
    "opt-out-annotation": "fieldwarden.io/readiness-gate",
}


def mutate(
    request: AdmissionRequest, draft: Draft, conf: Mapping[str, Any], autoscalers: AutoscalerIndex
) -> list[str]:
    """Append the readiness gate to a new pod (and label it), unless it has it or opts out."""
    if request.operation != "CREATE" or request.group != "" or request.kind != "Pod" or request.sub_resource:
        return []
    obj = draft.object
    spec = obj.get("spec")
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(spec, dict) or not isinstance(metadata, dict):
        return []  # not a pod the API server would accept: its validation says why
    labels, annotations, gates = metadata.get("labels"), metadata.get("annotations"), spec.get("readinessGates")
    if not isinstance(labels, (dict, type(None))) or not isinstance(gates, (list, type(None))):
        return []
    opt_out = conf.get("opt-out-annotation", DEFAULTS["opt-out-annotation"])
    if isinstance(annotations, dict) and annotations.get(opt_out) == OPT_OUT_VALUE:
        return []
    condition_type = conf.get("condition-type", DEFAULT_CONDITION_TYPE)
    if has_readiness_gate(obj, condition_type):
        return []
    gate = {"conditionType": condition_type}
    writable_spec = draft.mapping(("spec",))
    writable_labels = draft.mapping(("metadata", "labels"))  # (created when absent or null)
    if writable_spec is None or writable_labels is None:
        return []  # (cannot happen after the checks above)
    writable_spec["readinessGates"] = [*(gates or ()), gate]
    label = conf.get("injected-label", DEFAULTS["injected-label"])
    writable_labels[label["key"]] = label["value"]
    return []
