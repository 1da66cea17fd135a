"""admit(): guard clauses, enforcement, failure handling, and the three admission rules end to end.

The first half drives the machinery with small rule modules defined here (registered
for the test only); the second half runs FW401-FW403 from the registry on the captured
AdmissionReviews and variants of them. Patches are applied to the request object with
jsonpatch and the resulting object is checked.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import types
from typing import Any, Callable, Iterator, Mapping

import jsonpatch
import orjson
import pytest
from hypothesis import given, settings as hypothesis_settings
from hypothesis import strategies as st
from kubernetes.utils.quantity import parse_quantity

from fieldwarden.policies import registry
from fieldwarden.policies.admission import AdmissionRequest, AutoscalerIndex, Verdict
from fieldwarden.policies.config import Settings
from fieldwarden.policies.draft import Draft
from fieldwarden.policies.model import ObjectKey
from fieldwarden.policies.rule import ADMISSION, COMMON_DEFAULTS, COMMON_OPTIONS, ENFORCEMENT_DEFAULT, ENFORCEMENT_OPTION
from fieldwarden.webhook.server import handlers
from fieldwarden.webhook.server import logs
from fieldwarden.webhook.server.handlers import admit
from fieldwarden.webhook.inventory.sources import StaticInventory
from fieldwarden.webhook.server.metrics import METRICS
from fieldwarden.webhook.server.review import MAX_DEPTH
from tests.webhook.samples import JSON, edit, encode, patch_ops, patched, review

# --- small rules for the machinery -------------------------------------------------------


def _rule(code: str, name: str, validating: bool, **functions: Any) -> types.ModuleType:
    module = types.ModuleType(f"tests.fake_rules.{name.replace('-', '_')}", f"{name}: a test rule")
    module.CODE, module.NAME, module.SEVERITY, module.SCOPE, module.FIXABLE = code, name, "error", ADMISSION, False
    module.OPTIONS = {**COMMON_OPTIONS, **(ENFORCEMENT_OPTION if validating else {})}
    module.DEFAULTS = {**COMMON_DEFAULTS, **(ENFORCEMENT_DEFAULT if validating else {})}
    for key, function in functions.items():
        setattr(module, key, function)
    return module


def _label(obj: Mapping[str, Any] | None, key: str) -> Any:
    return ((obj or {}).get("metadata") or {}).get("labels", {}).get(key)


def verdict_from_label(request: AdmissionRequest, conf: Mapping[str, Any], autoscalers: AutoscalerIndex) -> Verdict | None:
    """Denies what is labelled `verdict: deny` (on DELETE: any pod), warns on `verdict: warn`."""
    if request.operation == "DELETE":
        return Verdict(False, "pods are forever")
    verdict = _label(request.object, "verdict")
    if verdict == "deny":
        return Verdict(False, "the label says deny", ("a warning that comes with the denial",))
    if verdict == "warn":
        return Verdict(True, "the label says warn")
    return None


def touch(request: AdmissionRequest, draft: Draft, conf: Mapping[str, Any], autoscalers: AutoscalerIndex) -> list[str]:
    labels = draft.mapping(("metadata", "labels"))
    assert labels is not None
    labels["touched"] = "yes"
    return ["touched it"]


def break_halfway(request: AdmissionRequest, draft: Draft, conf: Mapping[str, Any], autoscalers: AutoscalerIndex) -> list[str]:
    labels = draft.mapping(("metadata", "labels"))
    container = draft.mapping(("spec", "containers", 0))
    assert labels is not None and container is not None
    labels["half"] = "done"
    container["image"] = "evil"
    raise KeyError("the rest")


def validate_breaks(request: AdmissionRequest, conf: Mapping[str, Any], autoscalers: AutoscalerIndex) -> Verdict | None:
    raise ZeroDivisionError


def consult(request: AdmissionRequest, draft: Draft, conf: Mapping[str, Any], autoscalers: AutoscalerIndex) -> list[str]:
    if _label(request.object, "consult") == "yes":
        autoscalers.horizontal(ObjectKey("apps", "Deployment", request.namespace, "web"))
    return []


FAKES = {
    "FW491": _rule("FW491", "test-verdict", True, validate=verdict_from_label),
    "FW492": _rule("FW492", "test-touch", False, mutate=touch),
    "FW493": _rule("FW493", "test-break-halfway", False, mutate=break_halfway),
    "FW494": _rule("FW494", "test-validate-breaks", True, validate=validate_breaks),
    "FW495": _rule("FW495", "test-consult", False, mutate=consult),
}


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for code, module in FAKES.items():
        monkeypatch.setitem(registry.RULES, code, module)
        monkeypatch.setitem(registry.BY_NAME, module.NAME, module)
    handlers.admission_rules.cache_clear()  # it caches the registry, which is fixed outside tests
    yield
    monkeypatch.undo()
    handlers.admission_rules.cache_clear()


@pytest.fixture
def read_logs() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The webhook's log lines so far, parsed (every line must be one JSON object)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    old_level = logs.LOGGER.level
    logs.LOGGER.addHandler(handler)
    logs.LOGGER.setLevel(logging.INFO)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        logs.LOGGER.removeHandler(handler)
        logs.LOGGER.setLevel(old_level)


def settings(select: tuple[str, ...] = ("FW4",), **rules: Any) -> Settings:
    return Settings({"select": list(select), "rules": rules})


def fake() -> Settings:
    """FW491 and FW492 (built after the `fakes` fixture registered them); the others run where asked."""
    return settings(("FW491", "FW492"))


def call(endpoint: handlers.Endpoint, data: dict[str, Any], config: Settings, inventory: StaticInventory | None = None) -> dict[str, Any]:
    """The `response` of an answer that must be HTTP 200 and echo the request's uid."""
    status, answer = admit(encode(data), JSON, endpoint, config, inventory or StaticInventory())
    assert status == 200, answer
    assert answer["apiVersion"] == data["apiVersion"] and answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == data["request"]["uid"]
    return answer["response"]  # type: ignore[no-any-return]


def labelled(name: str, **labels: str) -> dict[str, Any]:
    def change(request: dict[str, Any]) -> None:
        request["object"]["metadata"].setdefault("labels", {}).update(labels)

    return edit(review(name), change)


def annotated(name: str, value: str, *fields: str) -> dict[str, Any]:
    """The review with the ignore annotation on the stored object (and the new one, if any), or on `fields`."""
    def change(request: dict[str, Any]) -> None:
        for field in fields or ("oldObject", "object"):
            if request[field] is not None:
                request[field]["metadata"].setdefault("annotations", {})["fieldwarden.io/ignore"] = value

    return edit(review(name), change)


@pytest.mark.usefixtures("fakes")
class TestMachinery:
    def test_a_denial_names_the_rule_and_keeps_the_rules_warnings(self) -> None:
        response = call("validate", labelled("pod-update-label", verdict="deny"), fake())
        assert response["allowed"] is False and "patch" not in response
        assert response["status"] == {"code": 403, "message": "[FW491 test-verdict] the label says deny"}
        assert response["warnings"] == ["[FW491 test-verdict] a warning that comes with the denial"]

    def test_allowed_verdict_message_is_a_warning(self) -> None:
        response = call("validate", labelled("pod-update-label", verdict="warn"), fake())
        assert response["allowed"] is True and response["warnings"] == ["[FW491 test-verdict] the label says warn"]

    def test_warn_enforcement_allows_with_the_message_as_warning(self) -> None:
        before = METRICS.rule_results("FW491", "warned")
        response = call("validate", labelled("pod-update-label", verdict="deny"), settings(("FW491",), FW491={"enforcement": "warn"}))
        assert response["allowed"] is True and "[FW491 test-verdict] the label says deny" in response["warnings"]
        assert METRICS.rule_results("FW491", "warned") == before + 1

    def test_dryrun_enforcement_only_logs_and_counts(self, read_logs: Callable[[], list[dict[str, Any]]]) -> None:
        data = labelled("pod-update-label", verdict="deny")
        before = METRICS.rule_results("FW491", "dryrun")
        response = call("validate", data, settings(("FW491",), FW491={"enforcement": "dryrun"}))
        assert response == {"uid": data["request"]["uid"], "allowed": True}
        assert METRICS.rule_results("FW491", "dryrun") == before + 1
        would = [line for line in read_logs() if line["message"].startswith("dry-run violation")]
        assert len(would) == 1 and would[0]["rule"] == "FW491" and would[0]["uid"] == data["request"]["uid"]
        assert would[0]["violation"] == "the label says deny"

    def test_a_disabled_rule_does_not_run(self) -> None:
        config = Settings({"select": ["FW49"], "ignore": ["test-verdict"]})
        assert call("validate", labelled("pod-update-label", verdict="deny"), config)["allowed"] is True

    @pytest.mark.parametrize(
        "options",
        [{"exempt-namespaces": ["default"]}, {"exempt-users": ["cluster-admin"]}, {"exempt-groups": ["system:masters"]}],
        ids=["namespace", "user", "group"],
    )
    def test_exemptions_from_the_configuration(self, options: dict[str, Any]) -> None:
        data = labelled("pod-update-label", verdict="deny")
        assert call("validate", data, settings(("FW491",), FW491=options))["allowed"] is True
        other = {key: ["someone-else"] for key in options}
        assert call("validate", data, settings(("FW491",), FW491=other))["allowed"] is False

    @pytest.mark.parametrize("value", ["FW491", "fw491", "test-verdict", "FW402, test-verdict", "all", "*", ""])
    def test_the_ignore_annotation_exempts_the_object(self, value: str) -> None:
        data = edit(annotated("pod-update-label", value), lambda r: r["object"]["metadata"]["labels"].update(verdict="deny"))
        assert call("validate", data, fake())["allowed"] is True
        plain = edit(review("pod-update-label"), lambda r: r["object"]["metadata"]["labels"].update(verdict="deny"))
        assert call("validate", plain, fake())["allowed"] is False  # the control: no annotation, denied

    def test_an_annotation_naming_other_rules_does_not_exempt(self) -> None:
        data = edit(annotated("pod-update-label", "FW401, FW4"), lambda r: r["object"]["metadata"]["labels"].update(verdict="deny"))
        assert call("validate", data, fake())["allowed"] is False

    def test_on_delete_the_old_objects_annotation_counts(self) -> None:
        assert call("validate", review("pod-delete"), fake())["allowed"] is False
        assert call("validate", annotated("pod-delete", "FW491", "oldObject"), fake())["allowed"] is True

    def test_an_update_cannot_exempt_itself_the_stored_objects_annotation_counts(self) -> None:
        def deny(r: dict[str, Any]) -> None:
            r["object"]["metadata"]["labels"].update(verdict="deny")

        assert call("validate", edit(annotated("pod-update-label", "FW491", "object"), deny), fake())["allowed"] is False
        assert call("validate", edit(annotated("pod-update-label", "FW491", "oldObject"), deny), fake())["allowed"] is True

    def test_unknown_operations_are_allowed_untouched(self) -> None:
        data = edit(labelled("pod-update-label", verdict="deny"), lambda r: r.update(operation="PATCH"))
        assert call("validate", data, fake()) == {"uid": data["request"]["uid"], "allowed": True}
        assert call("mutate", data, fake()) == {"uid": data["request"]["uid"], "allowed": True}

    def test_dry_run_requests_get_the_same_answer(self) -> None:
        data = labelled("pod-update-label", verdict="deny")
        dry = edit(data, lambda r: r.update(dryRun=True))
        assert call("validate", dry, fake()) == call("validate", data, fake())
        assert call("mutate", dry, fake()) == call("mutate", data, fake())

    def test_mutating_rules_run_on_mutate_only(self) -> None:
        data = review("pod-create")
        mutated = call("mutate", data, fake())
        assert _label(patched(data, {"response": mutated}), "touched") == "yes"
        assert mutated["warnings"] == ["[FW492 test-touch] touched it"]
        validated = call("validate", data, fake())
        assert "patch" not in validated and "patchType" not in validated and "warnings" not in validated

    def test_a_rule_that_raises_is_skipped_and_its_half_done_changes_dropped(
        self, read_logs: Callable[[], list[dict[str, Any]]]
    ) -> None:
        data = review("pod-create")
        before = METRICS.rule_results("FW493", "error")
        response = call("mutate", data, settings(("FW492", "FW493")))
        pod = patched(data, {"response": response})
        assert _label(pod, "touched") == "yes"  # FW492 ran before FW493 broke
        assert _label(pod, "half") is None and pod["spec"]["containers"][0]["image"] == "nginx:1.25"
        assert response["allowed"] is True
        assert "[FW493 test-break-halfway] internal error; the rule was skipped for this request" in response["warnings"]
        assert METRICS.rule_results("FW493", "error") == before + 1
        errors = [line for line in read_logs() if line["level"] == "error"]
        assert len(errors) == 1 and errors[0]["rule"] == "FW493" and errors[0]["uid"] == data["request"]["uid"]
        assert "KeyError: 'the rest'" in errors[0]["error"]  # the traceback goes to the log, not the answer

    def test_a_validating_rule_that_raises_fails_open(self) -> None:
        response = call("validate", labelled("pod-update-label", verdict="deny"), settings(("FW491", "FW494")))
        assert response["allowed"] is False  # FW491 still denies
        assert any(w.startswith("[FW494 test-validate-breaks] internal error") for w in response["warnings"])
        alone = call("validate", review("pod-update-label"), settings(("FW494",)))
        assert alone["allowed"] is True and alone["warnings"][0].startswith("[FW494")

    def test_an_internal_error_allows_the_request(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def broken(*args: Any) -> Any:
            raise RuntimeError("bug")

        monkeypatch.setattr(handlers, "decide", broken)
        response = call("mutate", review("pod-create"), fake())
        assert response["allowed"] is True and "patch" not in response
        assert response["warnings"] == ["[fieldwarden] internal error in the webhook; request allowed unchanged"]

    def test_a_rule_output_that_is_not_json_allows_the_request(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def not_json(request: AdmissionRequest, draft: Draft, conf: Mapping[str, Any], autoscalers: AutoscalerIndex) -> list[str]:
            labels = draft.mapping(("metadata", "labels"))
            assert labels is not None
            labels["when"] = object()
            return []

        monkeypatch.setattr(FAKES["FW492"], "mutate", not_json)
        response = call("mutate", review("pod-create"), fake())
        assert response == {
            "uid": review("pod-create")["request"]["uid"],
            "allowed": True,
            "warnings": ["[fieldwarden] internal error in the webhook; request allowed unchanged"],
        }

    @pytest.mark.parametrize(
        ("inventory", "on_stale"),
        [(StaticInventory(stale=True), "deny"), (StaticInventory(ready=False), "deny"), (StaticInventory(stale=True), "allow")],
        ids=["stale-deny", "not-ready-deny", "stale-allow"],
    )
    def test_an_inventory_out_of_sync(self, inventory: StaticInventory, on_stale: str) -> None:
        config = Settings({"select": ["FW495"], "webhook": {"on-stale-inventory": on_stale}})
        consulted = call("mutate", labelled("pod-create", consult="yes"), config, inventory)
        if on_stale == "deny":
            assert consulted["allowed"] is False and consulted["status"]["code"] == 503
            assert "autoscaler inventory (static) is not in sync" in consulted["status"]["message"]
        else:
            assert consulted["allowed"] is True
            assert consulted["warnings"] == ["[fieldwarden] the autoscaler inventory (static) is not in sync; decided with the autoscalers it holds"]
        # a request whose answer does not depend on the inventory is not affected
        assert call("mutate", review("pod-create"), config, inventory) == {"uid": review("pod-create")["request"]["uid"], "allowed": True}

    def test_bad_requests_are_4xx_json_and_counted(self) -> None:
        before = METRICS.requests("validate", "", "", "invalid")
        status, body = admit(b"{}", JSON, "validate", fake(), StaticInventory())
        assert status == 400 and body["kind"] == "Status" and "kind must be AdmissionReview" in body["message"]
        status, body = admit(encode(review("pod-create")), "text/yaml", "validate", fake(), StaticInventory())
        assert status == 415 and body["code"] == 415
        status, body = admit(b"x" * 70_000, JSON, "validate", Settings({"webhook": {"max-request-bytes": 65536}}), StaticInventory())
        assert status == 413
        assert METRICS.requests("validate", "", "", "invalid") == before + 3

    def test_requests_are_counted_by_endpoint_operation_kind_and_decision(self) -> None:
        before = METRICS.requests("validate", "UPDATE", "Pod", "denied")
        call("validate", labelled("pod-update-label", verdict="deny"), fake())
        assert METRICS.requests("validate", "UPDATE", "Pod", "denied") == before + 1


def test_decisions_are_logged_with_the_request_uid(read_logs: Callable[[], list[dict[str, Any]]]) -> None:
    denied = edit(review("pod-update-set-image"), with_env)
    call("validate", denied, settings())
    line = read_logs()[-1]
    assert line["uid"] == denied["request"]["uid"] and line["message"] == "admission" and line["level"] == "info"
    assert (line["endpoint"], line["operation"], line["kind"], line["decision"]) == ("validate", "UPDATE", "Pod", "denied")
    assert line["denial"].startswith("[FW401 pod-update-not-image-only]")
    allowed = edit(review("pod-update-set-image"), lambda r: r.update(uid="another-uid"))
    call("validate", allowed, settings())
    assert read_logs()[-1]["uid"] == denied["request"]["uid"]  # a plain allow is logged at debug only
    logs.LOGGER.setLevel(logging.DEBUG)
    call("validate", allowed, settings())
    line = read_logs()[-1]
    assert (line["uid"], line["decision"], line["level"]) == ("another-uid", "allowed", "debug")


# --- FW401-FW403 through admit ------------------------------------------------------------

HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10},
}
UNDER_HPA = StaticInventory([HPA])


def with_env(request: dict[str, Any]) -> None:
    request["object"]["spec"]["containers"][0]["env"] = [{"name": "MODE", "value": "fast"}]


class TestPodUpdateNotImageOnly:
    def test_set_image_is_allowed(self) -> None:
        assert call("validate", review("pod-update-set-image"), settings()) == {
            "uid": review("pod-update-set-image")["request"]["uid"],
            "allowed": True,
        }

    def test_label_change_and_delete_are_allowed(self) -> None:
        assert call("validate", review("pod-update-label"), settings())["allowed"] is True
        assert call("validate", review("pod-delete"), settings())["allowed"] is True

    def test_env_change_is_denied_naming_rule_and_path(self) -> None:
        response = call("validate", edit(review("pod-update-set-image"), with_env), settings())
        assert response["allowed"] is False and "patch" not in response
        assert response["status"]["code"] == 403
        message = response["status"]["message"]
        assert message.startswith("[FW401 pod-update-not-image-only] ")
        assert "spec.containers[name=c].env" in message

    def test_every_offending_path_is_listed(self) -> None:
        def more(request: dict[str, Any]) -> None:
            with_env(request)
            request["object"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
            request["object"]["spec"]["dnsPolicy"] = "None"

        message = call("validate", edit(review("pod-update-set-image"), more), settings())["status"]["message"]
        for path in ("spec.containers[name=c].env", "spec.containers[name=c].imagePullPolicy", "spec.dnsPolicy"):
            assert path in message

    def test_warn_and_dryrun_modes(self) -> None:
        data = edit(review("pod-update-set-image"), with_env)
        warned = call("validate", data, settings(FW401={"enforcement": "warn"}))
        assert warned["allowed"] is True and warned["warnings"][0].startswith("[FW401 pod-update-not-image-only] ")
        assert call("validate", data, settings(**{"pod-update-not-image-only": {"enforcement": "dryrun"}})) == {
            "uid": data["request"]["uid"],
            "allowed": True,
        }

    @pytest.mark.parametrize(
        "options",
        [{"exempt-namespaces": ["default"]}, {"exempt-users": ["cluster-admin"]}, {"exempt-groups": ["system:masters"]}],
        ids=["namespace", "user", "group"],
    )
    def test_exemptions(self, options: dict[str, Any]) -> None:
        data = edit(review("pod-update-set-image"), with_env)
        assert call("validate", data, settings(FW401=options))["allowed"] is True
        other = {key: ["someone-else"] for key in options}
        assert call("validate", data, settings(FW401=other))["allowed"] is False  # the control: not exempt, denied

    def test_exemption_by_annotation(self) -> None:
        data = edit(annotated("pod-update-set-image", "pod-update-not-image-only"), with_env)
        assert call("validate", data, settings())["allowed"] is True
        data = edit(annotated("pod-update-set-image", "FW402"), with_env)
        assert call("validate", data, settings())["allowed"] is False

    def test_the_pods_updater_cannot_exempt_it(self) -> None:
        """The issue's `kubectl patch`: the ignore annotation and a toleration in one request."""
        def patch(request: dict[str, Any]) -> None:
            request["object"]["spec"]["tolerations"].append({"key": "example.com/spot", "operator": "Exists"})
        data = edit(annotated("pod-update-set-image", "FW401", "object"), patch)
        message = call("validate", data, settings())["status"]["message"]
        assert message.startswith("[FW401 pod-update-not-image-only] a pod update may not grant exemptions; "
                                  "this one adds the annotation fieldwarden.io/ignore")
        assert "also changes spec.tolerations" in message
        label = edit(review("pod-update-label"), lambda r: r["object"]["metadata"]["labels"].update(
            {"fieldwarden.io/admission": "disabled"}))
        assert call("validate", label, settings())["allowed"] is False
        status = edit(label, lambda r: r.update(subResource="status"))
        assert call("validate", status, settings())["allowed"] is False
        for exempt in ({"exempt-users": ["cluster-admin"]}, {"exempt-groups": ["system:masters"]}):
            assert call("validate", data, settings(FW401=exempt))["allowed"] is True
            assert call("validate", status, settings(FW401=exempt))["allowed"] is True

    def test_dry_run_same_answer(self) -> None:
        data = edit(review("pod-update-set-image"), with_env)
        assert call("validate", edit(data, lambda r: r.update(dryRun=True)), settings()) == call("validate", data, settings())


class TestPodWithoutReadinessGate:
    @pytest.mark.parametrize("name", ["pod-create", "pod-create-generatename"])
    def test_gate_injected_and_pod_labelled(self, name: str) -> None:
        data = review(name)
        response = call("mutate", data, settings())
        pod = patched(data, {"response": response})
        assert pod["spec"]["readinessGates"] == [{"conditionType": "InPlaceUpdateReady"}]
        assert pod["metadata"]["labels"]["fieldwarden.io/readiness-gate"] == "injected"
        expected = data["request"]["object"]
        expected["spec"]["readinessGates"] = pod["spec"]["readinessGates"]
        expected["metadata"].setdefault("labels", {})["fieldwarden.io/readiness-gate"] = "injected"
        assert pod == expected  # nothing else changed

    def test_no_patch_on_the_second_invocation(self) -> None:
        data = review("pod-create")
        pod = patched(data, {"response": call("mutate", data, settings())})
        again = edit(data, lambda r: r.update(object=pod))
        assert call("mutate", again, settings()) == {"uid": data["request"]["uid"], "allowed": True}

    def test_existing_gates_are_kept_and_one_appended(self) -> None:
        other = {"conditionType": "example.com/ready"}
        data = edit(review("pod-create"), lambda r: r["object"]["spec"].update(readinessGates=[other]))
        answer = {"response": call("mutate", data, settings())}
        assert patched(data, answer)["spec"]["readinessGates"] == [other, {"conditionType": "InPlaceUpdateReady"}]
        gate_ops = [op for op in patch_ops(answer) if op["path"].startswith("/spec/readinessGates")]
        assert gate_ops == [{"op": "add", "path": "/spec/readinessGates/-", "value": {"conditionType": "InPlaceUpdateReady"}}]

    def test_not_on_validate_nor_on_update(self) -> None:
        assert "patch" not in call("validate", review("pod-create"), settings())
        assert "patch" not in call("mutate", review("pod-update-set-image"), settings())

    def test_unknown_kind_is_untouched(self) -> None:
        def config_map(request: dict[str, Any]) -> None:
            request["kind"] = {"group": "", "version": "v1", "kind": "ConfigMap"}
            request["resource"] = {"group": "", "version": "v1", "resource": "configmaps"}
            request["object"] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}

        data = edit(review("pod-create"), config_map)
        assert call("mutate", data, settings()) == {"uid": data["request"]["uid"], "allowed": True}
        assert call("validate", data, settings()) == {"uid": data["request"]["uid"], "allowed": True}


class TestAutoscalerOwnedFieldReset:
    def test_replicas_restored_under_an_hpa(self) -> None:
        data = review("deployment-update-apply")
        assert (data["request"]["object"]["spec"]["replicas"], data["request"]["oldObject"]["spec"]["replicas"]) == (1, 3)
        response = call("mutate", data, settings(), UNDER_HPA)
        deployment = patched(data, {"response": response})
        assert deployment["spec"]["replicas"] == 3
        expected = data["request"]["object"]
        expected["spec"]["replicas"] = 3
        assert deployment == expected  # the new image and everything else stay
        assert any(w.startswith("[FW403 autoscaler-owned-field-reset] ") for w in response["warnings"])

    def test_without_an_hpa_nothing_changes(self) -> None:
        data = review("deployment-update-apply")
        assert "patch" not in call("mutate", data, settings(), StaticInventory())

    def test_the_scale_subresource_is_untouched(self) -> None:
        data = review("deployment-scale-subresource")
        assert call("mutate", data, settings(), UNDER_HPA) == {"uid": data["request"]["uid"], "allowed": True}
        assert call("validate", data, settings(), UNDER_HPA) == {"uid": data["request"]["uid"], "allowed": True}

    def test_dry_run_gets_the_same_keep_live_patch(self) -> None:
        dry = review("deployment-update-dryrun")
        assert dry["request"]["dryRun"] is True
        real = edit(dry, lambda r: r.update(dryRun=False))
        answer = call("mutate", dry, settings(), UNDER_HPA)
        assert answer == call("mutate", real, settings(), UNDER_HPA)
        assert patched(dry, {"response": answer})["spec"]["replicas"] == dry["request"]["oldObject"]["spec"]["replicas"]

    def test_exempt_namespace(self) -> None:
        data = review("deployment-update-apply")
        config = settings(FW403={"exempt-namespaces": ["default"]})
        assert "patch" not in call("mutate", data, config, UNDER_HPA)
        other = settings(FW403={"exempt-namespaces": ["someone-else"]})
        assert "patch" in call("mutate", data, other, UNDER_HPA)  # the control: not exempt, mutated

    def test_stale_inventory_deny(self) -> None:
        data = review("deployment-update-apply")
        config = Settings({"webhook": {"on-stale-inventory": "deny"}})
        stale = StaticInventory([HPA], stale=True)
        response = call("mutate", data, config, stale)
        assert response["allowed"] is False and response["status"]["code"] == 503
        # pods do not depend on the inventory: still injected
        assert "patch" in call("mutate", review("pod-create"), config, stale)


# --- FW403 never stores a request above its limit -------------------------------------------

QUANTITIES = st.sampled_from(["50m", "80m", "0.1", "100m", "200m", "1", "1500m", "256Mi", "1Gi", "1073741824"])
PAIRS = st.tuples(st.none() | QUANTITIES, st.none() | QUANTITIES)  # (request, limit) of one resource
RESOURCES = st.fixed_dictionaries({"cpu": PAIRS, "memory": PAIRS})


def over(request: Any, limit: Any) -> bool:
    """request > limit, by the kubernetes client's parser (not the rule's)."""
    return request is not None and limit is not None and parse_quantity(request) > parse_quantity(limit)


def as_resources(pairs: Mapping[str, tuple[Any, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for slot, kind in enumerate(("requests", "limits")):
        values = {name: pair[slot] for name, pair in pairs.items() if pair[slot] is not None}
        if values:
            out[kind] = values
    return out


@hypothesis_settings(max_examples=300, deadline=None)
@given(
    live=RESOURCES,
    sent=RESOURCES,
    controlled_values=st.sampled_from([None, "RequestsOnly", "RequestsAndLimits"]),
    controlled=st.sampled_from([None, ["cpu"], ["memory"], ["cpu", "memory"]]),
)
def test_fw403_never_patches_a_request_above_its_limit(
    live: dict[str, tuple[Any, Any]], sent: dict[str, tuple[Any, Any]], controlled_values: str | None,
    controlled: list[str] | None,
) -> None:
    def change(request: dict[str, Any]) -> None:
        for key, pairs in (("object", sent), ("oldObject", live)):
            request[key]["spec"]["template"]["spec"]["containers"][0]["resources"] = as_resources(pairs)

    data = edit(review("deployment-update-apply"), change)
    policy: dict[str, Any] = {"containerName": "*"}
    if controlled_values is not None:
        policy["controlledValues"] = controlled_values
    if controlled is not None:
        policy["controlledResources"] = controlled
    vpa = {
        "apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "resourcePolicy": {"containerPolicies": [policy]}},
    }
    response = call("mutate", data, settings(), StaticInventory([HPA, vpa]))
    assert not any("internal error" in w for w in response.get("warnings", ()))
    result = patched(data, {"response": response})["spec"]["template"]["spec"]["containers"][0]["resources"]
    requests_kept = set(controlled if controlled is not None else ("cpu", "memory"))
    limits_kept = set() if controlled_values == "RequestsOnly" else requests_kept
    for name in ("cpu", "memory"):
        got = (result.get("requests", {}).get(name), result.get("limits", {}).get(name))
        if over(*got):
            assert got == sent[name] and over(*sent[name])  # only ever the user's own pair
        # the autoscaler's values are still protected: kept, unless the whole pair was left as sent
        if name in requests_kept:
            assert got[0] == live[name][0] or got == sent[name]
        else:
            assert got[0] == sent[name][0] or got == live[name]
        if name in limits_kept:
            assert got[1] == live[name][1] or got == sent[name]
        else:
            assert got[1] == sent[name][1] or got == live[name]


# --- nesting as deep as the parser allows ------------------------------------------------------

def nested(levels: int, leaf: Any, kind: str) -> str:
    """JSON text of `levels` mappings ({"a": ...}) or lists around `leaf`."""
    opening, closing = ('{"a":', "}") if kind == "mapping" else ("[", "]")
    return opening * levels + json.dumps(leaf) + closing * levels


def unnest(value: Any, kind: str) -> tuple[int, Any]:
    """(levels, leaf) of a value `nested` wrote, read without recursion."""
    levels = 0
    while isinstance(value, dict if kind == "mapping" else list):
        value = value["a"] if kind == "mapping" else value[0]
        levels += 1
    return levels, value


def spliced(data: dict[str, Any], **raw: str) -> bytes:
    """The review's JSON with each string "@name@" replaced by raw JSON text.

    (json.dumps, and copy.deepcopy in edit(), recurse: neither could handle the values.)
    """
    text = json.dumps(data)
    for name, value in raw.items():
        placeholder = json.dumps(f"@{name}@")
        assert placeholder in text
        text = text.replace(placeholder, value)
    return text.encode()


def answer_deep(body: bytes, endpoint: handlers.Endpoint, config: Settings, inventory: StaticInventory | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The response to a body no json.dumps could write, and the request object with its patch applied."""
    status, answer = admit(body, JSON, endpoint, config, inventory or StaticInventory())
    assert status == 200, answer
    response = answer["response"]
    obj = orjson.loads(body)["request"]["object"]
    if "patch" in response:
        ops = json.loads(base64.b64decode(response["patch"]))
        obj = jsonpatch.apply_patch(obj, ops, in_place=True)  # (a copy would recurse)
    return response, obj


# The containers around a field of the spec: review, request, object, spec (+ template, spec).
POD_SPEC_FIELD = MAX_DEPTH - 4
TEMPLATE_SPEC_FIELD = MAX_DEPTH - 6
KINDS = ["mapping", "list"]
UNDER_HPA_AND_VPA = StaticInventory([HPA, {
    "apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
}])


def no_failed_rule(response: Mapping[str, Any]) -> None:
    assert not any("internal error" in w for w in response.get("warnings", ())), response


class TestDeepNesting:
    """A rule that raises is skipped and the request allowed: deep nesting must not make one raise."""

    @staticmethod
    def pod_update(new: str, old: str, where: str = "x") -> bytes:
        def change(request: dict[str, Any]) -> None:
            request["object"]["spec"][where] = "@new@"
            request["oldObject"]["spec"][where] = "@old@"

        return spliced(edit(review("pod-update-set-image"), change), new=new, old=old)

    @pytest.mark.parametrize("kind", KINDS)
    def test_a_deep_spec_change_is_denied(self, kind: str) -> None:
        body = self.pod_update(nested(POD_SPEC_FIELD, 1, kind), nested(POD_SPEC_FIELD, 2, kind))
        response, _ = answer_deep(body, "validate", settings())
        no_failed_rule(response)
        assert response["allowed"] is False
        message = response["status"]["message"]
        assert message.startswith("[FW401 pod-update-not-image-only] ") and "also changes spec.x" in message
        assert len(message) < 500  # a deep path is named only so deep

    @pytest.mark.parametrize("kind", KINDS)
    def test_a_deep_field_left_alone_is_no_change(self, kind: str) -> None:
        value = nested(POD_SPEC_FIELD, 1, kind)
        response, _ = answer_deep(self.pod_update(value, value), "validate", settings())
        assert response == {"uid": review("pod-update-set-image")["request"]["uid"], "allowed": True}

    def test_a_change_beside_a_deep_equal_value_names_only_itself(self) -> None:
        deep = nested(POD_SPEC_FIELD - 1, 1, "mapping")
        new, old = f'{{"deep": {deep}, "other": 2}}', f'{{"deep": {deep}, "other": 1}}'
        response, _ = answer_deep(self.pod_update(new, old), "validate", settings())
        assert response["allowed"] is False
        assert response["status"]["message"].endswith("this one also changes spec.x.other (roll the workload to get a new pod instead)")

    def test_deeper_than_the_parser_allows_is_refused_with_400(self) -> None:
        value = nested(POD_SPEC_FIELD + 1, 1, "list")
        status, answer = admit(self.pod_update(value, value), JSON, "validate", settings(), StaticInventory())
        assert status == 400 and f"deeper than {MAX_DEPTH} levels" in answer["message"]

    @pytest.mark.parametrize("kind", KINDS)
    def test_pod_create_gets_its_gate(self, kind: str) -> None:
        data = edit(review("pod-create"), lambda r: r["object"]["spec"].update(x="@deep@"))
        response, pod = answer_deep(spliced(data, deep=nested(POD_SPEC_FIELD, 1, kind)), "mutate", settings())
        no_failed_rule(response)
        assert pod["spec"]["readinessGates"] == [{"conditionType": "InPlaceUpdateReady"}]
        assert pod["metadata"]["labels"]["fieldwarden.io/readiness-gate"] == "injected"
        assert unnest(pod["spec"]["x"], kind) == (POD_SPEC_FIELD, 1)

    @pytest.mark.parametrize("kind", KINDS)
    def test_deployment_update_under_an_hpa_keeps_the_live_replicas(self, kind: str) -> None:
        def change(request: dict[str, Any]) -> None:
            request["object"]["spec"]["template"]["spec"]["x"] = "@new@"
            request["oldObject"]["spec"]["template"]["spec"]["x"] = "@old@"

        data = edit(review("deployment-update-apply"), change)
        body = spliced(data, new=nested(TEMPLATE_SPEC_FIELD, 1, kind), old=nested(TEMPLATE_SPEC_FIELD, 2, kind))
        response, deployment = answer_deep(body, "mutate", settings(), UNDER_HPA_AND_VPA)
        no_failed_rule(response)
        assert deployment["spec"]["replicas"] == 3
        assert unnest(deployment["spec"]["template"]["spec"]["x"], kind) == (TEMPLATE_SPEC_FIELD, 1)

    @pytest.mark.parametrize("kind", KINDS)
    def test_deep_resource_values_do_not_stop_the_replicas_being_kept(self, kind: str) -> None:
        def change(request: dict[str, Any]) -> None:
            for key in ("object", "oldObject"):
                container = request[key]["spec"]["template"]["spec"]["containers"][0]
                container["resources"] = {"requests": {"cpu": f"@{key}@", "memory": "1Gi"}}

        data = edit(review("deployment-update-apply"), change)
        levels = MAX_DEPTH - 10  # review request object spec template spec containers [0] resources requests
        body = spliced(data, object=nested(levels, 1, kind), oldObject=nested(levels, 2, kind))
        response, deployment = answer_deep(body, "mutate", settings(), UNDER_HPA_AND_VPA)
        no_failed_rule(response)
        assert deployment["spec"]["replicas"] == 3
        requests = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
        assert unnest(requests["cpu"], kind) == (levels, 1)  # not a quantity: neither kept nor compared
