"""`fieldwarden lint`: argument handling only; the work happens in engine.lint.

What it prints on stderr (notices, errors) names paths and quotes the linted tree: each line
goes through terminal.visible, so that it stays one line that starts with `fieldwarden:`.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Sequence

from ..policies.config import ConfigError, Settings, unknown_selectors
from .discover import folder_above, git_root, project_names, walk
from .engine import Report, Scope, Source, lint
from .resolve import Resolver, common_root, project_root
from .formats import FORMATTERS


def visible(text: str) -> str:
    """terminal.visible, imported when there is something to print (a clean run has nothing)."""
    from ..terminal import visible as escaped

    return escaped(text)


class UsageError(Exception):
    """Bad arguments or configuration: exit code 2."""


def run(args: Any) -> int:
    """Lint as asked (args: from options.parse, or argparse); returns the exit code."""
    try:
        resolver, root = _settings(args)
        if getattr(args, "show_settings", None):
            from pathlib import Path

            sys.stdout.write(show_settings(resolver, Path(args.show_settings), root))
            return 0
        targets = _targets(args.paths, resolver, args.stdin_filename, args.fix)
        if root is None and resolver.forced is None:  # nothing above the current folder: ask the files
            root = common_root(source.path for source in targets if source.path is not None)
        per_file = {source.display: resolver.for_file(source.display).settings for source in targets}
        settings = resolver.for_file(os.path.join(os.getcwd(), "-")).settings
        wanted = not args.no_context and any(s.context for s in per_file.values())
        context = _context(targets, resolver, root) if wanted else []
        per_file.update({str(path): resolver.for_file(path).settings for path in context})
        scope = _scope(args, resolver, root)
    except (ConfigError, UsageError) as exc:
        print(f"fieldwarden: {visible(str(exc))}", file=sys.stderr)
        return 2

    def settings_for(display: str) -> Settings:
        """The settings of the file a finding is reported in (stdin: --stdin-filename's)."""
        found = per_file.get(display)
        return found if found is not None else resolver.for_file(display).settings

    report = lint(targets, context, settings, root, settings_for, scope)
    if args.diff:  # as ruff: --diff wins over --fix and writes nothing
        return 0 if _show_diff(report, targets, args.quiet) == 0 or args.exit_zero else 1
    piped = args.fix and any(source.path is None for source in targets)
    if args.fix:
        targets, fixed = _apply_fixes(report, targets)
        if fixed:
            if not args.quiet:
                print(f"fieldwarden: fixed {fixed} finding{'s' if fixed != 1 else ''}", file=sys.stderr)
            report = lint(targets, context, settings, root, settings_for, scope)
    if piped:  # what was read, fixed as far as it could be (unchanged if it could not be)
        for source in targets:
            if source.path is None:
                _write_stdout(source.data or b"")
    if getattr(args, "cluster", False):
        from .live.checks import LiveError
        from .live.run import options_from, run as run_live

        try:
            report = run_live(report, targets, settings_for, options_from(args, settings))
        except LiveError as exc:
            print(f"fieldwarden: {visible(str(exc))}", file=sys.stderr)
            return 2
    missing = "" if args.quiet else schema_notice(per_file.values())
    for notice in [] if args.quiet else report.notices + ([missing] if missing else []):
        print(f"fieldwarden: {visible(notice)}", file=sys.stderr)
    shown = report.findings if args.show_suppressed else [f for f in report.findings if not f.suppressed]
    name = args.format
    if name == "auto":
        name = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    stream = sys.stderr if piped else sys.stdout  # stdout holds the fixed document
    colour = name == "text" and args.output is None and stream.isatty() and "NO_COLOR" not in os.environ
    if args.statistics:
        from .formats import statistics

        output = statistics(shown, structured=name == "json")
    else:
        fails = {"fails": lambda f: settings_for(f.file).fails(f.severity)} if name == "junit" else {}
        output = FORMATTERS[name](shown, colour=colour, quiet=args.quiet, **fails)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:  # (as Path.write_text)
            handle.write(output)
    else:
        stream.write(output)
    # each finding fails the run or not under the configuration of the file it is reported in
    failing = any(not f.suppressed and settings_for(f.file).fails(f.severity) for f in report.findings)
    return 1 if failing and not args.exit_zero else 0


def _write_stdout(data: bytes) -> None:
    """Bytes to standard output as they are (line endings, BOM)."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:  # a text stream standing in for stdout (embedding, tests)
        sys.stdout.write(data.decode("utf-8", "surrogateescape"))


def _settings(args: Any) -> tuple[Resolver, str | None]:
    """The per-file configuration resolver and the project root (see resolve.project_root)."""
    select = _split(args.select)
    ignore = _split(args.ignore)
    for entries in (select or [], ignore or []):
        bad = unknown_selectors(entries)
        if bad:
            raise UsageError(f"unknown rule code or name: {', '.join(bad)} (see `fieldwarden rules`)")
    forced: Path | None = None
    cwd = os.path.realpath(os.getcwd())  # (Path.cwd().resolve())
    if args.config:
        from pathlib import Path

        forced = Path(args.config)
        if not forced.is_file():
            raise ConfigError(f"cannot read configuration {forced}: no such file")
    root = str(forced.parent.resolve()) if forced is not None else project_root(cwd)

    def check(data: dict[str, Any], text: str, source: str) -> None:
        # the marker goes to the project's cache folder, or beside the configuration outside one
        _validate_cached(data, text, source, root or os.path.dirname(source) or ".")

    version = _k8s_version(getattr(args, "k8s_version", None))
    resolver = Resolver(
        forced, lambda settings: _schema_version(_live_rules(settings.with_overrides(
            select, ignore, args.fail_on, kubernetes_version=version), args), version), check,
        args.exclude, root or cwd
    )
    resolver.for_file(os.path.join(cwd, "-"))  # the configuration in force here: its errors are reported even with no files
    return resolver, root


def _k8s_version(given: str | None) -> str | None:
    """--k8s-version as `1.32`; a UsageError for what is no version."""
    if given is None:
        return None
    from ..policies.schemas.builtin import normalize

    found = normalize(given)
    if found is None:
        raise UsageError(f"--k8s-version {given!r}: expected a Kubernetes version such as 1.32")
    return found


_SCHEMA_CODES = ("FW601", "FW602")


def _schema_version(settings: Settings, given: str | None) -> Settings:
    """A target version the installed schemas do not carry is an error (exit 2), where the schema rules run."""
    from ..policies.config import DEFAULT_KUBERNETES_VERSION

    wanted = settings.kubernetes_version
    if wanted == DEFAULT_KUBERNETES_VERSION or not any(settings.enabled(code) for code in _SCHEMA_CODES):
        return settings  # (the default: carried by every kubernetes-validate pyproject.toml allows)
    from ..policies.schemas.builtin import versions

    carried = versions()
    if carried and wanted not in carried:
        where = "--k8s-version" if given is not None else f"{settings.source or 'configuration'}: kubernetes-version"
        raise ConfigError(f"{where} {wanted}: the installed schemas (kubernetes-validate) carry Kubernetes "
                          f"{carried[0]} to {carried[-1]}")
    return settings


def schema_notice(all_settings: Any) -> str:
    """The notice of a run whose schema rules cannot run: the schemas are not installed ("" if they run or are off)."""
    if not any(s.enabled(code) for s in all_settings for code in _SCHEMA_CODES):
        return ""
    from ..policies.schemas.builtin import schema_root

    if schema_root() is not None:
        return ""
    return ("schema validation (FW601, FW602) not run: the Kubernetes schemas are not installed "
            "(pip install 'fieldwarden[schemas]'; or ignore FW6 to silence this)")


def _live_rules(settings: Settings, args: Any) -> Settings:
    """--cluster turns the live rules (FW5xx) on; off, nothing runs them and no suppression of them is unused."""
    if getattr(args, "cluster", False):
        settings.live = True  # (a copy of this run's: with_overrides made it)
    elif any(getattr(args, name, None) for name in ("kubeconfig", "context", "apply_mode", "field_manager", "read_only",
                                                   "force_conflicts")):
        raise UsageError("--kubeconfig, --context, --apply-mode, --field-manager, --read-only and --force-conflicts "
                         "go with --cluster")
    return settings


def show_settings(resolver: Resolver, path: Path, root: str | None) -> str:
    """What `--show-settings FILE` prints: the configuration files and the resolved settings."""
    from ..policies.registry import RULES

    found = resolver.for_file(path)
    settings = found.settings
    lines = [f"file: {visible(str(path))}"]
    if found.files:
        lines.append(f"configuration: {_shown(found.files[0])}")
        lines.extend(f"  extends: {_shown(extended)}" for extended in found.files[1:])
    else:
        lines.append("configuration: (none: defaults)")
    lines.append(f"project root: {root if root is not None else '(none: no context)'}")
    lines.append(f"select: {', '.join(settings.select) or '-'}")
    lines.append(f"ignore: {', '.join(settings.ignore) or '-'}")
    lines.append(f"fail-on: {settings.fail_on}")
    for base, patterns in found.excludes:
        lines.append(f"exclude: {', '.join(patterns)} (relative to {_shown(base)})")
    for base, patterns in found.units:
        lines.append(f"units: {', '.join(patterns)} (relative to {_shown(base)})")
    lines.append(f"excluded: {'yes' if resolver.excluded(path) else 'no'}")
    lines.append(f"default-namespace: {settings.default_namespace}")
    lines.append(f"max-file-size: {settings.max_file_size}")
    lines.append(f"kubernetes-version: {settings.kubernetes_version}")
    lines.append(f"context: {'true' if settings.context else 'false'}")
    lines.append("rules:")
    for code, rule in RULES.items():
        state = "on " if settings.enabled(code) else "off"
        options = {k: v for k, v in settings.rule_conf(code).items() if k not in ("default-namespace", "kubernetes-version")}
        extra = " " + " ".join(f"{k}={v!r}" for k, v in options.items()) if options else ""
        lines.append(f"  {code} {state} {settings.severity[code]:<7} {rule.NAME}{extra}")
    return "\n".join(lines) + "\n"


def _validate_cached(data: object, text: str, source: str, folder: str) -> None:
    """Validate against the JSON Schema, remembering configurations already found valid.

    The marker's name is a digest under the user's cache key (see cache.py), so a marker
    committed to the repository cannot stand in for validation.
    """
    from .. import __version__
    from .cache import CACHE_DIR, create_file, is_plain_folder, keyed_digest, make_cache_folder

    stamp = keyed_digest(f"{__version__}\0{text}".encode(), b"config-valid")
    cache = os.path.join(folder, CACHE_DIR)
    marker = os.path.join(cache, f"config-{stamp.hex()}.ok") if stamp is not None else None
    if marker is not None and is_plain_folder(cache) and os.path.lexists(marker):
        return
    from ..policies.config import validate

    validate(data, source)
    if marker is not None and make_cache_folder(cache):
        create_file(marker, b"")


def _shown(path: str | Path) -> str:
    """A path as --show-settings prints it: relative to the current folder when below it."""
    absolute = os.path.normpath(os.path.abspath(path))
    relative = os.path.relpath(absolute)
    return visible(absolute if relative.startswith("..") else relative)


def _scope(args: Any, resolver: Resolver, root: str | None) -> Scope:
    """How the run cuts the project into units: fixtures, Helm value sets, `units:` globs, the git root."""
    git = git_root(root) if root is not None else None
    return Scope(
        include_fixtures=bool(getattr(args, "include_fixtures", False)),
        helm_values=tuple(_helm_values(entry) for entry in getattr(args, "helm_values", None) or ()),
        unit_globs=tuple(resolver.unit_globs()),
        git_root=git if git is not None else "",
        allow_network=bool(getattr(args, "allow_network", False)),
        keep_units=bool(getattr(args, "cluster", False)),  # (the live checks read the units linted)
    )


def _helm_values(entry: str) -> tuple[str | None, tuple[str, ...]]:
    """`--helm-values [CHART=]FILE[,FILE...]`: the chart it is for (None: every chart) and its files.

    Without CHART, files that all lie in one chart are that chart's; others are for every chart.
    """
    chart: str | None = None
    head, equals, tail = entry.partition("=")
    if equals and os.path.isfile(os.path.join(head, "Chart.yaml")):
        chart, entry = os.path.abspath(head), tail
    elif equals and not os.path.exists(entry):
        raise UsageError(f"--helm-values {entry}: {head} is not a chart (no Chart.yaml)")
    files = tuple(os.path.abspath(part) for part in entry.split(",") if part)
    if not files:
        raise UsageError(f"--helm-values {entry}: no values file")
    for path in files:
        if not os.path.isfile(path):
            raise UsageError(f"--helm-values: {os.path.relpath(path)}: no such file")
    if chart is None:
        owners = {_chart_above(path) for path in files}
        chart = owners.pop() if len(owners) == 1 else None
    return chart, files


def _chart_above(path: str) -> str | None:
    """The chart folder a file lies in, if any (the nearest Chart.yaml above it)."""
    return folder_above(os.path.dirname(path), "Chart.yaml", os.path.isfile)


def _split(value: str | None) -> list[str] | None:
    return None if value is None else [part.strip() for part in value.split(",") if part.strip()]


def _targets(paths: Sequence[str], resolver: Resolver, stdin_name: str, fix: bool) -> list[Source]:
    """The files to lint; each is excluded or not by its own configuration (and --exclude)."""
    sources: list[Source] = []
    for raw in paths:
        if raw == "-":
            sources.append(Source(stdin_name, None, sys.stdin.buffer.read()))
            continue
        name = raw
        if not _as_pathlib_shows(raw):  # str(Path(raw)) differs from raw: pathlib names the file
            from pathlib import Path

            name = str(Path(raw))
        if os.path.isdir(name):
            from pathlib import Path

            sources.extend(Source(str(p), str(p)) for p in walk(Path(name)) if not resolver.excluded(p))
        elif os.path.lexists(name):  # (Path's exists() or is_symlink())
            if not resolver.excluded(name):
                sources.append(Source(name, name))
        else:
            raise UsageError(f"{raw}: no such file or folder")
    if fix and any(s.path is None for s in sources):
        stands_for = os.path.realpath(stdin_name)
        if any(s.path is not None and os.path.realpath(s.path) == stands_for for s in sources):
            raise UsageError(f"--fix: {stdin_name} is given both as a path and as --stdin-filename")
    return sources


def _as_pathlib_shows(raw: str) -> bool:
    """Whether `str(Path(raw))` is `raw` itself: no empty or `.` part (`./a`, `a//b`, `a/`), not `//` first.

    The names of the files a run is given are shown as pathlib shows them; a name already so
    (what pre-commit passes) is taken as it is, without importing pathlib.
    """
    parts = raw.split("/")
    if raw.startswith("/"):
        parts = parts[1:]
    return bool(raw) and not raw.startswith("//") and all(part not in ("", ".") for part in parts)


def _context(targets: Sequence[Source], resolver: Resolver, root: str | None) -> list[str]:
    """The project's other manifests, each excluded or not by its own configuration."""
    if root is None:
        return []
    # stdin stands for the file --stdin-filename names: its copy on disk is not context
    named = {os.path.realpath(s.path if s.path is not None else s.display) for s in targets}
    cwd = os.getcwd()
    below = cwd.rstrip("/") + "/"  # (Path.relative_to(Path.cwd()): a lexical prefix, part by part)
    out = []
    for path in project_names(root):
        if os.path.realpath(path) in named or resolver.excluded(path):
            continue
        out.append(path[len(below):] if path.startswith(below) else path)
    return out


def _apply_fixes(report: Report, targets: Sequence[Source]) -> tuple[list[Source], int]:
    """Fix what can be fixed: files in place, stdin in memory (run() prints it).

    Returns the targets to lint again (stdin with its fixed text) and how many findings
    were fixed. A file whose fix fails is left as it was, with a notice.
    """
    from .fix import FixError, remove_fields_from_bytes

    plans = _fix_plans(report)
    fixed = 0
    out: list[Source] = []
    for source in targets:
        removals = plans.pop(source.display, None)
        if not removals:
            out.append(source)
            continue
        try:
            if source.path is None:
                source = source._replace(data=remove_fields_from_bytes(source.data or b"", removals))
            else:
                with open(source.path, "rb") as handle:
                    original = handle.read()
                new = remove_fields_from_bytes(original, removals)
                if new != original:
                    with open(source.path, "wb") as handle:
                        handle.write(new)
            fixed += sum(len(v) for v in removals.values())
        except (OSError, FixError) as exc:
            print(f"fieldwarden: {visible(f'{source.display}: not fixed: {exc}')}", file=sys.stderr)
        out.append(source)
    return out, fixed


def _fix_plans(report: Report) -> dict[str, dict[int, list[tuple[str | int, ...]]]]:
    """What --fix removes: per file shown, per document, the field paths of fixable findings."""
    from .formats import fixable

    plans: dict[str, dict[int, list[tuple[str | int, ...]]]] = {}
    for f in report.findings:
        if fixable(f):
            plans.setdefault(f.file, {}).setdefault(f.document, []).append(f.raw_path)
    return plans


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _commands_stopped() -> tuple[str, str]:
    """Under GitHub Actions, the lines that stop its workflow commands and resume them; else nothing.

    The token that resumes them is random, so that nothing printed in between can guess it
    (GitHub's `stop-commands`, made for logging untrusted text).
    """
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return "", ""
    import secrets

    token = secrets.token_hex(16)
    return f"::stop-commands::{token}\n", f"::{token}::\n"


def _show_diff(report: Report, targets: Sequence[Source], quiet: bool) -> int:
    """`--diff`: print what --fix would change, as a unified diff on stdout; write nothing.

    Returns how many files would change. A file that could not be fixed safely gets a
    notice and no diff, as --fix would leave it alone.
    """
    from .fix import FixError, remove_fields_from_bytes, unified_diff

    plans = _fix_plans(report)
    files = fixes = 0
    for source in targets:
        removals = plans.pop(source.display, None)
        if not removals:
            continue
        try:
            original = (source.data or b"") if source.path is None else _read(source.path)
            new = remove_fields_from_bytes(original, removals)
        except (OSError, FixError) as exc:
            print(f"fieldwarden: {visible(f'{source.display}: would not be fixed: {exc}')}", file=sys.stderr)
            continue
        if new != original:
            # the diff's lines are the file's own: under GitHub Actions none may be taken as a workflow command
            stop, resume = _commands_stopped()
            sys.stdout.write(stop + unified_diff(visible(source.display), original, new) + resume)
            files += 1
            fixes += sum(len(v) for v in removals.values())
    if not quiet:
        print(f"Would fix {fixes} finding{'s' if fixes != 1 else ''}." if fixes else "No fixes available.",
              file=sys.stderr)
    return files
