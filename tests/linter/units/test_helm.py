"""linter/units/helm.py: charts found, rendered with Helm's engine (offline, confined), fields put on their lines.

The charts in tests/fixtures/helm mark the line a finding on a field belongs on with a comment:

    replicas: {{ .Values.replicaCount }}  # expect: Deployment spec.replicas
    cpu: 2  # expect[ha]: Deployment/release-name-web spec.template.spec.containers[0].resources.limits.cpu

`expect[SETS]` limits a marker to value sets (`default` is values.yaml alone, `ha` is
ci/ha-values.yaml); the object is `Kind`, `Kind/name` or `*`. A marker in a template file
(not a helper) holds for the objects of that template; one in a values file holds while no
later file of the set marks the same field. `test_exact_line_rate` measures how often the line
given is the marked one (`python -m tests.linter.units.test_helm` prints the misses).
"""

from __future__ import annotations

import io
import marshal
import os
import re
import tarfile
import time
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import pytest
import yaml

from fieldwarden.linter.units import helm, render_cache
from fieldwarden.linter.units.rendered import Render, RenderedObject, locate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "helm"
CHARTS = ("web", "platform", "legacy", "operator")
MARKER = re.compile(r"#\s*expect(?:\[([\w,-]+)\])?:\s*(\S+)\s+(\S+)\s*$")
PATH_PART = re.compile(r'\.?([^.\[\]"]+)|\[(\d+)\]|\["([^"]+)"\]')


# -- helpers ----------------------------------------------------------------------------------

def files_below(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def parse_path(text: str) -> tuple[str | int, ...]:
    parts: list[str | int] = []
    at = 0
    while at < len(text):
        match = PATH_PART.match(text, at)
        assert match, f"bad path {text!r} at {at}"
        plain, index, quoted = match.groups()
        parts.append(int(index) if index is not None else (quoted if quoted is not None else plain))
        at = match.end()
    return tuple(parts)


def lookup(data: Any, path: tuple[str | int, ...]) -> bool:
    for part in path:
        if isinstance(part, int) and isinstance(data, list) and part < len(data):
            data = data[part]
        elif isinstance(part, str) and isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return False
    return True


def set_name(values: tuple[str, ...]) -> str:
    return ",".join(Path(v).name.removesuffix("-values.yaml") for v in values) or "default"


def objects_of(render: Render, kind: str, name: str | None = None) -> list[tuple[RenderedObject, dict[str, Any]]]:
    found = []
    for obj in render.objects:
        data = yaml.safe_load(obj.text)
        if data.get("kind") == kind and (name is None or data["metadata"]["name"] == name):
            found.append((obj, data))
    return found


def one(render: Render, kind: str, name: str | None = None) -> tuple[RenderedObject, dict[str, Any]]:
    found = objects_of(render, kind, name)
    assert len(found) == 1, [o.anchor for o, _ in found]
    return found[0]


def messages(render: Render) -> str:
    return "\n".join(f"{p.file}:{p.line}:{p.column}: {p.message}" for p in render.problems)


# -- measuring the lines ----------------------------------------------------------------------

class Marker(NamedTuple):
    file: str
    line: int
    sets: frozenset[str] | None
    selector: str
    path: tuple[str | int, ...]


class Sample(NamedTuple):
    marker: Marker
    value_set: str
    obj: str
    got: tuple[str, int, int]
    exact: bool

    @property
    def hit(self) -> bool:
        return self.exact and self.got[:2] == (self.marker.file, self.marker.line)


def markers(chart: str) -> list[Marker]:
    found = []
    for name in files_below(FIXTURES / chart):
        if not name.endswith((".yaml", ".tpl")):
            continue
        for number, line in enumerate((FIXTURES / chart / name).read_text(encoding="utf-8").splitlines(), 1):
            match = MARKER.search(line)
            if match:
                sets = frozenset(match.group(1).split(",")) if match.group(1) else None
                found.append(Marker(f"{chart}/{name}", number, sets, match.group(2), parse_path(match.group(3))))
    return found


def is_values(file: str) -> bool:
    return file.endswith("values.yaml")


def is_template(file: str) -> bool:
    return "/templates/" in file and not Path(file).name.startswith("_")


def selected(selector: str, data: dict[str, Any]) -> bool:
    kind, _, name = selector.partition("/")
    return (kind == "*" or data.get("kind") == kind) and (not name or data.get("metadata", {}).get("name") == name)


def measure() -> tuple[list[Sample], list[Marker]]:
    """Every marked field of every render of the fixture charts, where fieldwarden puts it."""
    samples: list[Sample] = []
    unused: list[Marker] = []
    sets_of = helm.find_charts(FIXTURES, files_below(FIXTURES))
    for chart in CHARTS:
        chart_markers = markers(chart)
        used: set[Marker] = set()
        for values in dict.fromkeys([(), *sets_of[chart]]):  # the mapping is measured on the bare defaults too
            name = set_name(values)
            render = helm.render_chart(FIXTURES, chart, list(values))
            assert not render.problems, messages(render)
            applicable = [m for m in chart_markers if m.sets is None or name in m.sets]
            applicable = [m for m in applicable if not is_values(m.file) or m.file in values or m.file.endswith("/values.yaml")]
            # in values files, the last file of the set that marks a field wins
            rank = {f: i for i, f in enumerate(values)}
            best: dict[tuple[str, tuple[str | int, ...]], Marker] = {}
            for m in applicable:
                if is_values(m.file):
                    key = (m.selector, m.path)
                    if key not in best or rank.get(m.file, -1) > rank.get(best[key].file, -1):
                        best[key] = m
            applicable = [m for m in applicable if not is_values(m.file) or best[(m.selector, m.path)] is m]
            for obj in render.objects:
                data = yaml.safe_load(obj.text)
                for m in applicable:
                    if not selected(m.selector, data) or not lookup(data, m.path):
                        continue
                    if is_template(m.file) and obj.anchor[0] != m.file:
                        continue
                    used.add(m)
                    place, exact = locate(obj, m.path)
                    samples.append(Sample(m, name, f"{data['kind']}/{data['metadata']['name']}", place, exact))
        unused.extend(m for m in chart_markers if m not in used)
    return samples, unused


def report(samples: list[Sample]) -> str:
    hits = sum(s.hit for s in samples)
    lines = [f"exact line: {hits}/{len(samples)} = {hits / len(samples):.1%}"]
    for s in samples:
        if not s.hit:
            how = "exact" if s.exact else "approximate"
            lines.append(f"  {s.value_set}: {s.obj} {s.marker.path} expected {s.marker.file}:{s.marker.line}, "
                         f"got {s.got[0]}:{s.got[1]} ({how})")
    return "\n".join(lines)


def test_exact_line_rate() -> None:
    samples, unused = measure()
    assert not unused, f"markers that match no rendered field: {unused}"
    wrong = [s for s in samples if s.exact and not s.hit]
    assert not wrong, "placed exactly, but on the wrong line:\n" + report(wrong)
    hits = sum(s.hit for s in samples)
    assert len(samples) >= 100
    assert hits / len(samples) >= 0.98, report(samples)  # 313 of 314 when written


def fields(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*path, key)
            yield from fields(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield (*path, index)
            yield from fields(value, (*path, index))


def test_a_chart_nobody_wrote_for_this() -> None:
    """helm/fieldwarden, the project's own chart: most fields placed exactly, and every exact
    place names its field (the key at that column, or an item of a list on that line)."""
    repo = FIXTURES.parents[2]
    render = helm.render_chart(repo, "helm/fieldwarden", [])
    assert not render.problems, messages(render)
    total = exact = 0
    for obj in render.objects:
        for path in fields(yaml.safe_load(obj.text)):
            total += 1
            (file, line, column), certain = locate(obj, path)
            if not certain:
                continue
            exact += 1
            text = (repo / file).read_text(encoding="utf-8").splitlines()[line - 1]
            last = path[-1]
            if isinstance(last, int):
                assert text[:column - 1].rstrip().endswith("-") or "[" in text, (path, file, line, text)
            else:
                assert text[column - 1:].startswith((last, f'"{last}"', f"'{last}'", "{{")) or "{" in text, (path, file, line, text)
    assert exact / total >= 0.95, (exact, total)


# -- discovery --------------------------------------------------------------------------------

def test_charts_and_their_value_sets() -> None:
    found = helm.find_charts(FIXTURES, files_below(FIXTURES))
    assert found == {
        "web": [("web/ci/ha-values.yaml",), ("web/ci/recreate-values.yaml",)],
        "platform": [("platform/ci/small-values.yaml",)],
        "legacy": [("legacy/ci/default-values.yaml",)],  # chart-testing's way to keep the defaults
        "operator": [("operator/ci/webhook-values.yaml",)],
    }  # platform/charts/cache is a subchart, platform/charts/common a library; ci/ sets replace the defaults


def test_ci_values_replace_the_bare_defaults_as_chart_testing_does() -> None:
    """`ct lint`: a chart with ci/*-values.yaml is linted with each of them, not with values.yaml
    alone, which sapcc's kube-fip-controller leaves without the `required` floating network."""
    repo = Path(__file__).resolve().parents[2] / "fixtures" / "repos" / "helm-chart"
    chart = "charts/kube-fip-controller"
    sets = helm.find_charts(repo, files_below(repo))[chart]
    assert sets == [(f"{chart}/ci/test-values.yaml",)]
    render = helm.render_chart(repo, chart, list(sets[0]))
    assert not render.problems, messages(render)
    deployment = one(render, "Deployment")[1]
    assert "--default-floating-network=floating-network" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    bare = helm.render_chart(repo, chart, [])  # what fieldwarden rendered before: Helm's own refusal
    assert "defaultFloatingNetworkName missing" in messages(bare)


def test_an_empty_values_file_is_empty_values_as_for_helm() -> None:
    """`---` and comments (ct's documented ci/default-values.yaml) is `{}` to Helm, not a refusal."""
    assert (FIXTURES / "legacy/ci/default-values.yaml").read_text().startswith("---\n#")
    empty = helm.render_chart(FIXTURES, "legacy", ["legacy/ci/default-values.yaml"])
    assert not empty.problems, messages(empty)
    assert [o.text for o in empty.objects] == [o.text for o in helm.render_chart(FIXTURES, "legacy", []).objects]


def test_extra_values_files_add_sets_to_every_chart(tmp_path: Path) -> None:
    write(tmp_path, {"Chart.yaml": "apiVersion: v2\nname: top\nversion: 1.0.0\n",
                     "deploy/app/Chart.yaml": "apiVersion: v2\nname: app\nversion: 1.0.0\n",
                     "deploy/app/ci/lint-values.yaml": "a: 1\n",
                     "deploy/app/ci/notes.yaml": "not a values set\n",
                     "deploy/lib/Chart.yaml": "apiVersion: v2\nname: lib\nversion: 1.0.0\ntype: library\n",
                     "deploy/broken/Chart.yaml": ": [\n"})
    found = helm.find_charts(tmp_path, files_below(tmp_path), ["env/prod.yaml"])
    assert found == {
        ".": [(), ("env/prod.yaml",)],
        "deploy/app": [("deploy/app/ci/lint-values.yaml",), ("env/prod.yaml",)],
        "deploy/broken": [(), ("env/prod.yaml",)],  # rendering it will say what is wrong
    }


def test_a_charts_folder_that_is_no_subchart_folder(tmp_path: Path) -> None:
    write(tmp_path, {"charts/a/Chart.yaml": "apiVersion: v2\nname: a\nversion: 1.0.0\n",
                     "charts/a/charts/b/Chart.yaml": "apiVersion: v2\nname: b\nversion: 1.0.0\n"})
    assert helm.find_charts(tmp_path, files_below(tmp_path)) == {"charts/a": [()]}


# -- rendering --------------------------------------------------------------------------------

def test_objects_inputs_and_anchors() -> None:
    render = helm.render_chart(FIXTURES, "platform", [])
    assert not render.problems, messages(render)
    kinds = sorted(yaml.safe_load(o.text)["kind"] for o in render.objects)
    assert kinds == ["ConfigMap", "ConfigMap", "CronJob", "Deployment", "Deployment", "NetworkPolicy",
                     "Service", "StatefulSet", "StatefulSet"]
    for name in ("platform/Chart.yaml", "platform/values.yaml", "platform/templates/_helpers.tpl",
                 "platform/templates/worker.yaml", "platform/files/app.properties", "platform/ci/small-values.yaml",
                 "platform/charts/cache/values.yaml", "platform/charts/cache/templates/statefulset.yaml",
                 "platform/charts/common/templates/_labels.tpl"):
        assert name in render.inputs
    # a template's documents: each object anchored at the first line of its own
    assert one(render, "ConfigMap", "release-name-config")[0].anchor == ("platform/templates/configmaps.yaml", 1, 1)
    assert one(render, "ConfigMap", "release-name-feature-flags")[0].anchor == ("platform/templates/configmaps.yaml", 16, 1)
    # documents a `range` writes: every one anchored on the document inside the range
    consumers = objects_of(render, "Deployment")
    assert [o.anchor for o, _ in consumers] == [("platform/templates/consumers.yaml", 3, 1)] * 2
    # a subchart's objects map into its own files
    cache, _ = one(render, "StatefulSet", "release-name-cache")
    assert cache.anchor == ("platform/charts/cache/templates/statefulset.yaml", 1, 1)
    assert locate(cache, ("spec", "serviceName")) == (("platform/charts/cache/templates/statefulset.yaml", 6, 3), True)


def test_values_files_apply_in_order_and_are_inputs(tmp_path: Path) -> None:
    write(tmp_path, {"chart/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n",
                     "chart/values.yaml": "a: 1\nb: {p: 1, q: 1}\n",
                     "chart/templates/cm.yaml": "kind: ConfigMap\ndata:\n  a: {{ .Values.a | quote }}\n  b: {{ toJson .Values.b | quote }}\n",
                     "one.yaml": "a: 2\nb: {p: 2}\n", "two.yaml": "b: {q: 3}\n"})
    render = helm.render_chart(tmp_path, "chart", ["one.yaml", "two.yaml"], "team-a")
    assert not render.problems, messages(render)
    assert yaml.safe_load(render.objects[0].text)["data"] == {"a": "2", "b": '{"p":2,"q":3}'}
    assert render.inputs == ["chart/Chart.yaml", "chart/templates/cm.yaml", "chart/values.yaml", "one.yaml", "two.yaml"]


def test_a_chart_at_the_project_root(tmp_path: Path) -> None:
    write(tmp_path, {"Chart.yaml": CHART, "values.yaml": "n: 2\n",
                     "templates/cm.yaml": "kind: ConfigMap\ndata:\n  n: {{ .Values.n | quote }}\n"})
    assert helm.find_charts(tmp_path, files_below(tmp_path)) == {".": [()]}
    for folder in (".", ""):
        render = helm.render_chart(tmp_path, folder, [])
        assert not render.problems and render.inputs == ["Chart.yaml", "templates/cm.yaml", "values.yaml"]
        assert locate(render.objects[0], ("data", "n")) == (("templates/cm.yaml", 3, 3), True)


def test_render_is_plain_data_for_the_cache() -> None:
    render = helm.render_chart(FIXTURES, "web", [])
    plain = ([(o.text, o.positions, o.anchor) for o in render.objects], render.inputs, [tuple(p) for p in render.problems])
    assert marshal.loads(marshal.dumps(plain)) == plain


def test_render_time() -> None:
    start = time.perf_counter()
    helm.render_chart(FIXTURES, "web", ["web/ci/ha-values.yaml"])
    assert time.perf_counter() - start < 5  # about 0.3 s: the child process's start is most of it


# -- problems, never tracebacks ---------------------------------------------------------------

CHART = "apiVersion: v2\nname: demo\nversion: 1.0.0\n"


def render_with(tmp_path: Path, files: dict[str, str], values: list[str] | None = None, **options: Any) -> Render:
    """The chart `demo` of a new project in tmp_path, rendered."""
    root = tmp_path / f"project{len(list(tmp_path.glob('project*')))}"
    if (tmp_path / "demo").is_dir():  # files the test put there itself
        (tmp_path / "demo").rename(root / "demo") if root.mkdir() is None else None
    write(root, {"demo/Chart.yaml": CHART, **files})
    return helm.render_chart(root, "demo", values or [], **options)


def places(render: Render) -> list[tuple[str, int, int]]:
    return [(p.file, p.line, p.column) for p in render.problems]


def test_template_errors_on_their_lines(tmp_path: Path) -> None:
    render = render_with(tmp_path, {"demo/templates/cm.yaml": "kind: ConfigMap\ndata:\n  a: {{ .Values.nope.deep }}\n"})
    assert places(render) == [("demo/templates/cm.yaml", 3, 15)] and "nil pointer" in render.problems[0].message
    render = render_with(tmp_path, {"demo/templates/cm.yaml": "kind: ConfigMap\n{{ if }}\n"})
    assert places(render) == [("demo/templates/cm.yaml", 2, 1)] and "missing value for if" in render.problems[0].message
    render = render_with(tmp_path, {"demo/templates/cm.yaml": 'kind: ConfigMap\nx: {{ required "x is required" .Values.x }}\n'})
    assert places(render) == [("demo/templates/cm.yaml", 2, 6)] and "x is required" in render.problems[0].message


def test_an_error_inside_a_helper_is_placed_in_the_helper(tmp_path: Path) -> None:
    render = render_with(tmp_path, {
        "demo/templates/_helpers.tpl": '{{- define "demo.name" -}}\n{{ .Values.name.first }}\n{{- end }}\n',
        "demo/templates/cm.yaml": 'kind: ConfigMap\nmetadata:\n  name: {{ include "demo.name" . }}\n'})
    assert places(render) == [("demo/templates/_helpers.tpl", 2, 10)]


def test_bad_charts_and_values(tmp_path: Path) -> None:
    assert places(helm.render_chart(tmp_path, "nowhere", [])) == [("nowhere/Chart.yaml", 1, 1)]
    render = render_with(tmp_path, {"demo/Chart.yaml": "apiVersion: v2\nname: [demo\n"})
    assert places(render)[0][:2] == ("demo/Chart.yaml", 3) and "YAML" in render.problems[0].message
    render = render_with(tmp_path, {"demo/Chart.yaml": "apiVersion: v2\nversion: 1.0.0\n"})
    assert places(render) == [("demo/Chart.yaml", 1, 1)] and "name is required" in render.problems[0].message
    render = render_with(tmp_path, {"demo/values.yaml": "a: 1\nb: [\n"})
    assert places(render)[0][:2] == ("demo/values.yaml", 3)
    render = render_with(tmp_path, {"extra.yaml": "- a list\n"}, ["extra.yaml"])
    assert places(render) == [("extra.yaml", 1, 1)] and "mapping" in render.problems[0].message
    render = render_with(tmp_path, {}, ["missing.yaml"])
    assert places(render) == [("missing.yaml", 1, 1)] and "cannot read" in render.problems[0].message
    render = render_with(tmp_path, {"demo/Chart.yaml": CHART + "type: library\n"})
    assert not render.objects and "library" in render.problems[0].message
    render = render_with(tmp_path, {"demo/values.schema.json": '{"properties": {"replicas": {"type": "integer"}}}',
                                    "demo/values.yaml": "replicas: 1\n", "prod.yaml": "\n\nreplicas: many\n"}, ["prod.yaml"])
    assert places(render) == [("prod.yaml", 3, 1)] and "schema" in render.problems[0].message


def test_template_that_renders_broken_yaml(tmp_path: Path) -> None:
    render = render_with(tmp_path, {"demo/templates/cm.yaml": "kind: ConfigMap\ndata: {{ .Values.x }}\n  b: 1\n",
                                    "demo/values.yaml": "x: a\n"})
    assert places(render) == [("demo/templates/cm.yaml", 1, 1)] and "invalid YAML" in render.problems[0].message


def test_missing_dependencies_are_said_and_the_rest_renders(tmp_path: Path) -> None:
    chart = CHART + "dependencies:\n  - name: postgresql\n    version: 15.x.x\n    repository: oci://registry-1.docker.io/bitnamicharts\n"
    render = render_with(tmp_path, {"demo/Chart.yaml": chart, "demo/templates/cm.yaml": "kind: ConfigMap\n"})
    assert render.problems == [] and len(render.objects) == 1  # what rendered is linted; no FW006
    why = render.not_linted
    assert why is not None and (why.file, why.line) == ("demo/Chart.yaml", 5)
    assert why.message() == (
        "not linted: the chart's dependencies are not built (postgresql not in charts/), so their objects are not "
        "linted; run `helm dependency build` on the chart before linting, or lint with --allow-network to let "
        "fieldwarden build them")


# bitnami/charts bitnami/nginx: the `common` library chart is a dependency, fetched by `helm dependency
# build`; its helpers name every object, so without it the chart does not render at all.
BITNAMI_CHART = CHART + """dependencies:
- name: common
  repository: oci://registry-1.docker.io/bitnamicharts
  tags:
  - bitnami-common
  version: 2.x.x
"""
BITNAMI_SERVICE = """apiVersion: v1
kind: Service
metadata:
  name: {{ include "common.names.fullname" . }}
spec:
  ports:
    - port: 80
"""


def test_a_chart_whose_dependencies_are_not_built_is_not_linted_not_failed(tmp_path: Path) -> None:
    render = render_with(tmp_path, {"demo/Chart.yaml": BITNAMI_CHART, "demo/templates/svc.yaml": BITNAMI_SERVICE})
    assert render.objects == [] and render.problems == []  # Helm's `no template "common.names.fullname"` is no FW006
    assert render.not_linted is not None
    assert (render.not_linted.file, render.not_linted.line) == ("demo/Chart.yaml", 5)  # `- name: common`
    assert render.not_linted.message() == (
        "not linted: the chart's dependencies are not built (common not in charts/), and it does not render without "
        "them; run `helm dependency build` on the chart before linting, or lint with --allow-network to let "
        "fieldwarden build them")


def test_a_template_error_with_dependencies_built_stays_render_failed(tmp_path: Path) -> None:
    broken = BITNAMI_SERVICE.replace('include "common.names.fullname" .', 'required "name please" .Values.name')
    render = render_with(tmp_path, {"demo/Chart.yaml": CHART, "demo/templates/svc.yaml": broken})
    assert render.not_linted is None and places(render) == [("demo/templates/svc.yaml", 4, 11)]


def test_a_chart_with_dependencies_not_built_fails_no_gate_for_them(tmp_path: Path) -> None:
    from tests.helpers import git_repo, lint

    repo = git_repo(tmp_path / "repo", {"charts/nginx/Chart.yaml": BITNAMI_CHART,
                                        "charts/nginx/templates/svc.yaml": BITNAMI_SERVICE})
    run = lint([], cwd=repo)
    assert [(f["file"], f["line"], f["code"]) for f in run.findings] == [("charts/nginx/Chart.yaml", 5, "FW007")]
    assert run.code == 1 and "helm dependency build" in run.findings[0]["message"]


def archive(files: dict[str, str], extra: list[tarfile.TarInfo] = ()) -> bytes:  # type: ignore[assignment]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return buffer.getvalue()


def test_archived_subcharts_render_and_point_at_their_dependency(tmp_path: Path) -> None:
    link = tarfile.TarInfo("redis/templates/evil.yaml")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/hostname"
    escape = {"../../escaped.yaml": "kind: Secret\n"}
    data = archive({"redis/Chart.yaml": "apiVersion: v2\nname: redis\nversion: 17.0.0\n",
                    "redis/templates/svc.yaml": "kind: Service\nmetadata:\n  name: {{ .Release.Name }}-redis\n", **escape}, [link])
    (tmp_path / "demo/charts").mkdir(parents=True)
    (tmp_path / "demo/charts/redis-17.0.0.tgz").write_bytes(data)
    render = render_with(tmp_path, {"demo/Chart.yaml": CHART + "dependencies:\n  - name: redis\n    version: 17.0.0\n"})
    assert not render.problems, messages(render)
    (obj, svc), = objects_of(render, "Service")
    assert svc["metadata"]["name"] == "release-name-redis"
    assert obj.anchor == ("demo/Chart.yaml", 5, 11) and locate(obj, ("metadata", "name")) == (obj.anchor, False)
    assert "demo/charts/redis-17.0.0.tgz" in render.inputs
    assert not (tmp_path / "escaped.yaml").exists()


def test_the_extra_is_named_when_helm_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "helm_python" else real(name, *a))
    render = render_with(tmp_path, {"demo/templates/cm.yaml": "kind: ConfigMap\n"})
    assert places(render) == [("demo/Chart.yaml", 1, 1)] and "fieldwarden[render]" in render.problems[0].message


# -- confinement ------------------------------------------------------------------------------

def test_templates_cannot_reach_outside_the_chart(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET", encoding="utf-8")
    (tmp_path / "demo/files").mkdir(parents=True)
    os.symlink(secret, tmp_path / "demo/files/linked.txt")
    os.symlink(tmp_path, tmp_path / "demo/files/project")
    render = render_with(tmp_path, {
        "demo/files/own.txt": "mine",
        "demo/templates/cm.yaml": "\n".join([
            "kind: ConfigMap",
            "data:",
            '  own: {{ .Files.Get "files/own.txt" | quote }}',
            '  linked: {{ .Files.Get "files/linked.txt" | quote }}',
            '  through: {{ .Files.Get "files/project/secret.txt" | quote }}',
            '  up: {{ .Files.Get "../secret.txt" | quote }}',
            '  absolute: {{ .Files.Get "' + secret.as_posix() + '" | quote }}',
            '  glob: {{ .Files.Glob "../*" | len | quote }}',
            '  dns: {{ getHostByName "localhost" | quote }}',
            '  lookup: {{ lookup "v1" "Secret" "default" "x" | len | quote }}',
            ""])})
    assert sorted(places(render)) == [("demo/files/linked.txt", 1, 1), ("demo/files/project", 1, 1)]
    assert "TOP-SECRET" not in repr(render)
    data = yaml.safe_load(render.objects[0].text)["data"]
    assert data == {"own": "mine", "linked": "", "through": "", "up": "", "absolute": "", "glob": "0", "dns": "", "lookup": "0"}
    for function in ("env", "expandenv"):
        render = render_with(tmp_path, {"demo/templates/cm.yaml": f'kind: ConfigMap\nx: {{{{ {function} "HOME" }}}}\n'})
        assert f'function "{function}" not defined' in render.problems[-1].message


def test_values_and_charts_outside_the_project_are_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kubeconfig").write_text("token: TOP-SECRET\n", encoding="utf-8")
    project = tmp_path / "project"
    write(project, {"demo/Chart.yaml": CHART, "demo/templates/cm.yaml": "kind: ConfigMap\ndata: {{ toYaml .Values | nindent 2 }}\n"})
    (project / "demo/ci").mkdir()
    os.symlink(outside / "kubeconfig", project / "demo/ci/evil-values.yaml")
    assert helm.find_charts(project, files_below(project))["demo"] == [("demo/ci/evil-values.yaml",)]
    for values in (["demo/ci/evil-values.yaml"], ["../outside/kubeconfig"]):
        render = helm.render_chart(project, "demo", values)
        assert [p.line for p in render.problems if p.file == values[0] and "outside the project" in p.message] == [1]
        assert "TOP-SECRET" not in repr(render)
    write(outside, {"chart/Chart.yaml": CHART})
    os.symlink(outside / "chart", project / "linked")
    render = helm.render_chart(project, "linked", [])
    assert places(render) == [("linked/Chart.yaml", 1, 1)] and not render.inputs


def test_schema_references_are_not_fetched(tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "string"}', encoding="utf-8")
    schema = '{"properties": {"replicas": {"$ref": "' + secret.as_uri() + '"}}}'
    render = render_with(tmp_path, {"demo/values.schema.json": schema, "demo/values.yaml": "replicas: 1\n",
                                    "demo/templates/cm.yaml": "kind: ConfigMap\n"})
    # Helm would load the file (and a string schema would reject 1); the copy it renders has no schema
    assert places(render) == [("demo/values.schema.json", 1, 1)] and secret.as_uri() in render.problems[0].message
    assert len(render.objects) == 1


def test_the_child_runs_isolated_from_the_project(tmp_path: Path) -> None:
    """A chart (or repository) holding `helm_python.py` or `fieldwarden/` cannot plant code in the render."""
    planted = tmp_path / "planted"
    render = render_with(tmp_path, {"demo/helm_python.py": f"open({str(planted)!r}, 'w')\n",
                                    "helm_python.py": f"open({str(planted)!r}, 'w')\n",
                                    "demo/templates/cm.yaml": "kind: ConfigMap\n"})
    assert not render.problems and not planted.exists()


def test_time_and_memory_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loop = "{{ range until 50000 }}{{ range until 50000 }}{{ end }}{{ end }}"  # long, in little memory
    start = time.perf_counter()
    render = render_with(tmp_path, {"demo/templates/cm.yaml": loop}, timeout=2)
    assert time.perf_counter() - start < 10
    assert places(render) == [("demo/Chart.yaml", 1, 1)] and "longer than 2 s" in render.problems[0].message
    assert render.passing and not render_cache.lasting(render)  # this run's limit: made again next run
    monkeypatch.setattr(helm, "MEMORY", 400 << 20)
    growing = "{{ $s := list }}{{ range until 100000000 }}{{ $s = append $s (randAlphaNum 64) }}{{ end }}"
    render = render_with(tmp_path, {"demo/templates/cm.yaml": growing})
    assert "memory" in render.problems[0].message, messages(render)
    assert render.passing and not render_cache.lasting(render)
    monkeypatch.setattr(helm, "MAX_OUTPUT", 1 << 20)
    render = render_with(tmp_path, {"demo/templates/cm.yaml": "{{ range until 200000 }}a: 123456789\n{{ end }}"})
    assert "more than 1 MiB" in render.problems[0].message
    assert not render.passing and render_cache.lasting(render)  # the child's own limit on the chart's output: the same each run



def test_a_child_stopped_by_the_memory_limit_says_memory_however_go_words_it() -> None:
    """Under the data limit Go dies with "out of memory", or, when the stack of a new thread is what
    the limit refuses, with "pthread_create failed" (seen in CI, not reproducible on demand)."""
    for dying in ("fatal error: runtime: out of memory\n",
                  "runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n"):
        assert "more than" in helm._died(dying, 2)["error"] and "memory" in helm._died(dying, 2)["error"]
    assert helm._died("panic: something else\n", 2)["error"] == "the rendering process failed: panic: something else"
    assert helm._died("panic: something else\n", 2)["passing"] is True


def test_a_child_that_cannot_start_is_a_passing_render_and_a_charts_own_words_are_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The render cache keeps what the next run repeats: Helm's limits and a child that cannot start are
    flagged (Render.passing), a template's own `fail` worded like a limit is kept."""
    worded = render_with(tmp_path, {"demo/templates/cm.yaml": '{{ fail "quota was used up and was stopped" }}'})
    assert "quota was used up and was stopped" in worded.problems[0].message
    assert not worded.passing and render_cache.lasting(worded)

    def refused(memory: int) -> Any:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(helm.helm_pool, "take", refused)
    render = render_with(tmp_path, {"demo/templates/cm.yaml": "kind: ConfigMap\n"})
    assert places(render) == [("demo/Chart.yaml", 1, 1)]
    assert render.problems[0].message.endswith("cannot start the rendering process: Resource temporarily unavailable")
    assert render.passing and not render_cache.lasting(render)

# -- YAML comments on template lines ------------------------------------------------------------

LABELS_HELPER = '{{- define "demo.labels" -}}\napp: web\ntier: api\n{{- end }}\n'


def place(render: Render, path: tuple[str | int, ...], kind: str = "Thing", name: str | None = None) -> tuple[tuple[str, int, int], bool]:
    obj, _ = one(render, kind, name)
    return locate(obj, path)


def render_template(tmp_path: Path, template: str, values: str, helpers: str = LABELS_HELPER,
                    name: str = "thing.yaml") -> Render:
    """The chart `demo` with the template `name`, `helpers` as _helpers.tpl and values.yaml, rendered without problems."""
    render = render_with(tmp_path, {"demo/templates/_helpers.tpl": helpers, "demo/values.yaml": values,
                                    f"demo/templates/{name}": template})
    assert not render.problems, messages(render)
    return render


def test_a_comment_after_a_splice_leaves_it_a_splice(tmp_path: Path) -> None:
    """What `include`, `tpl` and `toYaml` splice in maps to the helper or values line, comment or not."""
    template = "\n".join([
        "kind: Thing",
        "metadata:",
        "  name: demo",
        "  labels:",
        '    {{- include "demo.labels" . | nindent 4 }}  # the usual labels',
        "  annotations:",
        "    {{- tpl (toYaml .Values.annotations) $ | nindent 4 }}  # templated",
        "spec:",
        "  items:",
        "  {{- with .Values.first }}",
        "  - {{ toYaml . | nindent 4 }} # c",
        "  {{- end }}",
        "  after: 1",
        ""])
    values = "annotations:\n  owner: '{{ .Release.Name }}'\nfirst:\n  size: 3\n"
    render = render_template(tmp_path, template, values)
    assert place(render, ("metadata", "labels", "app")) == (("demo/templates/_helpers.tpl", 2, 1), True)
    assert place(render, ("metadata", "labels", "tier")) == (("demo/templates/_helpers.tpl", 3, 1), True)
    assert place(render, ("metadata", "annotations", "owner")) == (("demo/values.yaml", 2, 3), True)
    assert place(render, ("spec", "items", 0, "size")) == (("demo/values.yaml", 4, 3), True)
    assert place(render, ("spec", "after")) == (("demo/templates/thing.yaml", 13, 3), True)


def test_a_commented_splice_document_is_not_mistaken_for_the_next_one(tmp_path: Path) -> None:
    """Objects spliced in a `range` (extraDeploy) never claim the literal lines of the template's other document."""
    template = "\n".join([
        "{{- range .Values.extra }}",
        "---",
        '{{ include "demo.render" (dict "value" . "context" $) }}  # one object per item',
        "{{- end }}",
        "---",
        "apiVersion: v1",
        "kind: Thing",
        "metadata:",
        "  name: fixed",
        ""])
    helper = '{{- define "demo.render" -}}\n{{ tpl (toYaml .value) .context }}\n{{- end }}\n'
    values = "extra:\n  - apiVersion: v1\n    kind: Thing\n    metadata:\n      name: extra\n"
    render = render_template(tmp_path, template, values, helper, name="extra.yaml")
    assert place(render, ("metadata", "name"), name="fixed") == (("demo/templates/extra.yaml", 9, 3), True)
    for path in (("kind",), ("metadata", "name")):  # what the helper makes of `.`: not known, so on the splice
        assert place(render, path, name="extra") == (("demo/templates/extra.yaml", 3, 1), False)


def test_a_hash_in_quotes_or_in_an_action_is_no_comment(tmp_path: Path) -> None:
    template = "\n".join([
        "kind: Thing",
        "metadata:",
        "  name: demo",
        "  labels:",
        '    {{- include "demo.labels" (dict "note" "# not a comment") | nindent 4 }}',
        "data:",
        '  double: "a # b"',
        "  single: 'it''s # here'",
        '  action: {{ printf "%s #%d" "a" 1 | quote }} # a comment',
        '  flow: ["x # y", z]',
        "  url: http://example.com/#anchor",
        "  glued: {{ .Values.count -}}  # glued to the output, no comment",
        "  mode: fast",
        ""])
    render = render_template(tmp_path, template, "count: 1\n")
    obj, data = one(render, "Thing")
    assert data["data"] == {"double": "a # b", "single": "it's # here", "action": "a #1", "flow": ["x # y", "z"],
                            "url": "http://example.com/#anchor", "glued": "1# glued to the output, no comment",
                            "mode": "fast"}
    assert locate(obj, ("metadata", "labels", "tier")) == (("demo/templates/_helpers.tpl", 3, 1), True)
    for line, key in enumerate(data["data"], 7):
        assert locate(obj, ("data", key)) == (("demo/templates/thing.yaml", line, 3), True), key
    assert locate(obj, ("data", "flow", 0)) == (("demo/templates/thing.yaml", 10, 3), True)


def test_a_comment_after_a_literal_value(tmp_path: Path) -> None:
    """Literal values with a comment still tell `if`/`else` branches and list items apart."""
    template = "\n".join([
        "kind: Thing",
        "metadata:",
        "  name: demo  # the name",
        "spec:",
        "  {{- if gt (len .Values.zones) 1 }}",
        "  replicas: 3  # one per zone",
        "  {{- else }}",
        "  replicas: 1  # a single zone",
        "  {{- end }}",
        "  ports:",
        "  {{- if .Values.metrics }}",
        "  - metrics  # scraped",
        "  {{- end }}",
        "  - http # served",
        ""])
    for zones, replicas_line in (("[a, b]", 6), ("[a]", 8)):
        render = render_template(tmp_path, template, f"zones: {zones}\nmetrics: false\n")
        assert place(render, ("metadata", "name")) == (("demo/templates/thing.yaml", 3, 3), True)
        assert place(render, ("spec", "replicas")) == (("demo/templates/thing.yaml", replicas_line, 3), True)
        assert place(render, ("spec", "ports", 0)) == (("demo/templates/thing.yaml", 14, 5), True)



def test_value_sets_of_a_chart_render_together_and_one_failing_costs_only_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """render_chart_sets: one Render per set, in order; a set that loops or runs out of memory is
    stopped, and the sets after it are rendered by a new child as if it had not been there."""
    looping = "{{ if .Values.loop }}{{ range until 50000 }}{{ range until 50000 }}{{ end }}{{ end }}{{ end }}"
    growing = ("{{ if .Values.grow }}{{ $s := list }}{{ range until 100000000 }}{{ $s = append $s (randAlphaNum 64) }}"
               "{{ end }}{{ end }}")
    write(tmp_path, {"demo/Chart.yaml": CHART, "demo/values.yaml": "count: 0\n",
                     "demo/templates/cm.yaml": f"{looping}{growing}kind: ConfigMap\nmetadata:\n  name: {{{{ .Release.Name }}}}\n"
                                               "data:\n  count: {{ .Values.count | quote }}\n",
                     "one.yaml": "count: 1\n", "loop.yaml": "loop: true\n", "grow.yaml": "grow: true\n",
                     "three.yaml": "count: 3\n", "broken.yaml": "count: [\n"})
    first_set, third_set = helm.ValueSet(("one.yaml",), "a", "first"), helm.ValueSet(("three.yaml",), "", "third")

    def rendered_fine(render: Render, release: str, count: str) -> bool:
        return not render.problems and [yaml.safe_load(o.text) for o in render.objects] == [
            {"kind": "ConfigMap", "metadata": {"name": release}, "data": {"count": count}}]

    start = time.perf_counter()
    first, looped, broken, third = helm.render_chart_sets(
        tmp_path, "demo", [first_set, helm.ValueSet(("loop.yaml",)), helm.ValueSet(("broken.yaml",)), third_set], timeout=3)
    assert time.perf_counter() - start < 20
    assert rendered_fine(first, "first", "1") and rendered_fine(third, "third", "3"), messages(first) + messages(third)
    assert not looped.objects and "longer than 3 s" in messages(looped)
    assert not broken.objects and places(broken)[0][0] == "broken.yaml"
    assert first.inputs[-1] == "one.yaml" and third.inputs[-1] == "three.yaml"
    monkeypatch.setattr(helm, "MEMORY", 400 << 20)  # the limit is met in ~0.5 s rather than ~1 s
    first, grown, third = helm.render_chart_sets(tmp_path, "demo", [first_set, helm.ValueSet(("grow.yaml",)), third_set])
    assert rendered_fine(first, "first", "1") and rendered_fine(third, "third", "3"), messages(first) + messages(third)
    assert not grown.objects and "memory" in messages(grown), messages(grown)

if __name__ == "__main__":
    found, _ = measure()
    print(report(found))


# -- dependencies built with --allow-network (helm_fetch.py) ----------------------------------------------
# argoproj/argo-cd 37ee009 applicationset/examples/git-generator-directory/cluster-addons/prometheus-operator:
# a chart that is only a dependency in requirements.yaml (tests/fixtures/repos/argocd-addons). Its repository
# is replaced by one on 127.0.0.1 serving an index.yaml and a packaged kube-prometheus-stack made here, whose
# Deployment has no selector (FW101).

ADDONS = Path(__file__).resolve().parents[2] / "fixtures" / "repos" / "argocd-addons" / "cluster-addons"
NO_SELECTOR = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: operator\nspec:\n  template:\n    spec:\n" \
              "      containers:\n      - name: operator\n        image: quay.io/prometheus-operator/operator:v0.60.0\n"


@pytest.fixture()
def chart_repository(tmp_path: Path) -> Iterator[str]:
    """A chart repository on 127.0.0.1 (a tiny HTTP server) holding kube-prometheus-stack 40.5.0."""
    import functools
    import http.server
    import threading

    import helm_python

    source = write(tmp_path / "src", {"kube-prometheus-stack/Chart.yaml": "apiVersion: v2\nname: kube-prometheus-stack\n"
                                                                          "version: 40.5.0\n",
                                      "kube-prometheus-stack/templates/operator.yaml": NO_SELECTOR})
    served = tmp_path / "served"
    served.mkdir()
    helm_python.package(source / "kube-prometheus-stack", destination=served)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    helm_python.repo_index_generate(served, base_url=url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url
    finally:
        server.shutdown()
        thread.join(10)


def test_allow_network_builds_dependencies_that_are_not_vendored(tmp_path: Path, chart_repository: str) -> None:
    from tests.helpers import git_repo, lint

    chart = "cluster-addons/prometheus-operator"
    files = {f"{chart}/{p.name}": p.read_text() for p in (ADDONS / "prometheus-operator").iterdir()}
    files[f"{chart}/requirements.yaml"] = files[f"{chart}/requirements.yaml"].replace(
        "https://prometheus-community.github.io/helm-charts", chart_repository)
    repo = git_repo(tmp_path / "repo", files)
    offline = lint([], cwd=repo)
    assert [(f["file"], f["line"], f["code"]) for f in offline.findings] == [(f"{chart}/requirements.yaml", 2, "FW007")]
    assert offline.code == 1 and "--allow-network" in offline.findings[0]["message"]
    started = time.monotonic()
    online = lint(["--allow-network"], cwd=repo)
    assert time.monotonic() - started < 60
    assert [(f["file"], f["line"], f["code"]) for f in online.findings] == [  # on the dependency's entry
        (f"{chart}/requirements.yaml", 2, "FW101"), (f"{chart}/requirements.yaml", 2, "FW201")]
    assert online.code == 1 and "Deployment/default/operator" in online.findings[0]["object"]
    assert sorted(p.name for p in (repo / chart).iterdir()) == ["Chart.yaml", "requirements.yaml", "values.yaml"]


def test_a_dependency_build_that_fails_is_not_linted_and_says_why(tmp_path: Path) -> None:
    chart = CHART + "dependencies:\n- name: common\n  version: 1.0.0\n  repository: http://127.0.0.1:9\n"
    write(tmp_path, {"demo/Chart.yaml": chart, "demo/templates/cm.yaml": "kind: ConfigMap\n"})
    [render] = helm.render_chart_sets(tmp_path, "demo", [helm.ValueSet()], network=True)
    assert render.problems == [] and len(render.objects) == 1 and render.not_linted is not None
    assert render.not_linted.message().startswith(
        "not linted: the chart's dependencies could not be built (`helm dependency build` failed: ")
    assert render.not_linted.message().endswith(
        "so their objects are not linted; check this run's network access and the dependencies' repositories, "
        "or run `helm dependency build` first")
