"""`fieldwarden units [PATHS]`: the units a lint of PATHS would make (see units/listing.py).

The files, configuration, exclusions, `units:` globs and git root are found as `lint` finds
them (cli.py); the engine plans and stops (Scope.plan_only): nothing is rendered.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from ..policies.config import ConfigError
from ..terminal import visible
from .cli import UsageError, _context, _scope, _settings, _targets
from .engine import lint
from .options import defaults


def run(args: Any) -> int:
    """List the units; 0, or 2 for a bad path or configuration."""
    from types import SimpleNamespace

    from .units.listing import as_json, as_text, gitops_objects, gitops_skipped, listed

    options = SimpleNamespace(**{**defaults(), "paths": args.paths or ["."], "config": args.config})
    try:
        missing = [path for path in options.paths if not os.path.lexists(path)]
        if missing:
            raise UsageError(f"no such file or folder: {', '.join(missing)}")
        resolver, root = _settings(options)
        if root is None:
            root = os.getcwd()
        targets = _targets(options.paths, resolver, "-", False)
        context = [*(s.path for s in targets if s.path is not None), *_context(targets, resolver, root)]
        scope = _scope(options, resolver, root)._replace(plan_only=True)
    except (ConfigError, UsageError) as exc:
        print(f"fieldwarden: {visible(str(exc))}", file=sys.stderr)
        return 2
    settings = resolver.for_file(Path.cwd() / "-").settings
    report = lint([], context, settings, root, lambda display: resolver.for_file(display).settings, scope)
    base = os.path.abspath(root)
    keys = [_key(str(path), base) for path in context]
    wanted = [_key(path, base) for path in options.paths]
    units = listed(report.planned or [], report.layout, wanted)
    git = scope.git_root
    prefix = os.path.relpath(base, git).replace(os.sep, "/") if git else "."
    skipped = [entry for entry in gitops_skipped(gitops_objects(Path(base), keys), "" if prefix == "." else prefix)
               if "." in wanted or any(entry.file == w or entry.file.startswith(w.rstrip("/") + "/") for w in wanted)]
    notices = [] if args.format == "json" else report.notices
    output = (as_json(units, skipped, report.notices, report.fixtures) if args.format == "json"
              else as_text(units, skipped, notices))
    sys.stdout.write(output)
    return 0


def _key(path: str, base: str) -> str:
    """A project-relative POSIX path (`.` for the root), absolute outside the project."""
    relative = os.path.relpath(os.path.abspath(path), base)
    if relative == ".." or relative.startswith(".." + os.sep):
        return os.path.abspath(path).replace(os.sep, "/")
    return relative.replace(os.sep, "/")
