"""The object does not match the Kubernetes API's schema of its kind.

## What it does
Validates each object of a built-in kind against the OpenAPI schema of its apiVersion and kind in
the target Kubernetes version (`--k8s-version`, or `kubernetes-version` in the configuration),
offline (`fieldwarden[schemas]`), and reports one finding per problem, on the field itself:

- an **unknown field**, on its key, as the API server's strict field validation
  (`kubectl apply --validate=strict`, the default since kubectl 1.25) names it:
  `unknown field "spec.template.spec.containers[0].imagePullPolicyy"`; with the closest known
  field as the hint;
- a value of the **wrong type** (`containerPort: "8080"`, a string where an integer goes), on the
  key of the value: `spec.template.spec.containers[0].ports[0].containerPort: expected integer,
  got string`;
- a **missing required field**, on the parent that lacks it: `spec.template: Required value`
  (not under `status`, which the API server does not take from a manifest; a Deployment's,
  StatefulSet's, DaemonSet's or ReplicaSet's missing `spec.selector` is FW101 selector-missing's
  finding, not repeated here);
- a value outside an **enum**, on the value's line, in the API server's words
  (`spec.template.spec.containers[0].imagePullPolicy:`
  `Unsupported value: "Allways": supported values: "Always", "IfNotPresent", "Never"`), with the
  closest value as the hint. A CRD's `enum` is its schema's. For the built-in kinds, whose
  OpenAPI v2 schemas carry no enums, the values come from a table taken from kube-apiserver
  1.32's `/openapi/v3` (every `+enum` field: `imagePullPolicy`, `protocol`, `restartPolicy`, a
  Service's `type`, a strategy's `type`, each item of a PVC's `accessModes`...). For a target
  of **1.32 or older** an unsupported value is an error (a value added after an older release is
  missed, never refused); for a **later target** (the default, 1.36) it is a **warning** naming
  1.32 as the set checked, since a later release may have added the value (`--k8s-version 1.32`
  makes it an error). An empty string (Go's zero value: the server defaults it as if unset),
  values under `status`, and the fields of features off by default in 1.32 (`procMount`,
  `supplementalGroupsPolicy`, an `image` volume's `pullPolicy`: the server drops them whatever
  they hold) are not reported.

Paths are spelled as the API server spells them (list items by index, map keys in brackets,
`metadata.labels[app]`). What is checked is what the schemas say: the API server's further
validation (name syntax, value ranges, cross-field rules) is not repeated here; values are never
printed for a wrong type, so a Secret's data stays out of the report (an enum's value is: it is
one of a field's named options, or a typo of one). Objects of kinds that are not built in, and
kinds FW601 reports, are not checked by this rule. The validation runs on
plain files and on what Helm and kustomize render alike.

## Why is this bad?
The API server refuses the object (`strict decoding error: unknown field`,
`cannot unmarshal string into Go struct field`, `Unsupported value`), or, with a client that does
not validate strictly, silently drops the misspelt field: the setting the author meant is never
applied.

## Example
```yaml
      containers:
      - name: web
        image: nginx
        ports:
        - containerPort: "8080"
          protocol: tcp
        imagePullPolicyy: Always
```

## Use instead
```yaml
      containers:
      - name: web
        image: nginx
        ports:
        - containerPort: 8080
          protocol: TCP
        imagePullPolicy: Always
```
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..model import ERROR, WARNING, Violation
from ..rule import OBJECT

CODE = "FW602"
NAME = "schema-mismatch"
SEVERITY = ERROR
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """One violation per way the object does not fit its kind's schema."""
    from ..schemas import builtin
    from ..schemas.validate import ENUM_VALUE, REQUIRED_FIELD, TYPE, UNKNOWN, describe, known_fields, validate

    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return
    version = conf.get("kubernetes-version", builtin.DEFAULT_VERSION)
    try:
        compiled = builtin.compiled(version, api_version, kind)
    except (builtin.SchemasMissing, KeyError):
        return
    built_in = compiled is not None
    problems = validate(compiled, obj) if compiled is not None else []
    if compiled is None:  # a custom resource: its CRD's schema, if the run has its CRD (policies/schemas/crd.py)
        from ..schemas.crd import custom_resource

        compiled, problems = custom_resource(conf.get("crds"), obj, version)
        if compiled is None:
            return
    for problem in problems:
        if problem.kind == REQUIRED_FIELD and (problem.path[:1] == ("status",) or (
                problem.field == "spec.selector" and api_version == "apps/v1")):
            continue  # (status: the server's to fill; a workload's selector: FW101 selector-missing says it)
        if problem.kind == ENUM_VALUE and built_in:
            if problem.path[:1] == ("status",) or (problem.got == '""' and isinstance(problem.path[-1], str)):
                continue  # (status: dropped on create; an empty field is Go's zero value, defaulted like an absent one)
            close = _closest(problem.got.strip('"'), _values(problem.expected))
            hint = f'did you mean "{close}"?' if close else "use one of the supported values"
            if _later_than_table(version):
                yield Violation(problem.path, _newer_release(problem, version), hint, WARNING)
            else:
                yield Violation(problem.path, describe(problem), hint)
            continue
        hint = ""
        if problem.kind == UNKNOWN:
            name = str(problem.path[-1])
            close = _closest(name, known_fields(compiled, problem.path[:-1]))
            hint = f"did you mean {close}?" if close else "remove it, or check its spelling and indentation"
        elif problem.kind == REQUIRED_FIELD:
            hint = f"set {problem.field.rsplit('.', 1)[-1]}"
        elif problem.kind == TYPE:
            hint = f"write a value of type {problem.expected}"
        elif problem.kind == ENUM_VALUE:
            close = _closest(problem.got.strip('"'), _values(problem.expected))
            hint = f'did you mean "{close}"?' if close else ""
        yield Violation(problem.path, describe(problem), hint)


def _values(expected: str) -> list[str]:
    """The string values of an enum problem's `expected` (`"Always", "Never"`)."""
    import re

    return re.findall(r'"([^"]*)"', expected)


def _later_than_table(version: str) -> bool:
    """Whether `version` (`1.36`) is a later release than the built-in enum table's."""
    from ..schemas.enums import VERSION

    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split(".") if p.isdigit())

    return parts(version) > parts(VERSION)


def _newer_release(problem: Any, version: str) -> str:
    """An enum problem in a target later than the table's: the values are the table's release's."""
    from ..schemas.enums import VERSION

    return (f"{problem.field}: Unsupported value in Kubernetes {VERSION}: {problem.got}: supported values: "
            f"{problem.expected} (the set checked is {VERSION}'s; {version} may have added values)")


def _closest(name: str, known: list[str]) -> str | None:
    import difflib

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.7)
    return close[0] if close else next((k for k in known if k.lower() == name.lower()), None)
