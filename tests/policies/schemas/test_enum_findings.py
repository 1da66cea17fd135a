"""FW602 on built-in enum values: on the value's line, in the API server's words, an error for targets up
to the table's release (1.32) and a warning naming 1.32's set for later ones; through renders too."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import git_repo, lint, write

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels: {app: web}
  strategy:
    type: Rolling
  template:
    metadata:
      labels: {app: web}
    spec:
      restartPolicy: Sometimes
      containers:
      - name: web
        image: nginx
        imagePullPolicy: Allways
        ports:
        - containerPort: 80
          protocol: TCPP
"""
PVC = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes:
  - ReadWriteOnce
  - ReadWriteSome
  resources:
    requests: {storage: 1Gi}
"""


def findings(tmp_path: Path, *args: str) -> list[tuple[str, int, int, str, str, str]]:
    run = lint(["--select", "FW602", *args], cwd=tmp_path)
    assert run.code in (0, 1), run.stderr
    return sorted((f["file"], f["line"], f["column"], f["severity"], f["message"], f["hint"]) for f in run.findings)


def test_unsupported_values_on_their_lines_in_the_servers_words(tmp_path: Path) -> None:
    write(tmp_path, "web.yaml", DEPLOYMENT)
    write(tmp_path, "pvc.yaml", PVC)
    assert findings(tmp_path, "--k8s-version", "1.32", "web.yaml", "pvc.yaml") == [
        ("pvc.yaml", 8, 5, "error", 'spec.accessModes[1]: Unsupported value: "ReadWriteSome": supported values: '
         '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"', 'did you mean "ReadWriteOnce"?'),
        ("web.yaml", 9, 5, "error", 'spec.strategy.type: Unsupported value: "Rolling": supported values: '
         '"Recreate", "RollingUpdate"', 'did you mean "RollingUpdate"?'),
        ("web.yaml", 14, 7, "error", 'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported '
         'values: "Always", "Never", "OnFailure"', "use one of the supported values"),
        ("web.yaml", 18, 9, "error", 'spec.template.spec.containers[0].imagePullPolicy: Unsupported value: "Allways": '
         'supported values: "Always", "IfNotPresent", "Never"', 'did you mean "Always"?'),
        ("web.yaml", 21, 11, "error", 'spec.template.spec.containers[0].ports[0].protocol: Unsupported value: "TCPP": '
         'supported values: "SCTP", "TCP", "UDP"', 'did you mean "TCP"?'),
    ]
    # an older target: the same set (a value added since is missed, never refused)
    assert [(f[1], f[3]) for f in findings(tmp_path, "--k8s-version", "1.25", "web.yaml")] == [
        (9, "error"), (14, "error"), (18, "error"), (21, "error")]


def test_a_later_target_gets_a_warning_naming_the_set_checked(tmp_path: Path) -> None:
    write(tmp_path, "pvc.yaml", PVC)
    expected = [("pvc.yaml", 8, 5, "warning", 'spec.accessModes[1]: Unsupported value in Kubernetes 1.32: '
                 '"ReadWriteSome": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", '
                 '"ReadWriteOncePod" (the set checked is 1.32\'s; 1.36 may have added values)',
                 'did you mean "ReadWriteOnce"?')]
    assert findings(tmp_path, "pvc.yaml") == expected  # the default target, 1.36
    assert findings(tmp_path, "--k8s-version", "1.36", "pvc.yaml") == expected
    assert lint(["--select", "FW602", "--fail-on", "error", "pvc.yaml"], cwd=tmp_path).code == 0
    assert [f[3] for f in findings(tmp_path, "--k8s-version", "1.33", "pvc.yaml")] == ["warning"]


def test_valid_and_empty_values_and_status_are_not_reported(tmp_path: Path) -> None:
    text = (DEPLOYMENT.replace("Rolling\n", "Recreate\n").replace("Sometimes", '""').replace("Allways", "IfNotPresent")
            .replace("TCPP", "UDP") + "status:\n  conditions: [{type: Available, status: 'True'}]\n")
    write(tmp_path, "web.yaml", text)
    write(tmp_path, "pvc.yaml", PVC.replace("ReadWriteSome", "ReadWriteOncePod") + "status:\n  phase: Resizing\n")
    assert findings(tmp_path, "--k8s-version", "1.32", "web.yaml", "pvc.yaml") == []
    # an empty list item is no unset field: the server refuses it, and so does FW602
    write(tmp_path, "pvc.yaml", PVC.replace("ReadWriteSome", '""'))
    assert [(f[1], f[2], f[4][:40]) for f in findings(tmp_path, "--k8s-version", "1.32", "pvc.yaml")] == [
        (8, 5, 'spec.accessModes[1]: Unsupported value: ')]


def test_fields_a_default_server_drops_take_any_value(tmp_path: Path) -> None:
    # (features off by default in 1.32: the server drops the field whatever it holds; enums.DROPPED)
    text = DEPLOYMENT.replace("      restartPolicy: Sometimes\n", "      securityContext: {supplementalGroupsPolicy: Merged}\n")
    text = text.replace("imagePullPolicy: Allways", "securityContext: {procMount: Unmask}")
    write(tmp_path, "web.yaml", text)
    assert [f[1] for f in findings(tmp_path, "--k8s-version", "1.32", "web.yaml")] == [9, 21]  # strategy, protocol


def test_a_crds_enum_stays_an_error_whatever_the_target(tmp_path: Path) -> None:
    crd = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.io
spec:
  group: example.io
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              mode: {type: string, enum: [fast, slow]}
"""
    write(tmp_path, "crd.yaml", crd)
    write(tmp_path, "widget.yaml", "apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  mode: fats\n")
    git_repo(tmp_path)
    assert findings(tmp_path, "widget.yaml") == [
        ("widget.yaml", 6, 3, "error", 'spec.mode: Unsupported value: "fats": supported values: "fast", "slow"',
         'did you mean "fast"?')]


def test_through_helm_and_kustomize_renders_on_the_source_lines(tmp_path: Path) -> None:
    write(tmp_path, "chart/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n")
    write(tmp_path, "chart/values.yaml", "pullPolicy: Allways\n")
    write(tmp_path, "chart/templates/service.yaml", """\
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-web
spec:
  type: LoadBalancerr
  selector: {app: web}
  ports:
  - port: 80
""")
    write(tmp_path, "chart/templates/pod.yaml", """\
apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-task
spec:
  containers:
  - name: task
    image: nginx
    imagePullPolicy: {{ .Values.pullPolicy }}
""")
    write(tmp_path, "kustomize/base/kustomization.yaml", "resources: [service.yaml]\n")
    write(tmp_path, "kustomize/base/service.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"
                                                    "spec:\n  selector: {app: web}\n  ports:\n  - port: 80\n")
    write(tmp_path, "kustomize/overlay/kustomization.yaml", "resources: [../base]\npatches:\n- path: patch.yaml\n")
    write(tmp_path, "kustomize/overlay/patch.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"
                                                     "spec:\n  sessionAffinity: Sticky\n")
    git_repo(tmp_path)
    assert [f[:5] for f in findings(tmp_path, "--k8s-version", "1.32", "chart", "kustomize")] == [
        ("chart/templates/pod.yaml", 9, 5, "error", 'spec.containers[0].imagePullPolicy: Unsupported value: "Allways": '
         'supported values: "Always", "IfNotPresent", "Never"'),
        ("chart/templates/service.yaml", 6, 3, "error", 'spec.type: Unsupported value: "LoadBalancerr": supported '
         'values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"'),
        ("kustomize/overlay/patch.yaml", 6, 3, "error", 'spec.sessionAffinity: Unsupported value: "Sticky": '
         'supported values: "ClientIP", "None"'),
    ]
