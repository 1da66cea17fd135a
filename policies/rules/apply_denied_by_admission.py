"""The cluster's admission control denies the next apply of this object (live check, `--cluster`).

## What it does
With `fieldwarden lint --cluster`, reports a dry run that an admission webhook or a
ValidatingAdmissionPolicy denies, with the cluster's own message:

    deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest' denied request: image nginx:latest uses the latest tag

Dry runs go through admission like real requests (webhooks with `sideEffects: None` or
`NoneOnDryRun` are called; others make the dry run fail, which is reported the same way, as is
a webhook that cannot be reached under `failurePolicy: Fail`). The
finding is placed on the field the denial names (a cause's `field`, else the first field path
of the manifest that the message mentions); else on the field whose value the message quotes
(`image registry.example/web:latest uses the latest tag`: the `image:` line); else, for an
existing object, on the first field the apply changes; else at the start of the object. Not run with
`--read-only`: only the cluster knows its policies.

## Why is this bad?
The policies the platform team enforces in the cluster (Kyverno, Gatekeeper, fieldwarden's own
webhook, ValidatingAdmissionPolicies) are not in the application's repository: without this
check, the first sign of a violation is a failed deploy after the merge.

## Example
```yaml
# the cluster: a ValidatingAdmissionPolicy that refuses images tagged :latest
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:latest
```

## Use instead
Change the manifest so that the policy admits it (here, a pinned tag), or agree an exemption
with the policy's owners.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..model import ERROR, FieldPath, Violation
from ..rule import LIVE

if TYPE_CHECKING:
    from ..live import LiveCase

CODE = "FW504"
NAME = "apply-denied-by-admission"
SEVERITY = ERROR
SCOPE = LIVE
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}

_FIELD = (r"\b(?:spec|metadata|data|stringData|roleRef|rules|subjects)(?:\.[A-Za-z0-9_-]+|\[[^\]\s]*\])+")


def check(case: LiveCase, conf: Mapping[str, Any]) -> Iterator[Violation]:
    """The denial, on the field it names."""
    from ..live import ADMISSION, refusal_kind, status_message

    if case.refusal is None or refusal_kind(case.refusal) != ADMISSION:
        return
    message = status_message(case.refusal)
    yield Violation(
        _where(case, message), f"the cluster's admission control denies the apply: {message}",
        "change the manifest so that the policy admits it, or agree an exemption with the policy's owners",
    )


def _where(case: LiveCase, message: str) -> FieldPath:
    """The field a denial is about: a cause's field, a field path of the manifest the message names, the field
    whose value the message quotes, the first field an existing object's apply changes, else the object."""
    from ..live import MISSING, causes, parse_field, value_at
    from ..places import cause_place, changed_field, quoted_field

    for cause in causes(case.refusal or {}):
        if cause.field:
            return cause_place(case, cause.field)
    import re

    for match in re.finditer(_FIELD, message):
        steps = parse_field(match.group(0))
        if value_at(case.manifest, steps) is not MISSING:
            return changed_field(case.manifest, case.live, tuple(steps))
    return quoted_field(case.manifest, message) or changed_field(case.manifest, case.live, ())
