"""A workload's pod selector is missing, empty, malformed, or one the server will not accept.

## What it does
Reports the `spec.selector` of a Deployment, ReplicaSet, StatefulSet, DaemonSet or
ReplicationController, and of a Job with `spec.manualSelector: true`, when it is
missing, `null` or empty (`{}`, `matchLabels: {}` with no expressions). It also reports
every problem the API server's selector validation finds (an unknown operator such as
`in`, `values` with `Exists`, a label value that is a number, labels written directly
under `selector` instead of `matchLabels`, ...) — one finding per problem, at the field.

Jobs normally leave the selector to the server, which generates a unique
`controller-uid` selector; so a Job *without* `manualSelector: true` is reported when it
does set `spec.selector` (the server rejects it: "`selector` not auto-generated"). A
CronJob's jobs always get generated selectors: the server rejects
`jobTemplate.spec.manualSelector: true` and any `jobTemplate.spec.selector`, and so
does this rule.

A ReplicationController whose selector is missing or empty, and a Deployment, DaemonSet,
ReplicaSet or StatefulSet of the removed `extensions/v1beta1` / `apps/v1beta1` APIs whose
selector is missing, are accepted by the API server, which copies the pod template
labels into the selector. They are still reported, with the same severity, because that
defaulted selector is the trap Kubernetes' guide to declarative management warns about
(see below); set `allow-defaulted: true` to accept them.

Whether the selector matches the template labels is FW102's business; selectors of
Services and PodDisruptionBudgets are judged by FW103 and FW104.

## Why is this bad?
`apps/v1` workloads require a non-empty selector: the apply fails with
`spec.selector: Required value` or `empty selector is invalid for deployment`. A selector
the server defaults from the template labels is not in the manifest, so it is not
updated with it: change the template labels later and the live selector no longer
matches them, and the apply fails (the selector of `apps/v1` kinds is also immutable).
A Job with `manualSelector: true` and an empty selector would claim every pod of its
namespace.

## Example
```yaml
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  template:
    metadata:
      labels: {app: web}
```

## Use instead
```yaml
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  selector: {app: web}
  template:
    metadata:
      labels: {app: web}
```
"""

from __future__ import annotations

from collections.abc import Mapping  # (isinstance at run time)

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator

from ..kube import WORKLOADS, get_path, group_kind, is_workload, pod_template_labels, selector_path
from ..model import ERROR, FieldPath, Violation, format_path
from ..rule import OBJECT
from ._workload_selectors import (
    CRONJOB,
    JOB,
    first_per_path,
    manual_selector,
    parse_workload_selector,
    selector_defaults_from_template,
    uses_map_selector,
)

CODE = "FW101"
NAME = "selector-missing"
SEVERITY = ERROR
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {
    "allow-defaulted": {
        "type": "boolean",
        "description": (
            "accept a missing selector where the API server copies the pod template labels into it "
            "(ReplicationController; extensions/v1beta1 and apps/v1beta1 workloads)"
        ),
    },
}
DEFAULTS: dict[str, Any] = {"allow-defaulted": False}

_JOB_TEMPLATE_SPEC = ("spec", "jobTemplate", "spec")


# The (group, kind) of the objects check() looks at; the linter skips the rule for any other (analyse.py).
KINDS = WORKLOADS


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """Yield a violation for a missing, empty or invalid workload selector."""
    group, kind = group_kind(obj)
    if not is_workload(group, kind):
        return
    if (group, kind) == CRONJOB:
        yield from _cronjob(obj)
        return
    path = selector_path(group, kind)
    assert path is not None
    raw = get_path(obj, path)
    if (group, kind) == JOB and not manual_selector(obj):
        if raw is not None:
            yield Violation(
                path,
                "spec.selector is set without spec.manualSelector: true; "
                "the server generates the selector and rejects this one",
                "remove spec.selector (the server generates a unique one), "
                "or set spec.manualSelector: true if you must choose the pods yourself",
            )
        return
    selector, problems = parse_workload_selector(obj)
    where = format_path(path)
    for problem_path, message in first_per_path(problems):
        yield Violation(
            path + problem_path,
            f"{format_path(path + problem_path)}: {message}",
            _problem_hint(uses_map_selector(group, kind), message),
        )
    if problems:
        return
    missing = selector is None or (uses_map_selector(group, kind) and selector.is_empty)
    if missing and selector_defaults_from_template(obj):
        yield from _defaulted(obj, kind, where, path, selector is None, conf)
        return
    if selector is None:
        if (group, kind) == JOB:
            yield Violation(
                path,
                "spec.manualSelector is true but spec.selector is missing",
                "set spec.selector to the pod template's identifying labels, or remove spec.manualSelector",
            )
        else:
            yield Violation(
                path,
                f"no {where}; the API server requires one",
                f"add {where}.matchLabels with the pod template's identifying labels",
            )
    elif selector.is_empty:
        if (group, kind) == JOB:
            message = "spec.selector is empty: with manualSelector it claims every pod of the namespace"
        else:
            message = f"{where} is empty; the API server rejects an empty selector"
        yield Violation(path, message, f"put the pod template's identifying labels in {where}.matchLabels")


def _defaulted(
    obj: Mapping[str, Any], kind: str, where: str, path: FieldPath, absent: bool, conf: Mapping[str, Any]
) -> Iterator[Violation]:
    """A selector the server would copy from the template labels (if it has any)."""
    labels = pod_template_labels(obj)
    what = f"no {where}" if absent else f"{where} is empty"
    if not isinstance(labels, Mapping) or not labels:
        yield Violation(
            path,
            f"{what} and no pod template labels to default it from",
            f"set {where} and the pod template labels",
        )
        return
    if conf.get("allow-defaulted"):
        return
    example = ", ".join(f"{k}: {v}" for k, v in labels.items() if isinstance(k, str) and isinstance(v, str))
    yield Violation(
        path,
        f"{what}; the server copies the template labels into it, "
        "and a later change of those labels then breaks the apply",
        f"write the selector out: {where}: {{{example}}}" if uses_map_selector(*group_kind(obj))
        else f"write the selector out: {where}.matchLabels: {{{example}}}",
    )


def _cronjob(obj: Mapping[str, Any]) -> Iterator[Violation]:
    """CronJob job templates must leave the selector to the server."""
    if manual_selector(obj):
        yield Violation(
            _JOB_TEMPLATE_SPEC + ("manualSelector",),
            "jobTemplate.spec.manualSelector is true; the API server only accepts false or unset",
            "remove manualSelector: each Job of the CronJob gets a unique generated selector",
        )
    if get_path(obj, _JOB_TEMPLATE_SPEC + ("selector",)) is not None:
        yield Violation(
            _JOB_TEMPLATE_SPEC + ("selector",),
            "jobTemplate.spec.selector is set; the server generates each Job's selector and rejects this one",
            "remove jobTemplate.spec.selector",
        )


def _problem_hint(map_selector: bool, message: str) -> str:
    """A fix hint for a validation problem."""
    if "unknown field" in message and not map_selector:
        return "a label selector has only matchLabels and matchExpressions: put the labels under matchLabels"
    if map_selector and "must be a string, not a map" in message:
        return "a ReplicationController selector is a plain map of labels, without matchLabels"
    if "must be a string" in message:
        return "quote the value: label values are strings"
    return "fix the selector so the API server accepts it"
