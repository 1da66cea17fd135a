"""linter/units/helm.py on a chart written by an attacker: no reads outside the chart, no connections,
bounded archives, bounded time (issue 20, items 4-6)."""

from __future__ import annotations

import gzip
import http.server
import io
import json
import os
import resource
import socketserver
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from fieldwarden.linter.units import helm, helm_archive, helm_schema
from fieldwarden.linter.units.rendered import Render

CHART = "apiVersion: v2\nname: demo\nversion: 1.0.0\n"


def chart(root: Path, files: dict[str, bytes | str]) -> Path:
    for name, content in {"demo/Chart.yaml": CHART, "demo/templates/cm.yaml": "kind: ConfigMap\n", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def problems(render: Render) -> list[tuple[str, int, int, str]]:
    return [(p.file, p.line, p.column, p.message) for p in render.problems]


# -- item 4: values.schema.json ---------------------------------------------------------------

class Listener(socketserver.ThreadingTCPServer):
    """A loopback HTTP server that counts the connections it accepts (and would serve a schema)."""

    daemon_threads = True

    def __init__(self) -> None:
        self.connections = 0
        super().__init__(("127.0.0.1", 0), Handler)

    def verify_request(self, request: object, client_address: object) -> bool:
        self.connections += 1
        return True


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b'{"type": "object"}'  # a schema that rejects the chart's values: a fetch would show as an error
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def outside_fifo(tmp_path: Path) -> Path:
    """A file outside the chart that Helm cannot read without the render hanging: a FIFO nobody writes."""
    fifo = tmp_path / "outside.json"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize("variant", ["invalid-utf8", "id-in-examples", "relative-ref", "unknown-meta-schema",
                                     "duplicate-key", "id-in-unknown-keyword"])
def test_a_schema_that_is_not_provably_self_contained_is_not_used(
        tmp_path: Path, listener: Listener, variant: str) -> None:
    url = f"http://127.0.0.1:{listener.server_address[1]}/meta.json"
    fifo = outside_fifo(tmp_path)
    refs = f'"properties": {{"a": {{"$ref": "{url}"}}, "b": {{"$ref": "{fifo.as_uri()}"}}}}'
    schema = {
        "invalid-utf8": b'{"description": "caf\xe9", ' + refs.encode() + b"}",
        "id-in-examples": f'{{"examples": [{{"$id": "{url}"}}, {{"$id": "{fifo.as_uri()}"}}], {refs}}}'.encode(),
        "relative-ref": b'{"properties": {"a": {"$ref": "../../' + os.fsencode(fifo).lstrip(b"/") + b'"}}}',
        "unknown-meta-schema": f'{{"$schema": "{url}", "properties": {{"a": {{"type": "integer"}}}}}}'.encode(),
        "duplicate-key": f'{{"properties": {{"a": {{"$ref": "#/$defs/x", "$ref": "{url}"}}}}, "$defs": {{"x": {{}}}}}}'.encode(),
        "id-in-unknown-keyword": f'{{"x-extra": {{"$id": "{url}"}}, "properties": {{"a": {{"$ref": "#/x-extra"}}}}}}'.encode(),
    }[variant]
    root = chart(tmp_path / "project", {"demo/values.schema.json": schema, "demo/values.yaml": "a: 1\nb: 1\n"})
    render = helm.render_chart(root, "demo", [], timeout=20)
    assert listener.connections == 0
    # reading the FIFO would have hung the render until its time limit; the schema was simply left out
    assert len(render.objects) == 1, problems(render)
    (file, line, column, message), = problems(render)
    assert (file, line, column) == ("demo/values.schema.json", 1, 1)
    assert "values.schema.json not used" in message and "not checked" in message


def test_a_self_contained_schema_is_used_as_written(tmp_path: Path, listener: Listener) -> None:
    """Fragment references, a root $id, an embedded resource, the built-in meta-schemas: Helm
    validates with the schema, and nothing is fetched (the $ids name a listening server)."""
    url = f"http://127.0.0.1:{listener.server_address[1]}/meta.json"
    schema = ('{"$schema": "http://json-schema.org/schema#", "$id": "' + url + '", '
              '"properties": {"replicas": {"$ref": "#/$defs/count"}, "name": {"$anchor": "nm", "type": "string"}, "alias": {"$ref": "#nm"}, '
              '"sub": {"$id": "' + url + '/sub", "properties": {"count": {"$ref": "#/$defs/c"}}, "$defs": {"c": {"type": "integer"}}}, '
              '"c": {"description": "caf\u00e9 \\u00e9"}}, '
              '"examples": [{"replicas": 2, "id": "x"}], "$defs": {"count": {"type": "integer", "minimum": 1}}}')
    root = chart(tmp_path / "good", {"demo/values.schema.json": schema, "demo/values.yaml": "replicas: 1\nname: x\nsub: {count: 1}\n",
                                     "bad.yaml": "replicas: 0\n", "bad-sub.yaml": "sub: {count: x}\n"})
    assert not helm.render_chart(root, "demo", []).problems
    render = helm.render_chart(root, "demo", ["bad.yaml"])
    assert [p[:3] for p in problems(render)] == [("bad.yaml", 1, 1)] and "minimum" in render.problems[0].message
    render = helm.render_chart(root, "demo", ["bad-sub.yaml"])
    assert [p[:3] for p in problems(render)] == [("bad-sub.yaml", 1, 7)] and "integer" in render.problems[0].message
    assert listener.connections == 0


def test_the_screen_reads_what_go_reads() -> None:
    """Each way Python and Go could read a schema differently is refused, with the reason."""
    refused = {
        b'{"a": "\xff"}': "not UTF-8",
        b'\xef\xbb\xbf{}': "not valid JSON",
        b'{"a": NaN}': "NaN",
        b'{"a": 1, "a": 2}': "twice",
        b'{"\\ud800": {}}': "surrogate",
        b'{"$ref": {"x": 1}}': "leads outside",
        b'{"items": [{"$dynamicRef": "https://x/y#meta"}]}': "leads outside",
        b'{"$schema": "http://json-schema.org/draft-03/schema#"}': "meta-schema",
        b'{"$schema": "http://json-schema.org/draft-04/schema#", "default": {"id": "other.json"}}': "where no schema",
        b'{"const": {"$id": "https://x/y"}}': "where no schema",
        b"[" * 300 + b"]" * 300: "nested too deeply",
    }
    for data, reason in refused.items():
        with pytest.raises(helm_schema.Unsafe, match=reason):
            helm_schema.screen(data)
    assert helm_schema.screen(b'{"$id": "https://example.com/s.json", "description": "\xc3\xa9"}') == \
        b'{"$id": "https://example.com/s.json", "description": "\\u00e9"}'
    assert helm_schema.screen(b'{"examples": [{"id": "not draft 4"}], "default": {"$ref": "#"}}')
    embedded = b'{"properties": {"config": {"$id": "https://x/c.json", "properties": {"a": {"$ref": "#/$defs/a"}}}}}'
    assert helm_schema.screen(embedded)  # an embedded resource, as the project's own chart has one


# -- item 5: subchart archives ----------------------------------------------------------------

CHUNK = 16 << 20


def repeated(unit: bytes, total: int) -> bytes:
    """gzip members that unpack to `unit` repeated up to `total` bytes, made cheaply (one chunk compressed)."""
    chunk = unit * (CHUNK // len(unit))
    return gzip.compress(chunk, compresslevel=9) * (total // len(chunk))


def header(name: str, size: int, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=tarfile.GNU_FORMAT)


BOMBS = {
    # a member of 4 GiB of zeros: its size is in its header
    "huge-member": lambda: gzip.compress(header("redis/templates/big.yaml", 4 << 30)) + repeated(b"\0", 4 << 30),
    # 4 GiB of a member type tar does not know, whose content is skipped unread
    "huge-skipped-member": lambda: gzip.compress(header("redis/x", 4 << 30, b"Z")) + repeated(b"\0", 4 << 30),
    # 2 million empty files (1 GiB of headers)
    "many-members": lambda: repeated(header("redis/templates/empty.yaml", 0), 1 << 30),
    # a GNU long name of 4 GiB
    "long-name": lambda: gzip.compress(header("././@LongLink", 4 << 30, tarfile.GNUTYPE_LONGNAME)) + repeated(b"a", 4 << 30),
    # pax headers: one of 4 GiB
    "huge-pax-header": lambda: gzip.compress(header("./PaxHeaders/x", 4 << 30, tarfile.XHDTYPE)) + repeated(b"9", 4 << 30),
    # a name of 2,000 characters (fits the pax header)
    "long-member-name": lambda: gzip.compress(tar_of({"redis/" + "a/" * 1000 + "x.yaml": b"kind: ConfigMap\n"})),
}
REASONS = {"huge-member": "larger than 5 MiB", "huge-skipped-member": "too many bytes", "many-members": "too many members",
           "long-name": "extended header", "huge-pax-header": "extended header", "long-member-name": "longer than"}


def tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


LINT = """
import json, sys
from pathlib import Path
from fieldwarden.linter.units import helm
render = helm.render_chart(Path(sys.argv[1]), "demo", [])
print(json.dumps([[p.file, p.line, p.column, p.message] for p in render.problems]))
"""


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_a_crafted_subchart_archive_is_refused_quickly_in_little_memory(tmp_path: Path, bomb: str) -> None:
    root = chart(tmp_path, {"demo/Chart.yaml": CHART + "dependencies:\n  - name: redis\n    version: 1.0.0\n",
                            "demo/charts/redis-1.0.0.tgz": BOMBS[bomb]()})
    limit = 1 << 30  # the linter's process may not grow past it (a render child sets its own limit)

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    start = time.perf_counter()
    with open(tmp_path / "out", "w+b") as out, open(tmp_path / "err", "w+b") as err:
        child = subprocess.Popen([sys.executable, "-c", LINT, str(root)], stdout=out, stderr=err, preexec_fn=bounded)
        stopper = threading.Timer(120, child.kill)
        stopper.start()
        _, status, usage = os.wait4(child.pid, 0)  # this lint's own usage (and its render child's)
        stopper.cancel()
        child.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - start
        assert child.returncode == 0, (tmp_path / "err").read_text()[-2000:]
    found = json.loads((tmp_path / "out").read_bytes())
    archive_problems = [p for p in found if p[0] == "demo/charts/redis-1.0.0.tgz"]
    assert [p[1:3] for p in archive_problems] == [[1, 1]], found
    assert "not unpacked" in archive_problems[0][3] and REASONS[bomb] in archive_problems[0][3], archive_problems
    assert elapsed < 15
    assert usage.ru_maxrss < 400 << 10  # KiB: the lint and its render child


def test_an_archive_past_the_budget_adds_none_of_its_files(tmp_path: Path) -> None:
    """Files before the member that breaks the budget are not rendered half an archive."""
    data = gzip.compress(tar_of({"redis/Chart.yaml": b"apiVersion: v2\nname: redis\nversion: 1.0.0\n",
                                 "redis/templates/cm.yaml": b"kind: ConfigMap\nmetadata:\n  name: half\n",
                                 "redis/" + "b" * 300 + ".yaml": b"x: 1\n"}))
    root = chart(tmp_path, {"demo/charts/redis-1.0.0.tgz": data})
    render = helm.render_chart(root, "demo", [])
    assert len(render.objects) == 1 and "half" not in render.objects[0].text
    assert [p[:3] for p in problems(render)] == [("demo/charts/redis-1.0.0.tgz", 1, 1)]
    budget = helm_archive.Budget(members=100, content=1 << 20, max_file=1 << 20)
    with pytest.raises(helm_archive.Unreadable, match="not a gzip"):
        helm_archive.unpack(tar_of({"a": b"plain tar"}), budget)


# -- item 6: time budgets -----------------------------------------------------------------------

LOOP = "{{ if .Values.loop }}{{ range until 50000 }}{{ range until 50000 }}{{ end }}{{ end }}{{ end }}"
LOOPING = {"demo/templates/cm.yaml": LOOP + "kind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
           "demo/values.yaml": "loop: false\n", "loop-a.yaml": "loop: true\n", "loop-b.yaml": "loop: true\n",
           "fine.yaml": "loop: false\n"}


def test_a_charts_sets_share_one_time_budget_and_what_it_cuts_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIELDWARDEN_HELM_CHART_SECONDS", "3")
    root = chart(tmp_path, LOOPING)
    sets = [helm.ValueSet(("fine.yaml",)), helm.ValueSet(("loop-a.yaml",)), helm.ValueSet(("loop-b.yaml",)),
            helm.ValueSet(("fine.yaml",), release="late")]
    start = time.perf_counter()
    fine, looped, cut, late = helm.render_chart_sets(root, "demo", sets)
    assert time.perf_counter() - start < 10  # not 60 s per looping set
    assert len(fine.objects) == 1 and not fine.problems
    for render in (looped, cut, late):
        assert not render.objects and [p[:3] for p in problems(render)] == [("demo/Chart.yaml", 1, 1)]
    budget = "this chart's Helm time budget of 3 s (FIELDWARDEN_HELM_CHART_SECONDS) was used up"
    assert "value set values.yaml + loop-a.yaml (release release-name) stopped after" in looped.problems[0].message
    assert looped.problems[0].message.endswith(budget)
    assert cut.problems[0].message == f"value set values.yaml + loop-b.yaml (release release-name) not rendered: {budget}"
    assert late.problems[0].message == f"value set values.yaml + fine.yaml (release late) not rendered: {budget}"
    assert not fine.passing and all(render.passing for render in (looped, cut, late))  # not cached


def test_the_runs_budget_counts_from_the_runs_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIELDWARDEN_HELM_RUN_SECONDS", "30")
    root = chart(tmp_path, LOOPING)
    render, = helm.render_chart_sets(root, "demo", [helm.ValueSet(("fine.yaml",))], run_started=time.monotonic() - 31)
    assert render.problems[0].message.endswith("not rendered: the run's Helm time budget of 30 s "
                                               "(FIELDWARDEN_HELM_RUN_SECONDS) was used up")
    render, = helm.render_chart_sets(root, "demo", [helm.ValueSet(("fine.yaml",))], run_started=time.monotonic() - 29)
    assert len(render.objects) == 1 and not render.problems
    for wrong in ("0", "-1", "soon", "nan", "inf"):
        monkeypatch.setenv("FIELDWARDEN_HELM_SET_SECONDS", wrong)
        render = helm.render_chart(root, "demo", [])
        assert problems(render) == [("demo/Chart.yaml", 1, 1, "Helm charts are not rendered: FIELDWARDEN_HELM_SET_SECONDS "
                                     f"must be a positive number of seconds, not {wrong!r}")]


def test_a_lint_run_stops_rendering_when_its_budget_is_used_up(tmp_path: Path) -> None:
    """Two charts whose values loop: the run's budget (4 s) stops the run, not 60 s per value set."""
    for name in ("one", "two"):
        chart(tmp_path / name, {**LOOPING, "demo/ci/loop-values.yaml": "loop: true\n", "demo/values.yaml": "loop: true\n"})
    env = {**os.environ, "FIELDWARDEN_HELM_RUN_SECONDS": "4", "FIELDWARDEN_HELM_CHART_SECONDS": "100"}
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "fieldwarden", "lint", "--format", "concise", "--select", "FW006", "."],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert time.perf_counter() - start < 20, result.stdout
    lines = [line for line in result.stdout.splitlines() if "FW006" in line]
    assert all(":1:1: FW006 " in line and "the run's Helm time budget of 4 s" in line for line in lines), result.stdout
    assert {line.split(":", 1)[0] for line in lines} == {"one/demo/Chart.yaml", "two/demo/Chart.yaml"}, result.stdout


def test_the_render_child_cannot_open_a_socket_even_past_the_screen(
        tmp_path: Path, listener: Listener, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defence in depth: with the screen switched off, Helm tries to fetch the schema's $ref and
    cannot (the child's seccomp filter refuses socket(2)); the listener sees no connection."""
    url = f"http://127.0.0.1:{listener.server_address[1]}/meta.json"
    monkeypatch.setattr(helm_schema, "screen", lambda data: data)
    root = chart(tmp_path, {"demo/values.schema.json": '{"properties": {"a": {"$ref": "' + url + '"}}}',
                            "demo/values.yaml": "a: 1\n"})
    render = helm.render_chart(root, "demo", [], timeout=20)
    assert listener.connections == 0
    assert not render.objects and "permission denied" in render.problems[0].message, problems(render)
    probe = "import socket\nfrom fieldwarden.linter.units import helm_seccomp\nassert helm_seccomp.deny_sockets()\nsocket.socket()\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "PermissionError" in result.stderr, result.stderr
