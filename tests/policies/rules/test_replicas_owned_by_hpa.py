"""FW301 replicas-owned-by-hpa."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import git_repo, lint, web_deployment, write

DEPLOYMENT = web_deployment(replicas=3)  # `replicas:` on line 6


def hpa(ref_api: str = "apps/v1", kind: str = "Deployment", name: str = "web",
        version: str = "autoscaling/v2", namespace: str = "") -> str:
    ns = f"\n  namespace: {namespace}" if namespace else ""
    return f"""\
apiVersion: {version}
kind: HorizontalPodAutoscaler
metadata:
  name: web-hpa{ns}
spec:
  scaleTargetRef:
    apiVersion: {ref_api}
    kind: {kind}
    name: {name}
  maxReplicas: 10
"""


def run_one(tmp_path: Path, text: str) -> list[tuple[str, int, int, str]]:
    path = write(tmp_path, "all.yaml", text)
    return lint(["--select", "FW301", "--no-context", str(path)]).hits()


def test_hpa_in_another_file_is_loaded_as_context(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    write(root, "deploy.yaml", DEPLOYMENT)
    write(root, "hpa.yaml", hpa())  # another file of the same apply unit (folder)
    run = lint(["--select", "FW301", "deploy.yaml"], cwd=root)
    assert run.code == 1
    assert run.hits() == [("deploy.yaml", 6, 3, "FW301")]
    finding = run.findings[0]
    assert finding["field"] == "spec.replicas"
    assert "HorizontalPodAutoscaler/default/web-hpa (hpa.yaml:4)" in finding["message"]
    # Linting only the HPA reports the finding it causes, on the Deployment's line (issue 22, item 8).
    assert lint(["--select", "FW301", "hpa.yaml"], cwd=root).hits() == [("deploy.yaml", 6, 3, "FW301")]


def test_without_context_the_other_file_is_not_seen(tmp_path: Path) -> None:
    root = git_repo(tmp_path)
    write(root, "deploy.yaml", DEPLOYMENT)
    write(root, "hpa.yaml", hpa())
    assert lint(["--select", "FW301", "--no-context", "deploy.yaml"], cwd=root).hits() == []


@pytest.mark.parametrize("version", ["autoscaling/v1", "autoscaling/v2", "autoscaling/v2beta1", "autoscaling/v2beta2"])
def test_every_hpa_version(tmp_path: Path, version: str) -> None:
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + hpa(version=version)) == [("all.yaml", 6, 3, "FW301")]


def test_legacy_extensions_on_either_side(tmp_path: Path) -> None:
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + hpa(ref_api="extensions/v1beta1")) == [("all.yaml", 6, 3, "FW301")]
    legacy = DEPLOYMENT.replace("apps/v1", "extensions/v1beta1")
    assert run_one(tmp_path, legacy + "---\n" + hpa()) == [("all.yaml", 6, 3, "FW301")]


def test_other_namespace_is_another_workload(tmp_path: Path) -> None:
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + hpa(namespace="prod")) == []


def test_unset_namespace_is_default(tmp_path: Path) -> None:
    explicit = DEPLOYMENT.replace("  name: web\n", "  name: web\n  namespace: default\n", 1)
    assert run_one(tmp_path, explicit + "---\n" + hpa()) == [("all.yaml", 7, 3, "FW301")]
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + hpa(namespace="default")) == [("all.yaml", 6, 3, "FW301")]


def test_configured_default_namespace(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "default-namespace: team\n")
    text = DEPLOYMENT.replace("  name: web\n", "  name: web\n  namespace: team\n", 1) + "---\n" + hpa()
    write(tmp_path, "all.yaml", text)
    run = lint(["--select", "FW301", "--no-context", "all.yaml"], cwd=tmp_path)
    assert run.hits() == [("all.yaml", 7, 3, "FW301")]


def test_kind_group_and_name_must_all_match(tmp_path: Path) -> None:
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + hpa(kind="StatefulSet")) == []
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + hpa(name="api")) == []
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + hpa(ref_api="argoproj.io/v1alpha1")) == []


def test_hpa_without_api_version_targets_nothing(tmp_path: Path) -> None:
    # The HPA controller resolves an absent apiVersion to the core group: it scales nothing.
    text = hpa().replace("    apiVersion: apps/v1\n", "")
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + text) == []


def test_keda_scaled_object_with_defaults(tmp_path: Path) -> None:
    keda = """\
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: web}
spec:
  scaleTargetRef:
    name: web
  triggers: [{type: cpu, metricType: Utilization, metadata: {value: "60"}}]
"""
    assert run_one(tmp_path, DEPLOYMENT + "---\n" + keda) == [("all.yaml", 6, 3, "FW301")]
    statefulset = DEPLOYMENT.replace("Deployment", "StatefulSet")
    assert run_one(tmp_path, statefulset + "---\n" + keda) == []
    keda_sts = keda.replace("    name: web\n", "    name: web\n    kind: StatefulSet\n")
    assert run_one(tmp_path, statefulset + "---\n" + keda_sts) == [("all.yaml", 6, 3, "FW301")]


def test_werf_annotation_sets_replicas_only_on_creation(tmp_path: Path) -> None:
    annotated = DEPLOYMENT.replace(
        "  name: web\n", '  name: web\n  annotations:\n    werf.io/set-replicas-only-on-creation: "true"\n', 1
    )
    assert run_one(tmp_path, annotated + "---\n" + hpa()) == []
    declined = annotated.replace('"true"', '"false"')
    assert run_one(tmp_path, declined + "---\n" + hpa()) == [("all.yaml", 8, 3, "FW301")]


def test_without_replicas_passes(tmp_path: Path) -> None:
    text = DEPLOYMENT.replace("  replicas: 3\n", "") + "---\n" + hpa()
    path = write(tmp_path, "all.yaml", text)
    run = lint(["--select", "FW301", "--no-context", str(path)])
    assert (run.code, run.hits()) == (0, [])


def test_null_replicas_is_reported(tmp_path: Path) -> None:
    # `replicas: null` deletes the field on apply; the server then defaults it to 1.
    text = DEPLOYMENT.replace("replicas: 3", "replicas: null") + "---\n" + hpa()
    assert run_one(tmp_path, text) == [("all.yaml", 6, 3, "FW301")]


def test_inside_a_list_and_suppressed_by_comment(tmp_path: Path) -> None:
    listed = "apiVersion: v1\nkind: List\nitems:\n- " + DEPLOYMENT.replace("\n", "\n  ").rstrip() + "\n- " + hpa().replace("\n", "\n  ").rstrip() + "\n"
    assert run_one(tmp_path, listed) == [("all.yaml", 9, 5, "FW301")]
    suppressed = DEPLOYMENT.replace("replicas: 3", "replicas: 3  # fieldwarden: ignore[FW301]") + "---\n" + hpa()
    assert run_one(tmp_path, suppressed) == []


def test_malformed_autoscalers_do_not_crash(tmp_path: Path) -> None:
    junk = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: a}
spec: {scaleTargetRef: web}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: b}
spec: null
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: c}
spec: {scaleTargetRef: {kind: [Deployment], name: {x: 1}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec: [replicas]
"""
    path = write(tmp_path, "all.yaml", junk)
    run = lint(["--select", "FW301", "--no-context", str(path)])
    assert (run.code, run.hits()) == (0, [])


SCALE_TO_ZERO = Path(__file__).resolve().parents[2] / "fixtures" / "rules" / "autoscalers" / "scale-to-zero.yaml"


def test_scale_to_zero_hpa_is_an_hpa_like_any_other(tmp_path: Path) -> None:
    # minReplicas: 0 is valid (HPAScaleToZero): no rule of the autoscaler family
    # objects to it, and a replicas count written beside it is still the HPA's.
    text = SCALE_TO_ZERO.read_text(encoding="utf-8")
    path = write(tmp_path, "worker.yaml", text)
    assert lint(["--select", "FW3", "--no-context", str(path)]).findings == []
    write(tmp_path, "worker.yaml", text.replace("spec:\n  selector: {matchLabels: {app: worker}}", "spec:\n  replicas: 0\n  selector: {matchLabels: {app: worker}}"))
    run = lint(["--select", "FW3", "--no-context", str(path)])
    assert [(f["code"], f["line"], f["column"]) for f in run.findings] == [("FW301", 7, 3)]
