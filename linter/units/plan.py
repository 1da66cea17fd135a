"""Apply units: the sets of objects that reach one cluster together.

Cross-object rules (duplicates, overlaps, selects-nothing, autoscaler relations) run inside
each unit, never across units: clusters/dev and clusters/prod may both define `web`.
A project's units, from its file list (project-relative POSIX paths):

- each kustomization no other kustomization includes, rendered (linter/units/kustomize.py);
- each Helm chart, once per value set (each ci/*-values.yaml over its values.yaml, else values.yaml alone; --helm-values);
- folders that Argo CD Applications, Flux Kustomizations and HelmReleases of the project
  name (see gitops.py), with the namespace they deploy to; Flux reads a plain folder
  recursively, Argo CD only with `directory.recurse`;
- folders the configuration's `units:` globs match, each with everything below it;
- every other folder's manifests, not recursively (`kubectl apply -f DIR`).

A recursive unit also holds the kustomizations and charts below it, rendered; they are then
no units of their own (they are applied as part of it). Files a render consumes (patches,
bases, components, everything in a chart) are no plain manifests: they are linted through
the units that use them. Test fixtures are left out (see `is_fixture`).

Everything here is pure: plain data in, plain data out.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Iterable, Mapping, NamedTuple, Sequence
else:
    from ...policies.records import NamedTuple

# Values written inline in a GitOps object (a HelmRelease's `spec.values`, an Application's
# `helm.valuesObject` or `helm.values`): (project-relative file, document index, key path in
# that document). Layered over the values files; see inline_values.py.
InlineValues = tuple[str, int, tuple["str | int", ...]]
Written = tuple[tuple[str, InlineValues], ...]  # (what: "" = the object, or a values file's key; where it is written)

KUSTOMIZE = "kustomize"
HELM = "helm"
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
CHART_FILE = "Chart.yaml"


class RenderJob(NamedTuple):
    """One render: a kustomization, or a chart with a value set."""

    tool: str  # KUSTOMIZE or HELM
    folder: str  # project-relative folder of the kustomization or chart ("." for the root)
    values: tuple[str, ...] = ()  # Helm: project-relative values files, in order (the chart's values.yaml is implied)
    namespace: str = ""  # Helm: the release namespace ("" = the default namespace)
    release: str = ""  # Helm: the release name ("" = Helm's default, `release-name`)
    inline: InlineValues | None = None  # Helm: values written in a GitOps object, applied last


class Unit(NamedTuple):
    """A set of objects applied together."""

    name: str  # what findings say they were found in
    files: tuple[str, ...]  # plain manifests, project-relative
    renders: tuple[RenderJob, ...] = ()
    namespace: str = ""  # where its namespaced objects land when they name none ("" = default-namespace)
    force_namespace: bool = False  # also when they name one (Flux targetNamespace)
    source: str = ""  # the file of the GitOps object that declares it ("" = its own kustomization or chart)
    by: str = ""  # who declares it (`Argo CD Application argocd/web`, `units: clusters/*`; "" = nobody)
    plain: bool = False  # a plain folder: nothing says it is one apply (see alternatives.py)
    written: Written = ()  # where its GitOps object is written, and each values file it names (see Declaration)


class Declaration(NamedTuple):
    """A folder that something in the project (or its configuration) says is applied as one unit."""

    folder: str  # project-relative
    recursive: bool
    namespace: str = ""
    force_namespace: bool = False
    values: tuple[str, ...] = ()  # Helm values files, project-relative, when the folder is a chart
    by: str = ""  # who says so, for the unit's name
    release: str = ""  # the Helm release name it renders a chart with ("" = Helm's default)
    inline: InlineValues | None = None  # values the GitOps object writes inline, when the folder is a chart
    source: str = ""  # the project-relative file of the GitOps object that says so ("" = the configuration)
    written: Written = ()  # ("", the object's place), (values file, its entry's place): where FW007 about them goes


def _place_order(place: InlineValues | None) -> tuple[object, ...]:
    """A place as a sort key: absent before present, path steps of either type comparable."""
    if place is None:
        return ()
    file, line, steps = place
    return (file, line, tuple((isinstance(step, int), step) for step in steps))


def _declaration_order(declaration: Declaration) -> tuple[object, ...]:
    """Declarations in field order, also when one writes inline values and another does not."""
    return (*declaration[:7], _place_order(declaration.inline), declaration.source,
            tuple((what, _place_order(where)) for what, where in declaration.written))


class Plan(NamedTuple):
    """The units of a project and the files only renders use."""

    units: list[Unit]
    consumed: frozenset[str]  # linted only through the renders that use them


def folder_of(path: str) -> str:
    """`a/b/c.yaml` -> `a/b`; `c.yaml` -> `.`."""
    head, _, _ = path.rpartition("/")
    return head or "."


def is_below(path: str, folder: str) -> bool:
    """Whether `path` lies in `folder` or any folder below it (`.` holds everything relative)."""
    if folder == ".":
        return not path.startswith("/")
    return path.startswith(folder + "/")


def may_render(files: Iterable[str]) -> bool:
    """Whether a file list holds a kustomization or a chart (a cheap look before importing renderers)."""
    names = (*KUSTOMIZATION_NAMES, CHART_FILE)
    return any(path.rpartition("/")[2] in names for path in files)


def kustomization_folder_files(files: Iterable[str]) -> frozenset[str]:
    """The files of folders that hold a kustomization: such a folder is applied through it.

    `kubectl apply -k`, Flux and Argo CD build the kustomization, never the folder's files one by
    one: a file it does not name (kubebuilder's commented-out `manager_webhook_patch.yaml`, a
    spare patch) is no manifest of its own, only read by the renders that name it. So are the files
    of a `patches/` folder beside a kustomization (kubebuilder's `config/crd/patches/`, whose
    `webhook_in_*.yaml` and `cainjection_in_*.yaml` the kustomization leaves commented out): CRD
    and Deployment fragments, never applied alone.
    """
    listed = list(files)
    folders = {folder_of(f) for f in listed if f.rpartition("/")[2] in KUSTOMIZATION_NAMES}
    patches = tuple(("" if folder == "." else folder + "/") + "patches/" for folder in folders)
    return frozenset(f for f in listed if folder_of(f) in folders or (patches and f.startswith(patches)))


def chart_of(path: str, charts: Iterable[str]) -> str | None:
    """The chart folder a file lies in (the innermost), or None."""
    best = None
    for chart in charts:
        if is_below(path, chart) and (best is None or len(chart) > len(best)):
            best = chart
    return best


# -- GitOps objects that name units (read by gitops.py) ----------------------------------

ARGO_GROUP = "argoproj.io"
FLUX_KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
FLUX_HELM_GROUP = "helm.toolkit.fluxcd.io"
GROUPS = (ARGO_GROUP, FLUX_KUSTOMIZE_GROUP, FLUX_HELM_GROUP)

_SOURCE_FIELDS: tuple[tuple[str, ...], ...] = (
    ("path",), ("chart",), ("directory", "recurse"), ("helm", "valueFiles"), ("helm", "releaseName"),
    ("helm", "values"), ("helm", "valuesObject"),
)
# What the linter's object projections must keep for gitops.py (see analyse.context_paths).
PATHS: tuple[tuple[str, ...], ...] = (
    *(("spec", "source", *field) for field in _SOURCE_FIELDS),
    *(("spec", "sources", "*", *field) for field in _SOURCE_FIELDS),
    ("spec", "destination", "namespace"),
    ("spec", "path"),
    ("spec", "targetNamespace"),
    ("spec", "releaseName"),
    ("spec", "values"),
    ("spec", "valuesFrom"),
    ("spec", "chart", "spec", "chart"),
    ("spec", "chart", "spec", "valuesFiles"),
    ("spec", "chart", "spec", "sourceRef", "kind"),
    ("spec", "sourceRef", "kind"),
    ("spec", "sourceRef", "name"),
    ("spec", "sourceRef", "namespace"),
)


def may_declare(api_version: object) -> bool:
    """Whether objects of this apiVersion can name units (a cheap first look)."""
    return isinstance(api_version, str) and api_version.partition("/")[0] in GROUPS


# -- test fixtures -------------------------------------------------------------------------

CHAINSAW_TEST_FILES = ("chainsaw-test.yaml", "chainsaw-test.yml", "chainsaw-test.json")
_CHECK_WORDS = frozenset({"assert", "asserts", "error", "errors"})


def chainsaw_folders(files: Iterable[str]) -> frozenset[str]:
    """Folders holding a chainsaw test (`chainsaw-test.yaml`)."""
    return frozenset(folder_of(f) for f in files if f.rpartition("/")[2] in CHAINSAW_TEST_FILES)


FIXTURE_FOLDERS = frozenset({"testdata", "_testdata"})  # folders the Go tool never reads as a package


def is_fixture(path: str, chainsaw: frozenset[str], named: frozenset[str] = frozenset()) -> bool:
    """A test fixture: one a test manifest names as such (`named`, see testruns.py), or one by convention.

    By convention: below a `testdata/` or `_testdata/` folder (Go's), or a kuttl/chainsaw check:
    `NN-assert.yaml` / `NN-errors.yaml` step files, and in a chainsaw test folder any file whose
    name has the word `assert` or `error` (`assert.yaml`, `deploy-assert.yaml`): they describe
    what a cluster should (not) hold, partially, and are never applied.
    """
    if path in named:
        return True
    folder, _, name = path.rpartition("/")
    if not FIXTURE_FOLDERS.isdisjoint(folder.split("/")):
        return True
    words = _words(name)
    if len(words) > 1 and step_of(name) and words[1] in ("assert", "error", "errors"):
        return True  # kuttl and chainsaw's step checks: `<two-digit step>-assert.yaml`, `<step>-errors.yaml`
    return (folder or ".") in chainsaw and not _CHECK_WORDS.isdisjoint(words)


def _words(name: str) -> list[str]:
    return name.rsplit(".", 1)[0].lower().replace("_", "-").replace(".", "-").split("-")


def step_of(name: str) -> str:
    """The step of a kuttl or chainsaw step file (`01-resize.yaml` -> `01`), else ``."""
    return name[:2] if len(name) > 3 and name[:2].isdigit() and name[2] == "-" else ""


def step_folders(files: Iterable[str]) -> frozenset[str]:
    """Folders of kuttl and chainsaw tests written as step files: they hold a step check (`00-assert.yaml`).

    Such a test applies each step on its own, in order (step 01 updates what step 00 made):
    each step is a unit (see `plan`).
    """
    found = set()
    for path in files:
        folder, _, name = path.rpartition("/")
        words = _words(name)
        if len(words) > 1 and step_of(name) and words[1] in ("assert", "error", "errors"):
            found.add(folder or ".")
    return frozenset(found)


# -- configuration globs --------------------------------------------------------------------

def glob_matches(pattern: str, folder: str) -> bool:
    """Whether a folder (relative, `.` for the base) matches a `units:` glob.

    `*`, `?` and `[...]` match within one path segment, `**` any number of segments;
    a trailing `/` changes nothing (units are folders anyway).
    """
    wanted = [part for part in pattern.strip().split("/") if part not in ("", ".")]
    parts = [] if folder == "." else folder.split("/")
    return _segments_match(wanted, parts)


def _segments_match(pattern: list[str], parts: list[str]) -> bool:
    if not pattern:
        return not parts
    head = pattern[0]
    if head == "**":
        return any(_segments_match(pattern[1:], parts[index:]) for index in range(len(parts) + 1))
    from fnmatch import fnmatchcase  # (only with `units:` globs)

    return bool(parts) and fnmatchcase(parts[0], head) and _segments_match(pattern[1:], parts[1:])


def folders_with_ancestors(files: Iterable[str]) -> set[str]:
    """Every folder that holds a file, and every folder above it (`.` included)."""
    found: set[str] = set()
    for path in files:
        if path.startswith("/"):
            continue  # outside the project
        folder = folder_of(path)
        while folder not in found:
            found.add(folder)
            if folder == ".":
                break
            folder = folder_of(folder)
    return found


def declared_by_globs(patterns: Iterable[tuple[str, str]], folders: Iterable[str]) -> list[Declaration]:
    """`units:` entries as declarations: (pattern, the project-relative folder it is relative to)."""
    found: list[Declaration] = []
    candidates = sorted(folders)
    for pattern, base in patterns:
        for folder in candidates:
            if base != "." and folder != base and not folder.startswith(base + "/"):
                continue
            relative = "." if folder == base else (folder if base == "." else folder[len(base) + 1:])
            if glob_matches(pattern, relative):
                found.append(Declaration(folder, True, by=f"units: {pattern}"))
    return found


# -- the plan -------------------------------------------------------------------------------

def plan(
    files: Sequence[str],
    kustomizations: Iterable[str],
    consumed: Iterable[str],
    charts: Mapping[str, Sequence[tuple[str, ...]]],
    declarations: Iterable[Declaration] = (),
    steps: frozenset[str] = frozenset(),
    alone: Mapping[str, str] = {},
) -> Plan:
    """The units of a project.

    `files`: its manifests (fixtures already left out); `kustomizations`: the folders of the
    kustomizations no other includes; `consumed`: files those kustomizations use;
    `charts`: each chart's folder and its value sets (each a tuple of values files; `()` is
    the chart's own values.yaml); `declarations`: folders named by GitOps objects and globs;
    `steps`: test folders whose step files (`00-install.yaml`, `01-resize.yaml`) are applied step
    by step: each step is a unit of its own (see `step_folders`); `alone`: files a test applies
    operation by operation (chainsaw's `apply`, see testruns.py), each with the operation: the
    files of one operation are a unit of their own.
    """
    roots = set(kustomizations)
    chart_folders = sorted(charts)
    used = set(consumed)
    used.update(f for f in files if any(is_below(f, chart) for chart in chart_folders))
    plain = [f for f in files if f not in used]
    units: list[Unit] = []
    claimed_files: set[str] = set()
    claimed_roots: set[str] = set()
    seen: set[tuple[str, bool, str, bool, tuple[str, ...], str, InlineValues | None]] = set()
    for declaration in sorted(declarations, key=_declaration_order):
        # the same folder named twice is one unit; a chart rendered under two release names is two
        identity = (declaration.folder, declaration.recursive, declaration.namespace, declaration.force_namespace,
                    declaration.values, declaration.release if declaration.folder in charts else "",
                    declaration.inline if declaration.folder in charts else None)
        if identity in seen:
            continue
        seen.add(identity)
        unit = _declared_unit(declaration, plain, roots, charts)
        if unit is None:
            continue
        unit = unit._replace(source=declaration.source, by=declaration.by, written=declaration.written)
        units.append(unit)
        claimed_files.update(unit.files)
        claimed_roots.update(job.folder for job in unit.renders if job.tool == KUSTOMIZE)
    for root in sorted(roots - claimed_roots):
        units.append(Unit(f"{root} (kustomize)", (), (RenderJob(KUSTOMIZE, root),)))
    for chart in chart_folders:
        for values in charts[chart] or [()]:
            units.append(Unit(chart_unit_name(chart, values), (), (RenderJob(HELM, chart, tuple(values)),)))
    by_folder: dict[tuple[str, str], list[str]] = {}
    for path in plain:
        if path not in claimed_files:
            folder = folder_of(path)
            step = step_of(path.rpartition("/")[2]) if folder in steps else ""
            by_folder.setdefault((folder, alone.get(path) or (f"step {step}" if step else "")), []).append(path)
    units.extend(
        Unit(f"{folder} ({label})" if label else folder, tuple(members), plain=not label)
        for (folder, label), members in sorted(by_folder.items())
    )
    return Plan(units, frozenset(used))


def _declared_unit(
    declaration: Declaration, plain: Sequence[str], roots: set[str], charts: Mapping[str, Sequence[tuple[str, ...]]]
) -> Unit | None:
    folder = declaration.folder
    about = [part for part in (declaration.by, declaration.namespace and f"namespace {declaration.namespace}") if part]
    name = f"{folder} ({', '.join(about)})" if about else folder
    namespace, force = declaration.namespace, declaration.force_namespace
    if folder in roots:
        return Unit(name, (), (RenderJob(KUSTOMIZE, folder),), namespace, force)
    if folder in charts:
        return Unit(name, (), (RenderJob(HELM, folder, declaration.values, namespace, declaration.release, declaration.inline),), namespace, force)
    if declaration.recursive:
        members = tuple(f for f in plain if is_below(f, folder))
        renders = [RenderJob(KUSTOMIZE, root) for root in sorted(roots) if root == folder or is_below(root, folder)]
        renders.extend(RenderJob(HELM, chart, (), namespace) for chart in sorted(charts) if is_below(chart, folder))
    else:
        members = tuple(f for f in plain if folder_of(f) == folder)
        renders = []
    if not members and not renders:
        return None  # it names nothing here (another repository's path, say)
    return Unit(name, members, tuple(renders), namespace, force)


def chart_unit_name(chart: str, values: Sequence[str]) -> str:
    """`charts/web (helm)`, `charts/web (helm, ci/ha-values.yaml)`: values files relative to the chart."""
    if not values:
        return f"{chart} (helm)"
    shown = [v[len(chart) + 1:] if chart != "." and v.startswith(chart + "/") else v for v in values]
    return f"{chart} (helm, {', '.join(shown)})"
