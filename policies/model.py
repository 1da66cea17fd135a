"""Plain value types every rule and both front ends share."""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from .records import NamedTuple

FieldPath = tuple["str | int", ...]

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES: tuple[str, ...] = (ERROR, WARNING, INFO)
SEVERITY_RANK = {INFO: 1, WARNING: 2, ERROR: 3}


class Violation(NamedTuple):
    """What a rule reports: a field path (never a line number) and words for a person."""

    path: FieldPath
    message: str
    hint: str = ""
    # A lower severity than the rule's for this one finding ("" = the rule's); see lighter().
    severity: str = ""


def lighter(configured: str, violation: Violation) -> str:
    """A finding's severity: the configured one, lowered to the violation's own if that is lower."""
    own = violation.severity
    if own and SEVERITY_RANK[own] < SEVERITY_RANK[configured]:
        return own
    return configured


class ObjectKey(NamedTuple):
    """Identity of an object in a cluster: group (not version), kind, namespace, name."""

    group: str
    kind: str
    namespace: str
    name: str

    def label(self) -> str:
        """`Kind/namespace/name`, or `Kind/name` for cluster-scoped objects."""
        if self.namespace:
            return f"{self.kind}/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"


def format_path(path: FieldPath, obj: Any = None) -> str:
    """Render a field path as `spec.containers[name=app].image`.

    List items that carry a `name` in `obj` are shown by name, others by index.
    """
    out: list[str] = []
    node = obj
    for part in path:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and -len(node) <= part < len(node) else None
            name = item.get("name") if isinstance(item, dict) else None
            out.append(f"[name={name}]" if isinstance(name, str) else f"[{part}]")
            node = item
        else:
            needs_quotes = "." in part or "[" in part or "/" in part
            out.append(f'["{part}"]' if needs_quotes and out else (f".{part}" if out else part))
            node = node.get(part) if isinstance(node, dict) else None
    return "".join(out)
