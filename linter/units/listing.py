"""`fieldwarden units`: the apply units a lint would make, what each renders, and what is not read.

Planning only: the lint pipeline stops once it knows the units (engine.Scope.plan_only), so
nothing is rendered and no rule runs. The GitOps objects the planner passes over (ApplicationSets,
charts from Helm or OCI repositories, `valuesFrom`, Flux sources that are not this repository)
and the kustomize entries it drops (remote bases, `helmCharts`) are listed with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from .gitops import ARGO_GROUP, FLUX_HELM_GROUP, may_declare, not_read, values_from
from .plan import CHART_FILE, HELM, KUSTOMIZATION_NAMES, KUSTOMIZE, Unit, folder_of, is_below

ARGO = "Argo CD Application"
KINDS = (  # a declaring object's words (Declaration.by) -> the unit's kind
    (ARGO, "Argo CD Application"), ("Flux Kustomization", "Flux Kustomization"), ("Flux HelmRelease", "Flux HelmRelease"),
    ("units:", "configured unit (units:)"),
)


class Skipped(NamedTuple):
    """Something the planner does not read, and why."""

    what: str
    why: str
    file: str = ""  # where it is written ("" = unknown)


class Listed(NamedTuple):
    """One unit as `fieldwarden units` shows it."""

    name: str
    kind: str
    defined_by: str  # its defining file (kustomization, Chart.yaml, GitOps object) or its folder
    namespace: str
    files: list[str]  # plain manifests
    renders: list[dict[str, Any]]  # each render job: tool, folder, values, release, namespace, inline
    not_read: list[Skipped]


def kind_of(unit: Unit) -> str:
    """Plain folder, kustomization, chart (a value set), test step, or what declares it."""
    for words, kind in KINDS:
        if unit.by.startswith(words):
            return kind
    if " (step " in unit.name:
        return "test step"
    tools = {job.tool for job in unit.renders}
    if not unit.files and tools == {KUSTOMIZE}:
        return "kustomization"
    if not unit.files and tools == {HELM}:
        return "chart + value set"
    return "plain folder"


def defining_file(unit: Unit, kustomizations: Mapping[str, str]) -> str:
    """The file that makes it a unit: the GitOps object's, the kustomization, the Chart.yaml; else its folder."""
    if unit.source:
        return unit.source
    if len(unit.renders) == 1 and not unit.files:
        job = unit.renders[0]
        if job.tool == KUSTOMIZE:
            return kustomizations.get(job.folder, _in(job.folder, KUSTOMIZATION_NAMES[0]))
        return _in(job.folder, CHART_FILE)
    folders = sorted({folder_of(f) for f in unit.files})
    return folders[0] if len(folders) == 1 else unit.name


def _in(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def listed(units: Sequence[Unit], layout: Any, wanted: Sequence[str]) -> list[Listed]:
    """The units touching the wanted paths (project-relative; `.` is everything), described."""
    kustomize = getattr(layout, "kustomize", None)
    by_folder: dict[str, Any] = {_ours(folder): k for folder, k in (kustomize.kustomizations.items() if kustomize else ())}
    files_of = {folder: k.file for folder, k in by_folder.items()}
    out = []
    for unit in units:
        if not _touches(unit, wanted):
            continue
        skipped: list[Skipped] = []
        renders = []
        for job in unit.renders:
            renders.append({"tool": job.tool, "folder": job.folder, "values": list(job.values), "release": job.release,
                            "namespace": job.namespace, "inline": f"{job.inline[0]}" if job.inline else ""})
            if job.tool == KUSTOMIZE and layout is not None:
                reads = layout.consumed_by.get(job.folder, frozenset())
                for folder, k in by_folder.items():
                    if k.file in reads or folder == job.folder:
                        skipped.extend(Skipped(_entry(note.message), note.message, k.file) for _, note in k.remote)
        out.append(Listed(unit.name, kind_of(unit), defining_file(unit, files_of), unit.namespace, list(unit.files),
                          renders, list(dict.fromkeys(skipped))))
    return out


def _entry(message: str) -> str:
    """The entry a kustomize note names (between its first backquotes), or the note."""
    parts = message.split("`")
    return parts[1] if len(parts) > 2 else message


def _ours(folder: str) -> str:
    return folder or "."


def _touches(unit: Unit, wanted: Sequence[str]) -> bool:
    if "." in wanted:
        return True
    paths = [*unit.files, unit.source, *(job.folder for job in unit.renders),
             *(path for job in unit.renders for path in job.values)]
    return any(path and (path == want or is_below(path, want) or is_below(want, path)) for path in paths for want in wanted)


def gitops_skipped(objects: Iterable[tuple[Mapping[str, Any], str]], prefix: str = "") -> list[Skipped]:
    """GitOps objects (with their files) whose units the planner does not make, and why."""
    pairs = list(objects)
    found: list[Skipped] = []
    for obj, file in pairs:
        group = str(obj.get("apiVersion", "")).partition("/")[0]
        kind = obj.get("kind")
        who = _who(obj)
        spec: Mapping[str, Any] = obj["spec"] if isinstance(obj.get("spec"), dict) else {}
        if group == ARGO_GROUP and kind == "ApplicationSet":
            found.append(Skipped(f"ApplicationSet {who}", "its Applications are generated in the cluster, not read", file))
        elif group == ARGO_GROUP and kind == "Application":
            listed_sources = spec.get("sources")
            sources = [spec.get("source"), *(listed_sources if isinstance(listed_sources, list) else [])]
            for source in sources:
                if isinstance(source, dict) and source.get("chart") is not None:
                    found.append(Skipped(f"{ARGO} {who}", f"chart `{source.get('chart')}` comes from a Helm repository "
                                         f"({source.get('repoURL', '?')}), not from this one", file))
        elif group == FLUX_HELM_GROUP and kind == "HelmRelease":
            reference = _get(spec, "chart", "spec", "sourceRef", "kind")
            if _get(spec, "chartRef") is not None or reference in ("HelmRepository", "OCIRepository"):
                found.append(Skipped(f"Flux HelmRelease {who}", f"its chart comes from a {reference or 'chartRef'}, "
                                     "not from this repository", file))
    for who in values_from([obj for obj, _ in pairs]):
        found.append(Skipped(f"Flux HelmRelease {who}", "valuesFrom is not read (its ConfigMaps and Secrets are the "
                             "cluster's): rendered with its values files and inline values only", _file(pairs, who)))
    for who, why in not_read([obj for obj, _ in pairs], [file for _, file in pairs], prefix):
        found.append(Skipped(who, why, _file(pairs, who.rpartition(" ")[2])))
    return found


def _file(pairs: Sequence[tuple[Mapping[str, Any], str]], who: str) -> str:
    return next((file for obj, file in pairs if _who(obj) == who), "")


def _who(obj: Mapping[str, Any]) -> str:
    metadata: Mapping[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    namespace, name = metadata.get("namespace"), metadata.get("name")
    return f"{namespace}/{name}" if namespace else str(name)


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def gitops_objects(root: Path, files: Iterable[str]) -> list[tuple[Mapping[str, Any], str]]:
    """The GitOps objects of the project's files (a cheap look at the text first)."""
    from ..loader import load

    found: list[tuple[Mapping[str, Any], str]] = []
    for key in files:
        if key.startswith("/") or not key.endswith((".yaml", ".yml", ".json")):
            continue
        try:
            text = (root / key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "argoproj.io" not in text and "fluxcd.io" not in text:
            continue
        for document in load(text).documents:
            data = document.data
            items = data.get("items") if isinstance(data, dict) and data.get("kind") == "List" else [data]
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and may_declare(item.get("apiVersion")):
                    found.append((item, key))
    return found


# The lint's notices that the "not read" list says entry by entry (engine._declarations writes them).
LISTED_NOTICES = ("not read as units: ", "valuesFrom is not read ")


def unlisted(notices: Sequence[str]) -> list[str]:
    """The notices less those the "not read" list already says (each reason once)."""
    return [notice for notice in notices if not notice.startswith(LISTED_NOTICES)]


def as_json(units: Sequence[Listed], skipped: Sequence[Skipped], notices: Sequence[str], fixtures: int = 0) -> str:
    return json.dumps({
        "units": [{**unit._asdict(), "not_read": [s._asdict() for s in unit.not_read]} for unit in units],
        "not_read": [s._asdict() for s in skipped],
        "fixtures_left_out": fixtures,
        "notices": unlisted(notices),
    }, indent=2) + "\n"


def as_text(units: Sequence[Listed], skipped: Sequence[Skipped], notices: Sequence[str]) -> str:
    """The units, what is not read, the notices (how many fixture files are left out among them) and the count."""
    lines: list[str] = []
    for unit in units:
        lines.append(unit.name)
        lines.append(f"  kind: {unit.kind}")
        lines.append(f"  defined by: {unit.defined_by}")
        if unit.namespace:
            lines.append(f"  namespace: {unit.namespace}")
        for path in unit.files:
            lines.append(f"  file: {path}")
        for job in unit.renders:
            if job["tool"] == KUSTOMIZE:
                lines.append(f"  renders: kustomize build {job['folder']}")
            else:
                values = ", ".join([_in(job["folder"], "values.yaml"), *job["values"], *([f"{job['inline']} (inline values)"] if job["inline"] else [])])
                release = f", release {job['release']}" if job["release"] else ""
                lines.append(f"  renders: chart {job['folder']} with {values}{release}")
        for entry in unit.not_read:
            lines.append(f"  not read: {entry.why} ({entry.file})")
    if skipped:
        lines.append("not read:")
        lines.extend(f"  {entry.file}: {entry.what}: {entry.why}" if entry.file else f"  {entry.what}: {entry.why}"
                     for entry in skipped)
    for notice in unlisted(notices):
        lines.append(f"note: {notice}")
    count = len(units)
    lines.append(f"{count} unit{'s' if count != 1 else ''}")
    return "\n".join(lines) + "\n"
