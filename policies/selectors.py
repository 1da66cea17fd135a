"""Kubernetes label selectors: parsing, validation, matching, overlap and an index.

This module owns everything fieldwarden knows about label selectors:

* turning a ``metav1.LabelSelector`` (``matchLabels`` / ``matchExpressions``) or a
  plain map selector (Service and ReplicationController ``spec.selector``) as
  parsed from YAML into a :class:`Selector`, reporting the problems the API
  server's ``ValidateLabelSelector`` / ``ValidateLabels`` would report;
* deciding whether a selector selects a label set (:func:`selects`);
* deciding whether two selectors can select a common label set
  (:func:`labels_can_overlap`);
* answering "which of these 20,000 label sets does this selector select" quickly
  (:class:`TemplateIndex`).

Everything here is a pure function over plain values. Input is untrusted: a
malformed selector never raises, it yields ``(None, problems)``.

Semantics shared by every function:

* requirements are ANDed; ``In`` needs the key present with one of the values,
  ``NotIn`` holds when the key is absent or its value is not listed, ``Exists``
  needs the key present, ``DoesNotExist`` needs it absent;
* ``matchLabels`` ``k: v`` is the requirement ``k In {v}``;
* an empty selector (``Selector(())``, parsed from ``{}``) selects everything; a
  null selector (``None``) selects nothing. Which of the two an *absent* field
  means is the caller's business: a policy/v1 PodDisruptionBudget's ``{}``
  selects every pod in its namespace while its null selector selects none; a
  Service's empty or absent ``spec.selector`` selects no pods at all (its
  endpoints are managed outside Kubernetes); a ReplicationController's absent
  selector is defaulted from its template labels. The parsers therefore return
  ``(None, [])`` for ``None`` and ``Selector(())`` for ``{}`` and judge neither.
* JSON ``null`` inside a selector decodes as the API server's decoder does: to
  the Go zero value (an absent list or map, an empty string).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from .records import NamedTuple

from .model import FieldPath

__all__ = [
    "DOES_NOT_EXIST",
    "EXISTS",
    "IN",
    "NOT_IN",
    "OPERATORS",
    "FieldPath",
    "Problem",
    "Requirement",
    "Selector",
    "TemplateIndex",
    "label_key_problems",
    "label_value_problems",
    "labels_can_overlap",
    "parse_label_selector",
    "parse_map_selector",
    "selects",
]

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
OPERATORS: frozenset[str] = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST})

Problem = tuple[FieldPath, str]
"""A validation problem: a path relative to the selector, and words for a person."""

_SELECTOR_FIELDS = ("matchLabels", "matchExpressions")
_REQUIREMENT_FIELDS = ("key", "operator", "values")

_NAME_MAX = 63
_PREFIX_MAX = 253
# A name is what `(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` matches whole; a DNS subdomain, DNS labels
# `[a-z0-9](?:[-a-z0-9]*[a-z0-9])?` joined by dots. Tested with str methods, not compiled patterns:
# compiling the two was ~0.2 ms of a one-file lint (issue 23 row a; tests/policies/test_label_syntax.py).
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _ALNUM | frozenset("-_.")
_LOWER_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_LABEL_CHARS = _LOWER_ALNUM | frozenset("-")


def _is_name(text: str) -> bool:
    return text != "" and text[0] in _ALNUM and text[-1] in _ALNUM and _NAME_CHARS.issuperset(text)


def _is_subdomain(text: str) -> bool:
    return all(label != "" and label[0] in _LOWER_ALNUM and label[-1] in _LOWER_ALNUM and _LABEL_CHARS.issuperset(label)
               for label in text.split("."))


_NAME_CHARSET_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyName', 'my.name', '123-abc')"
)
_SUBDOMAIN_CHARSET_MSG = (
    "must be a lowercase DNS subdomain: lowercase alphanumeric characters, '-' or '.', "
    "starting and ending with an alphanumeric character (e.g. 'example.com')"
)


# --------------------------------------------------------------------------- model


class Requirement(NamedTuple):
    """One ANDed condition on one label key."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, Any]) -> bool:
        """Whether `labels` satisfies this requirement; an unknown operator never does."""
        if labels.__class__ is not dict and not isinstance(labels, Mapping):
            labels = {}
        present = self.key in labels
        op = self.operator
        if op == IN:
            return present and _value_in(labels[self.key], self.values)
        if op == NOT_IN:
            return not present or not _value_in(labels[self.key], self.values)
        if op == EXISTS:
            return present
        if op == DOES_NOT_EXIST:
            return not present
        return False

    def __str__(self) -> str:
        """Kubernetes selector syntax: `k=v`, `k in (a,b)`, `k notin (a)`, `k`, `!k`."""
        vals = sorted(self.values)
        if self.operator == IN:
            return f"{self.key}={vals[0]}" if len(vals) == 1 else f"{self.key} in ({','.join(vals)})"
        if self.operator == NOT_IN:
            return f"{self.key}!={vals[0]}" if len(vals) == 1 else f"{self.key} notin ({','.join(vals)})"
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        return f"{self.key} {self.operator} ({','.join(vals)})"


class Selector(NamedTuple):
    """ANDed requirements in canonical order (sorted, no duplicates); `()` matches all."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True for the selector that matches every label set."""
        return not self.requirements

    def matches(self, labels: Mapping[str, Any]) -> bool:
        """Whether every requirement holds for `labels` (a non-mapping counts as no labels)."""
        if labels.__class__ is not dict and not isinstance(labels, Mapping):
            labels = {}
        return all(req.matches(labels) for req in self.requirements)

    def __str__(self) -> str:
        """Kubernetes selector syntax, e.g. `app=web,tier in (a,b)`; `""` when empty."""
        return ",".join(str(req) for req in self.requirements)


def _value_in(value: Any, values: frozenset[str]) -> bool:
    """Whether a label value (possibly not a string) is one of `values`."""
    return isinstance(value, str) and value in values


def _canonical(requirements: Iterable[Requirement]) -> Selector:
    """A selector with requirements deduplicated and sorted, so equal meaning ~ equal value."""
    unique = set(requirements)
    return Selector(tuple(sorted(unique, key=lambda r: (r.key, r.operator, sorted(r.values)))))


# ---------------------------------------------------------------- name validation


def _byte_len(text: str) -> int:
    """Length as the API server counts it: UTF-8 bytes."""
    return len(text.encode("utf-8", "surrogatepass"))


# Label keys and values found valid: manifests repeat the same few (`app`, `app.kubernetes.io/name`)
# thousands of times, so each is checked once per process.
_VALID_KEYS: set[str] = set()
_VALID_VALUES: set[str] = set()
_VALID_MAX = 50_000


def label_key_problems(key: str) -> list[str]:
    """Why `key` is not a qualified name (`[prefix/]name`), as IsQualifiedName says; [] if valid."""
    if key in _VALID_KEYS:
        return []
    problems = _key_problems(key)
    if not problems and len(_VALID_KEYS) < _VALID_MAX:
        _VALID_KEYS.add(key)
    return problems


def _key_problems(key: str) -> list[str]:
    problems: list[str] = []
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a qualified name " + _NAME_CHARSET_MSG
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if _byte_len(prefix) > _PREFIX_MAX:
                problems.append(f"prefix part must be no more than {_PREFIX_MAX} characters")
            if not _is_subdomain(prefix):
                problems.append("prefix part " + _SUBDOMAIN_CHARSET_MSG)
    else:
        name = parts[0]
    if not name:
        problems.append("name part must be non-empty")
    elif _byte_len(name) > _NAME_MAX:
        problems.append(f"name part must be no more than {_NAME_MAX} characters")
    if not _is_name(name):
        problems.append("name part " + _NAME_CHARSET_MSG)
    return problems


def label_value_problems(value: str) -> list[str]:
    """Why `value` is not a valid label value, as IsValidLabelValue says; [] if valid."""
    if value in _VALID_VALUES:
        return []
    problems = _value_problems(value)
    if not problems and len(_VALID_VALUES) < _VALID_MAX:
        _VALID_VALUES.add(value)
    return problems


def _value_problems(value: str) -> list[str]:
    problems: list[str] = []
    if _byte_len(value) > _NAME_MAX:
        problems.append(f"must be no more than {_NAME_MAX} characters")
    if value and not _is_name(value):
        problems.append(
            "a valid label value must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return problems


# ------------------------------------------------------------------------ parsing


def _kind(value: Any) -> str:
    """A YAML-flavoured name for the type of `value`, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def _path_key(key: Any) -> str:
    """A map key as a path element: strings as they are, anything else stringified."""
    return key if isinstance(key, str) else str(key)


def _unknown_fields(
    raw: Mapping[Any, Any], known: tuple[str, ...], base: FieldPath, problems: list[Problem]
) -> None:
    """Report every key of `raw` that is not one of `known` (field names are case-sensitive)."""
    for name in raw:
        if not (isinstance(name, str) and name in known):
            problems.append(
                (base + (_path_key(name),), f"unknown field {_path_key(name)!r}; expected one of {', '.join(known)}")
            )


def _check_key(key: Any, path: FieldPath, problems: list[Problem]) -> str | None:
    """Validate a label key; return it when it is a string (valid or not)."""
    if not isinstance(key, str):
        problems.append((path, f"label key must be a string, not {_kind(key)}; quote it"))
        return None
    for msg in label_key_problems(key):
        problems.append((path, f"invalid label key {key!r}: {msg}"))
    return key


def _check_value(value: Any, path: FieldPath, problems: list[Problem]) -> str | None:
    """Validate a label value (null reads as ""); return it when it is a string."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        problems.append((path, f"label value must be a string, not {_kind(value)}; quote it"))
        return None
    for msg in label_value_problems(value):
        problems.append((path, f"invalid label value {value!r}: {msg}"))
    return value


def _parse_label_map(raw: Any, base: FieldPath, problems: list[Problem]) -> list[Requirement]:
    """Parse a `{key: value}` map into `In` requirements, reporting problems under `base`."""
    if raw is None:
        return []
    if raw.__class__ is not dict and not isinstance(raw, Mapping):  # (dict first: the ABC check is slower)
        problems.append((base, f"must be a map of label keys to string values, not {_kind(raw)}"))
        return []
    requirements: list[Requirement] = []
    for raw_key, raw_value in raw.items():
        path = base + (_path_key(raw_key),)
        key = _check_key(raw_key, path, problems)
        value = _check_value(raw_value, path, problems)
        if key is not None and value is not None:
            requirements.append(Requirement(key, IN, frozenset((value,))))
    return requirements


def _parse_expression(raw: Any, base: FieldPath, problems: list[Problem]) -> Requirement | None:
    """Parse one `matchExpressions` item as ValidateLabelSelectorRequirement does."""
    if raw is None:
        raw = {}
    if raw.__class__ is not dict and not isinstance(raw, Mapping):
        problems.append((base, f"must be a map with key, operator and values, not {_kind(raw)}"))
        return None
    _unknown_fields(raw, _REQUIREMENT_FIELDS, base, problems)
    values_path = base + ("values",)

    raw_values = raw.get("values")
    if raw_values is None:
        raw_values = []
    values: list[str] | None = []
    if not isinstance(raw_values, (list, tuple)):
        problems.append((values_path, f"must be a list of strings, not {_kind(raw_values)}"))
        values = None
    else:
        for index, item in enumerate(raw_values):
            checked = _check_value(item, values_path + (index,), problems)
            if checked is None or values is None:
                values = None
            else:
                values.append(checked)

    operator = raw.get("operator")
    if operator is None:
        operator = ""
    operator_path = base + ("operator",)
    if not isinstance(operator, str):
        problems.append((operator_path, f"must be a string (In, NotIn, Exists or DoesNotExist), not {_kind(operator)}"))
    elif operator in (IN, NOT_IN):
        if isinstance(raw_values, (list, tuple)) and not raw_values:
            problems.append((values_path, f"must be non-empty when operator is {operator}"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if isinstance(raw_values, (list, tuple)) and raw_values:
            problems.append((values_path, f"must be empty when operator is {operator}"))
    else:
        hint = ""
        for known in sorted(OPERATORS):
            if operator.lower() == known.lower():
                hint = f" (operators are case-sensitive: did you mean {known!r}?)"
        problems.append(
            (operator_path, f"{operator!r} is not a valid selector operator; use In, NotIn, Exists or DoesNotExist{hint}")
        )

    raw_key = raw.get("key")
    key = _check_key("" if raw_key is None else raw_key, base + ("key",), problems)

    if key is None or values is None or not isinstance(operator, str):
        return None
    return Requirement(key, operator, frozenset(values))


def _parse_expressions(raw: Any, problems: list[Problem]) -> list[Requirement]:
    """Parse `matchExpressions` (null reads as an empty list)."""
    base: FieldPath = ("matchExpressions",)
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        problems.append((base, f"must be a list of requirements, not {_kind(raw)}"))
        return []
    requirements: list[Requirement] = []
    for index, item in enumerate(raw):
        requirement = _parse_expression(item, base + (index,), problems)
        if requirement is not None:
            requirements.append(requirement)
    return requirements


def parse_label_selector(raw: Any) -> tuple[Selector | None, list[Problem]]:
    """Parse a metav1.LabelSelector; (None, problems) unless it is valid, (None, []) for None.

    Problems are those ValidateLabelSelector reports (plus type errors the API
    server's decoder would reject, and unknown fields), with paths relative to
    the selector; a `matchLabels` problem points at its key, e.g.
    `("matchLabels", "app")`. The selector is returned only when there is no
    problem at all, so callers never evaluate something the API would refuse.
    """
    if raw is None:
        return None, []
    if raw.__class__ is not dict and not isinstance(raw, Mapping):
        return None, [((), f"a label selector must be a map with matchLabels and/or matchExpressions, not {_kind(raw)}")]
    problems: list[Problem] = []
    _unknown_fields(raw, _SELECTOR_FIELDS, (), problems)
    requirements = _parse_label_map(raw.get("matchLabels"), ("matchLabels",), problems)
    requirements += _parse_expressions(raw.get("matchExpressions"), problems)
    if problems:
        return None, problems
    return _canonical(requirements), []


def parse_map_selector(raw: Any) -> tuple[Selector | None, list[Problem]]:
    """Parse a plain `{key: value}` selector (Service / ReplicationController `spec.selector`).

    Same contract as :func:`parse_label_selector`; paths are `(key,)`. `{}` gives
    `Selector(())`, which *matches everything*: a Service with an empty selector
    actually selects no pods, so callers must check `is_empty` for Services.
    """
    if raw is None:
        return None, []
    problems: list[Problem] = []
    requirements = _parse_label_map(raw, (), problems)
    if problems:
        return None, problems
    return _canonical(requirements), []


# ----------------------------------------------------------------------- matching


def selects(selector: Selector | None, labels: Any) -> bool:
    """Whether `selector` selects an object with `labels`.

    A null selector selects nothing. Labels that are None or not a mapping count
    as no labels at all (as a missing `metadata.labels` does), so an empty
    selector, or one made only of NotIn/DoesNotExist, still selects them. Keys
    that are not strings are never a selector's key; values that are not strings
    never equal an `In`/`NotIn` value but do make their key present.
    """
    if selector is None:
        return False
    return selector.matches(labels if labels.__class__ is dict or isinstance(labels, Mapping) else {})


def _key_satisfiable(requirements: Iterable[Requirement]) -> bool:
    """Whether some state of one key (absent, or some string value) meets all `requirements`."""
    may_be_absent = True
    may_be_present = True
    allowed: frozenset[str] | None = None  # None: any string
    excluded: set[str] = set()
    for req in requirements:
        if req.operator == IN:
            may_be_absent = False
            allowed = req.values if allowed is None else allowed & req.values
        elif req.operator == NOT_IN:
            excluded |= req.values
        elif req.operator == EXISTS:
            may_be_absent = False
        elif req.operator == DOES_NOT_EXIST:
            may_be_present = False
        else:
            return False
    if may_be_absent:
        return True
    if not may_be_present:
        return False
    # Infinitely many strings exist, only finitely many are excluded.
    return allowed is None or bool(allowed - excluded)


def labels_can_overlap(a: Selector, b: Selector) -> bool:
    """Whether some label set satisfies both selectors (exact: keys are independent)."""
    by_key: dict[str, list[Requirement]] = {}
    for req in (*a.requirements, *b.requirements):
        by_key.setdefault(req.key, []).append(req)
    return all(_key_satisfiable(reqs) for reqs in by_key.values())


# -------------------------------------------------------------------------- index


class TemplateIndex:
    """Label sets indexed by (key, value) and by key, for fast selector queries.

    Built from `(item_id, labels)` pairs; labels are copied, so later changes to
    the caller's dicts are not seen. A labels value that is not a mapping counts
    as no labels, exactly as in :func:`selects`.
    """

    def __init__(self, items: Iterable[tuple[int, Mapping[str, str]]]) -> None:
        """Index every `(item_id, labels)` pair, keeping their order."""
        self._ids: list[int] = []
        self._labels: list[dict[Any, Any]] = []
        self._by_pair: dict[tuple[str, str], list[int]] = {}
        self._by_key: dict[str, list[int]] = {}
        for item_id, labels in items:
            position = len(self._ids)
            snapshot: dict[Any, Any] = dict(labels) if labels.__class__ is dict or isinstance(labels, Mapping) else {}
            self._ids.append(item_id)
            self._labels.append(snapshot)
            for key, value in snapshot.items():
                if isinstance(key, str):
                    self._by_key.setdefault(key, []).append(position)
                    if isinstance(value, str):
                        self._by_pair.setdefault((key, value), []).append(position)

    def __len__(self) -> int:
        """How many label sets are indexed."""
        return len(self._ids)

    def _postings(self, req: Requirement) -> list[list[int]] | None:
        """Position lists whose union is exactly what `req` matches, or None if not indexable."""
        if req.operator == IN:
            return [self._by_pair[(req.key, v)] for v in req.values if (req.key, v) in self._by_pair]
        if req.operator == EXISTS:
            hits = self._by_key.get(req.key)
            return [hits] if hits else []
        return None

    def matching(self, selector: Selector | None) -> list[int]:
        """Ids (in insertion order) of the label sets `selector` selects; none for None.

        Uses the most selective In or Exists requirement's postings as candidates
        and checks the rest; scans everything only when there is neither.
        """
        if selector is None:
            return []
        best: list[list[int]] | None = None
        best_size = 0
        best_index = -1
        for index, req in enumerate(selector.requirements):
            postings = self._postings(req)
            if postings is None:
                continue
            size = sum(len(p) for p in postings)
            if best is None or size < best_size:
                best, best_size, best_index = postings, size, index
        if best is None:
            candidates: Iterable[int] = range(len(self._ids))
        elif best_size == 0:
            return []
        elif len(best) == 1:
            candidates = best[0]
        else:
            candidates = sorted(position for posting in best for position in posting)
        rest = tuple(req for i, req in enumerate(selector.requirements) if i != best_index)
        labels = self._labels
        ids = self._ids
        return [ids[p] for p in candidates if all(req.matches(labels[p]) for req in rest)]
