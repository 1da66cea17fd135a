"""Answering one AdmissionReview: parse, guard clauses, run the admission rules, respond.

`admit` is the whole request/response core, pure apart from logs and metrics; the
Flask app only moves bytes. `/validate` runs the validating admission rules
(`validate`), `/mutate` the mutating ones (`mutate`); each rule is skipped when:

- the configuration disables it (`select` / `ignore`);
- the request's namespace is in its `exempt-namespaces`, the user in `exempt-users`,
  or one of the user's groups in `exempt-groups`;
- the stored object names it in its `fieldwarden.io/ignore` annotation: on UPDATE and
  DELETE the old object's annotation counts, on CREATE the new object's (the linter
  honours the same annotation). A request cannot exempt itself: an UPDATE that adds
  the annotation is judged without it, and FW401 denies adding or changing it on a pod
  (and setting the pod opt-out label) unless the requester is exempt from FW401.

Operations other than CREATE, UPDATE, DELETE and CONNECT are allowed untouched; so are
kinds no rule knows (the rules decide what they look at). A `dryRun` request gets the
same answer as the real one: the rules have no side effects to skip.

A validating rule's violation does what its `enforcement` says: `deny` (allowed false,
the message naming the rule), `warn` (allowed, with a warning), `dryrun` (allowed;
only logged and counted). Mutating rules change one copy-on-write `Draft` of the object in
turn; the draft is diffed against the request's object once, into the response's patch.

Failure policy: a rule that raises is skipped (fail open for that rule): the request
is answered without it, with a warning naming the rule, and the error is logged with
its traceback and counted (`fieldwarden_rule_results_total{result="error"}`). Any
other unexpected error while deciding allows the request unchanged, likewise logged:
the webhook never answers a well-formed AdmissionReview with HTTP 500.

The autoscaler inventory: when a rule consulted it while it is not in sync (first sync
not done, or stale), `webhook.on-stale-inventory` decides: `allow` (default) answers
with what the inventory holds plus a warning; `deny` refuses the request with status
code 503, so that nothing is decided on an outdated view (the client retries later).
"""

from __future__ import annotations

import functools
import logging
import time
from types import ModuleType
from typing import Any, Literal, Mapping, NamedTuple, Sequence

from ...policies.admission import AdmissionRequest, AutoscalerIndex
from ...policies.config import Settings
from ...policies.draft import Draft
from ...policies.kube import canonical_group, is_workload
from ...policies.registry import RULES
from ...policies.rule import ADMISSION
from ...policies.suppression import annotation_codes, covers
from . import logs
from ..inventory.sources import Inventory
from .metrics import METRICS, OTHER
from .patch import Operation, diff
from .response import build_response, error_body, rule_message
from .review import BadRequest, parse_review

Endpoint = Literal["mutate", "validate"]
MUTATE: Endpoint = "mutate"
VALIDATE: Endpoint = "validate"
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
STALE_CODE = 503
MAX_KIND_LENGTH = 63  # (a kind is a DNS-1035 label, CamelCase)
INTERNAL_ERROR = "[fieldwarden] internal error in the webhook; request allowed unchanged"


class Decision(NamedTuple):
    """What the webhook answers to one request."""

    allowed: bool = True
    patch: tuple[Operation, ...] = ()
    warnings: tuple[str, ...] = ()
    message: str = ""
    code: int = 403

    @property
    def label(self) -> str:
        """The metrics label of this decision."""
        if not self.allowed:
            return "denied"
        return "patched" if self.patch else "allowed"


ALLOW = Decision()


def admit(
    body: bytes, content_type: str, endpoint: Endpoint, settings: Settings, inventory: Inventory
) -> tuple[int, dict[str, Any]]:
    """Answer an AdmissionReview body: (HTTP status, JSON body)."""
    if endpoint not in (MUTATE, VALIDATE):
        raise ValueError(f"unknown admission endpoint {endpoint!r}")
    started = time.perf_counter()
    try:
        review = parse_review(body, content_type, settings.webhook.max_request_bytes)
    except BadRequest as exc:
        METRICS.observe_request(endpoint, "", "", "invalid", time.perf_counter() - started)
        logs.event("bad request", logging.WARNING, endpoint=endpoint, status=exc.status, error=exc.message)
        return exc.status, error_body(exc.status, exc.message)
    request = review.request
    with logs.bind(uid=request.uid):
        try:
            decision = decide(request, endpoint, settings, inventory)
            answer = build_response(
                request.uid,
                review.api_version,
                decision.allowed,
                patch=decision.patch,
                warnings=decision.warnings,
                message=decision.message,
                code=decision.code,
            )
        except Exception:  # our own bug (or a rule's unserialisable output): allow, do not block the cluster
            logs.event("internal error; request allowed unchanged", logging.ERROR, exc_info=True)
            decision = Decision(warnings=(INTERNAL_ERROR,))
            answer = build_response(request.uid, review.api_version, True, warnings=decision.warnings)
        seconds = time.perf_counter() - started
        operation = request.operation if request.operation in OPERATIONS else "other"
        METRICS.observe_request(endpoint, operation, kind_label(request, settings), decision.label, seconds)
        if started >= METRICS.inventory_due:  # (every few seconds: the inventory gauges the other workers read)
            METRICS.refresh_inventory(inventory, started)
        # Allowed requests without warnings (readiness-gate injections included) are the
        # bulk of the traffic: at debug level; denials and warnings are at info.
        level = logging.DEBUG if decision.allowed and not decision.warnings else logging.INFO
        if logs.enabled(level):  # (the fields are not even built for a line nobody reads)
            logs.event(
                "admission",
                level,
                endpoint=endpoint,
                operation=request.operation,
                kind=f"{request.group}/{request.kind}" if request.group else request.kind,
                sub_resource=request.sub_resource,
                namespace=request.namespace,
                name=request.name,
                user=request.username,
                dry_run=request.dry_run,
                decision=decision.label,
                patch_operations=len(decision.patch),
                warnings=len(decision.warnings),
                denial=decision.message,
                milliseconds=round(seconds * 1000, 3),
            )
    return 200, answer


def decide(request: AdmissionRequest, endpoint: Endpoint, settings: Settings, inventory: Inventory) -> Decision:
    """The decision for one request (the cost of one decision, without HTTP or JSON)."""
    if request.operation not in OPERATIONS:
        return ALLOW
    rules = _applicable(_plan("validate" if endpoint == VALIDATE else "mutate", settings), request)
    if not rules:
        return ALLOW
    index = _WatchedIndex(inventory.index())
    if endpoint == VALIDATE:
        decision = _validate(rules, request, index)
    else:
        decision = _mutate(rules, request, index)
    if index.consulted and not (inventory.ready() and not inventory.stale()):
        return _out_of_sync(decision, settings, inventory)
    return decision


def kind_label(request: AdmissionRequest, settings: Settings) -> str:
    """The request's kind as the metrics label: a kind the admission rules know, else "other".

    Known: Pod, the workloads with a pod template (policies/kube.py) and the custom
    resources that rules' options name (`custom-resources`, FW403). The kind is the
    client's to choose: taken as it came, every new name (of any length) would be one
    more series kept in memory and in every scrape for as long as the worker lives.
    """
    kind = request.kind
    if len(kind) > MAX_KIND_LENGTH:
        return OTHER
    group = canonical_group(request.group, kind)
    if (kind == "Pod" and not group) or is_workload(group, kind):
        return kind
    configured: frozenset[tuple[str, str]] | None = settings.memo.get("configured kinds")
    if configured is None:
        configured = settings.memo["configured kinds"] = frozenset(
            (str(entry.get("group", "")), str(entry["kind"]))
            for rule in (*admission_rules("validate"), *admission_rules("mutate")) if settings.enabled(rule.CODE)
            for entry in settings.rule_conf(rule.CODE).get("custom-resources") or ()
            if isinstance(entry, Mapping) and isinstance(entry.get("kind"), str)
        )
    return kind if (group, kind) in configured else OTHER


@functools.cache  # the registry is fixed at import
def admission_rules(function: str) -> tuple[ModuleType, ...]:
    """The registered admission rules defining `function` ("validate" or "mutate"), by code."""
    return tuple(
        rule for rule in RULES.values() if rule.SCOPE == ADMISSION and callable(getattr(rule, function, None))
    )


class _Step(NamedTuple):
    """An enabled admission rule with its options and exemptions, as the settings give them."""

    rule: ModuleType
    conf: Mapping[str, Any]
    exempt_namespaces: frozenset[str]
    exempt_users: frozenset[str]
    exempt_groups: frozenset[str]


def _plan(function: str, settings: Settings) -> tuple[_Step, ...]:
    """The enabled rules defining `function`, read from the settings once (kept in their memo)."""
    key = ("admission plan", function, settings.select, settings.ignore)
    plan: tuple[_Step, ...] | None = settings.memo.get(key)
    if plan is None:
        steps = []
        for rule in admission_rules(function):
            if settings.enabled(rule.CODE):
                conf = settings.rule_conf(rule.CODE)
                steps.append(_Step(rule, conf, frozenset(conf.get("exempt-namespaces", ())),
                                   frozenset(conf.get("exempt-users", ())), frozenset(conf.get("exempt-groups", ()))))
        plan = settings.memo[key] = tuple(steps)
    return plan


_Applicable = list[tuple[ModuleType, Mapping[str, Any]]]


def _applicable(plan: Sequence[_Step], request: AdmissionRequest) -> _Applicable:
    """The rules that pass the guard clauses, each with its options."""
    found: _Applicable = []
    codes: tuple[str, ...] | None | bool = False
    annotated = False  # whether `codes` was read (once per request, only when a rule gets that far)
    for rule, conf, exempt_namespaces, exempt_users, exempt_groups in plan:
        if request.namespace and request.namespace in exempt_namespaces:
            reason = "exempt namespace"
        elif request.username and request.username in exempt_users:
            reason = "exempt user"
        elif exempt_groups and not exempt_groups.isdisjoint(request.groups):
            reason = "exempt group"
        else:
            if not annotated:
                obj = request.old_object if request.old_object is not None else request.object
                codes = annotation_codes(obj) if obj is not None else False
                annotated = True
            if codes is False or not covers(codes if isinstance(codes, tuple) else None, rule.CODE, rule.NAME):
                found.append((rule, conf))
                continue
            reason = "fieldwarden.io/ignore annotation"
        logs.event("rule skipped", logging.DEBUG, rule=rule.CODE, reason=reason)
    return found


def _validate(rules: _Applicable, request: AdmissionRequest, index: AutoscalerIndex) -> Decision:
    warnings: list[str] = []
    denials: list[str] = []
    for rule, conf in rules:
        try:
            verdict = rule.validate(request, conf, index)
        except Exception:
            warnings.append(_rule_failed(rule))
            continue
        if verdict is None:
            continue
        enforcement = conf.get("enforcement", "deny")
        if not verdict.allowed and enforcement == "dryrun":
            METRICS.observe_rule(rule.CODE, "dryrun")
            logs.event("dry-run violation: would deny", rule=rule.CODE, violation=verdict.message)
            continue
        warnings.extend(rule_message(rule.CODE, rule.NAME, text) for text in verdict.warnings)
        text = rule_message(rule.CODE, rule.NAME, verdict.message)
        if verdict.allowed:
            if verdict.message:
                warnings.append(text)
        elif enforcement == "warn":
            METRICS.observe_rule(rule.CODE, "warned")
            warnings.append(text)
        else:
            METRICS.observe_rule(rule.CODE, "denied")
            denials.append(text)
    if denials:
        return Decision(False, warnings=tuple(warnings), message="; ".join(denials))
    return Decision(warnings=tuple(warnings))


def _mutate(rules: _Applicable, request: AdmissionRequest, index: AutoscalerIndex) -> Decision:
    if request.object is None:
        return ALLOW
    draft = Draft(request.object)
    warnings: list[str] = []
    done: _Applicable = []
    for rule, conf in rules:
        try:
            said = rule.mutate(request, draft, conf, index)
        except Exception:
            warnings.append(_rule_failed(rule))
            draft = _replay(done, request, index)  # drop what the failed rule half did
            continue
        done.append((rule, conf))
        if said:
            METRICS.observe_rule(rule.CODE, "warned")
            warnings.extend(rule_message(rule.CODE, rule.NAME, text) for text in said)
    return Decision(patch=tuple(diff(request.object, draft.object)), warnings=tuple(warnings))


def _replay(rules: _Applicable, request: AdmissionRequest, index: AutoscalerIndex) -> Draft:
    """A fresh draft of the object with the mutations of `rules` (which ran fine once) redone."""
    assert request.object is not None
    draft = Draft(request.object)
    for rule, conf in rules:
        rule.mutate(request, draft, conf, index)
    return draft


def _rule_failed(rule: ModuleType) -> str:
    METRICS.observe_rule(rule.CODE, "error")
    logs.event("rule raised; skipped (fail open)", logging.ERROR, exc_info=True, rule=rule.CODE)
    return rule_message(rule.CODE, rule.NAME, "internal error; the rule was skipped for this request")


def _out_of_sync(decision: Decision, settings: Settings, inventory: Inventory) -> Decision:
    state = inventory.describe()
    age = state.get("age_seconds")
    since = f", last heard from {age:.0f}s ago" if isinstance(age, (int, float)) else ""
    what = f"the autoscaler inventory ({state.get('source', 'unknown')}{since}) is not in sync"
    logs.event("autoscaler inventory not in sync", logging.WARNING, policy=settings.webhook.on_stale_inventory)
    if settings.webhook.on_stale_inventory == "deny":
        return Decision(False, message=f"[fieldwarden] {what}; retry later (webhook.on-stale-inventory: deny)",
                        code=STALE_CODE)
    warning = f"[fieldwarden] {what}; decided with the autoscalers it holds"
    return decision._replace(warnings=(*decision.warnings, warning))


class _WatchedIndex(AutoscalerIndex):
    """A read-only view of the inventory's index that notes whether a rule consulted it."""

    def __init__(self, index: AutoscalerIndex) -> None:  # no super().__init__: it only delegates
        self._index = index
        self.default_namespace = index.default_namespace
        self.consulted = False

    def horizontal(self, target: Any) -> list[Mapping[str, Any]]:
        self.consulted = True
        return self._index.horizontal(target)

    def vertical(self, target: Any) -> list[Mapping[str, Any]]:
        self.consulted = True
        return self._index.vertical(target)

    def put(self, obj: Mapping[str, Any]) -> None:
        raise TypeError("admission rules must not change the autoscaler index")

    def remove(self, obj: Mapping[str, Any]) -> None:
        raise TypeError("admission rules must not change the autoscaler index")

    def __len__(self) -> int:
        return len(self._index)
