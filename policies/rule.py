"""The shape of a rule module, and the view of objects that set rules work on.

A rule is a module with constants (CODE, NAME, SEVERITY, SCOPE, OPTIONS, DEFAULTS,
FIXABLE), a docstring that is its documentation page, and one pure function:

- SCOPE "object": `check(obj, conf)` yields Violations for one object;
- SCOPE "set": `check_set(objects, targets, conf)` yields `(index, Violation)` for
  objects of a set (an HPA in one file, its Deployment in another); it sees every
  object but reports only on the indices in `targets`, and reads only the fields
  named in `CONTEXT_PATHS` (`*` stands for every list item);
- SCOPE "input": raised by the front end that reads the input (YAML syntax and the
  like); the module carries the metadata and documentation only;
- SCOPE "admission": run by the webhook on AdmissionRequests (see policies/admission.py);
  the linter leaves them alone;
- SCOPE "live": `check(case, conf)` judges what the next apply of one object does to the
  live cluster (a `policies.live.LiveCase`: the manifest, the live object, the dry run's
  answer); run by `fieldwarden lint --cluster` only (linter/live/checks.py), never by the webhook.
"""

from __future__ import annotations

from types import ModuleType

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping, NamedTuple, Sequence
else:
    from .records import NamedTuple

from .model import ObjectKey, Violation

OBJECT = "object"
SET = "set"
INPUT = "input"
ADMISSION = "admission"
LIVE = "live"


class SetObject(NamedTuple):
    """One object of the set as a set rule sees it."""

    key: ObjectKey | None
    data: Mapping[str, Any]
    origin: str  # "path:line", for messages that point at the other object


if TYPE_CHECKING:  # (aliases for annotations: typing is not imported at run time)
    Conf = Mapping[str, Any]
    ObjectCheck = Iterable[Violation]
    SetCheck = Iterable[tuple[int, Violation]]

RuleModule = ModuleType


def summary(rule: ModuleType) -> str:
    """First line of the rule's documentation."""
    return (rule.__doc__ or "").strip().splitlines()[0] if rule.__doc__ else ""


def run_object_rule(rule: ModuleType, obj: Mapping[str, Any], conf: Conf) -> list[Violation]:
    """Call an object rule (front ends use this so a rule stays a plain module)."""
    return list(rule.check(obj, conf))


def run_set_rule(
    rule: ModuleType, objects: Sequence[SetObject], targets: Sequence[int], conf: Conf
) -> list[tuple[int, Violation]]:
    """Call a set rule over the objects, reporting on `targets`."""
    return list(rule.check_set(objects, targets, conf))


_NAMES = {"type": "array", "items": {"type": "string", "minLength": 1}}

# Options every admission rule accepts; the webhook applies them before calling the rule.
# (Here, not in admission.py, so that the linter reads the rules' options without the
# webhook's request model.)
COMMON_OPTIONS: dict[str, Any] = {
    "exempt-namespaces": {**_NAMES, "description": "namespaces this rule never acts in"},
    "exempt-users": {**_NAMES, "description": "usernames (e.g. system:serviceaccount:ns:name) it never acts for"},
    "exempt-groups": {**_NAMES, "description": "user groups it never acts for"},
}
COMMON_DEFAULTS: dict[str, Any] = {"exempt-namespaces": [], "exempt-users": [], "exempt-groups": []}

# Validating rules also choose what a violation does.
ENFORCEMENT_OPTION: dict[str, Any] = {
    "enforcement": {
        "enum": ["deny", "warn", "dryrun"],
        "description": "deny the request; allow it with a warning; or only log and count it",
    }
}
ENFORCEMENT_DEFAULT: dict[str, Any] = {"enforcement": "deny"}
