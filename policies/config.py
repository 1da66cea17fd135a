"""The policy configuration: its JSON Schema, validation, and the settings it yields.

The same configuration drives the linter, the webhook and the Helm chart; the schema
is built from the rules' declared options and shipped as `config.schema.json`.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Callable, Iterable, Mapping, NamedTuple
else:
    from .records import NamedTuple

from .model import SEVERITIES, SEVERITY_RANK, WARNING
from .registry import RULES, resolve

SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "config.schema.json")  # (a string: a lint imports no pathlib)
DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024
# The target of FW601/FW602 when none is configured: the newest version that every kubernetes-validate
# release pyproject.toml allows (>= 1.36) carries, so that the same files get the same findings on every install.
DEFAULT_KUBERNETES_VERSION = "1.36"
# An AdmissionReview carries the object and, on UPDATE, the old object: each up to the
# API server's 3 MiB request limit, in JSON (larger than the protobuf etcd keeps).
DEFAULT_MAX_REQUEST_BYTES = 8 * 1024 * 1024

WEBHOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "options of the admission webhook (the linter ignores them)",
    "additionalProperties": False,
    "properties": {
        "on-stale-inventory": {
            "enum": ["allow", "deny"],
            "description": "while the autoscaler inventory is not synced: decide with what it holds and "
            "add a warning (allow), or refuse requests whose answer depends on it (deny, HTTP 503 in the status)",
        },
        "max-request-bytes": {
            "type": "integer",
            "minimum": 65536,
            "description": "largest AdmissionReview body accepted (bytes); larger ones get HTTP 413",
        },
    },
}

CLUSTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "`fieldwarden lint --cluster`: how the team applies (the command line's options win); the "
    "webhook ignores it. Where to connect and with which credentials never come from a configuration file: only "
    "from --kubeconfig/--context, $KUBECONFIG or ~/.kube/config. Every request is a GET or a dry run "
    "(dryRun=All), whatever this section says",
    "additionalProperties": False,
    "properties": {
        "kubeconfig": {"type": "string", "minLength": 1,
                       "description": "ignored, with a notice: a configuration file (which may come with the files "
                       "being linted) never chooses the cluster or the credentials; use --kubeconfig or $KUBECONFIG"},
        "context": {"type": "string", "minLength": 1,
                    "description": "ignored, with a notice: a configuration file never chooses the cluster or the "
                    "credentials; use --context"},
        "apply-mode": {"enum": ["server", "client"],
                       "description": "server-side apply, or client-side kubectl apply (either is only dry-run)"},
        "field-manager": {"type": "string", "minLength": 1, "maxLength": 128,
                          "description": "the deploy tool's field manager (only named in dry runs)"},
        "force-conflicts": {"type": "boolean",
                            "description": "the team's server-side applies force conflicts (only dry-run)"},
        "read-only": {"type": "boolean",
                      "description": "only GET and LIST: no dry runs (true here or --read-only: either makes it so)"},
        "sensitive-fields": {
            "type": "array", "maxItems": 200, "uniqueItems": True,
            "items": {"type": "string", "pattern": r"^(\*|[A-Za-z][A-Za-z0-9]*):[^\s:]+$", "maxLength": 512},
            "description": "fields whose values live findings never print, as KIND:PATH (KIND or a path step may "
            "be *; a path covers what lies below it), e.g. ConfigMap:data, "
            "*:spec.template.spec.containers[*].env[*].value; a Secret's data and stringData are never printed "
            "anyway",
        },
        "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 600,
                    "description": "seconds a request may take"},
        "parallel": {"type": "integer", "minimum": 1, "maximum": 64, "description": "requests in flight at most"},
    },
}


class WebhookSettings(NamedTuple):
    """The `webhook` section of the configuration."""

    on_stale_inventory: str = "allow"
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES


class ConfigError(Exception):
    """A configuration problem, worded for the person who wrote the configuration."""


def build_schema() -> dict[str, Any]:
    """The JSON Schema of the configuration, from the registry's rule options."""
    codes = {"type": "array", "items": {"type": "string", "minLength": 1}}
    rule_defs: dict[str, Any] = {}
    rule_props: dict[str, Any] = {}
    for code, rule in RULES.items():
        rule_defs[code] = {
            "type": "object",
            "description": f"{rule.NAME}: options of rule {code}",
            "properties": {"severity": {"enum": list(SEVERITIES)}, **rule.OPTIONS},
            "additionalProperties": False,
        }
        rule_props[code] = {"$ref": f"#/$defs/{code}"}
        rule_props[rule.NAME] = {"$ref": f"#/$defs/{code}"}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "fieldwarden policy configuration",
        "description": "`.fieldwarden.yaml`, or [tool.fieldwarden] in pyproject.toml",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "select": {**codes, "description": "rule codes, code prefixes or names to enable"},
            "ignore": {**codes, "description": "rule codes, code prefixes or names to disable"},
            "fail-on": {"enum": list(SEVERITIES), "description": "lowest severity that fails the run"},
            "exclude": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "glob patterns of paths (relative to the configuration) to skip",
            },
            "units": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "glob patterns of folders (relative to the configuration; `*` within a name, `**` "
                "across folders), each applied as one unit with everything below it (`kubectl apply -R`)",
            },
            "default-namespace": {
                "type": "string",
                "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                "maxLength": 63,
                "description": "namespace of objects that set none",
            },
            "max-file-size": {"type": "integer", "minimum": 1, "description": "bytes"},
            "kubernetes-version": {
                "type": "string",
                "pattern": r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?([-+].*)?$",
                "description": "the Kubernetes version whose API FW601/FW602 check against (`1.32`; default 1.36); "
                "--k8s-version overrides it",
            },
            "context": {
                "type": "boolean",
                "description": "load the project's other manifests as context for cross-file rules",
            },
            "extend": {
                "type": "string",
                "minLength": 1,
                "description": "a configuration file to inherit (relative to this one); keys set here override it",
            },
            "rules": {"type": "object", "properties": rule_props, "additionalProperties": False},
            "webhook": WEBHOOK_SCHEMA,
            "cluster": CLUSTER_SCHEMA,
        },
        "$defs": rule_defs,
    }


def validate(data: Any, source: str) -> None:
    """Raise ConfigError naming the first bad key, if `data` does not fit the schema."""
    import jsonschema  # only when a configuration exists: it costs ~100 ms to import

    validator = jsonschema.Draft202012Validator(build_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        error = errors[0]
        where = ".".join(str(p) for p in error.absolute_path)
        if source.endswith(".toml"):  # the keys live in one table of pyproject.toml
            where = f"[tool.fieldwarden] {where}" if where else "[tool.fieldwarden]"
        message = error.message
        if error.validator == "additionalProperties":
            known = list(error.schema.get("properties", {}))
            extra = sorted(set(error.instance) - set(known))
            message = "unknown key " + ", ".join(repr(k) + _did_you_mean(str(k), known) for k in extra)
        raise ConfigError(f"{source}: {where or '(top level)'}: {message}")


def _did_you_mean(key: str, known: list[str]) -> str:
    """` (did you mean 'select'?)` for a key close to a known one, else ``."""
    import difflib

    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not close:
        close = [k for k in known if k.lower() == key.lower()]
    return f" (did you mean {close[0]!r}?)" if close else ""


class Settings:
    """Resolved configuration: which rules run, how severe they are, and their options."""

    def __init__(self, data: Mapping[str, Any] | None = None, source: str | None = None) -> None:
        data = data or {}
        self.source = source
        self.select: tuple[str, ...] = tuple(data.get("select", ("FW",)))
        self.ignore: tuple[str, ...] = tuple(data.get("ignore", ()))
        self.fail_on: str = data.get("fail-on", WARNING)
        self.exclude: tuple[str, ...] = tuple(data.get("exclude", ()))
        self.default_namespace: str = data.get("default-namespace", "default")
        self.max_file_size: int = data.get("max-file-size", DEFAULT_MAX_FILE_SIZE)
        self.kubernetes_version: str = _minor(data.get("kubernetes-version")) or DEFAULT_KUBERNETES_VERSION
        self.context: bool = data.get("context", True)
        webhook = data.get("webhook") or {}
        self.webhook = WebhookSettings(
            webhook.get("on-stale-inventory", "allow"), webhook.get("max-request-bytes", DEFAULT_MAX_REQUEST_BYTES)
        )
        self.cluster: dict[str, Any] = dict(data.get("cluster") or {})  # lint --cluster (linter/live/run.py)
        self.live = False  # the live rules (FW5xx) run: `lint --cluster` sets it (linter/cli.py)
        # What users of these settings derive from them once (the webhook's rule plans);
        # settings are not changed after they are first used.
        self.memo: dict[Any, Any] = {}
        self.severity: dict[str, str] = {code: rule.SEVERITY for code, rule in RULES.items()}
        # Each rule's options, its defaults first: filled when configured or first asked for
        # (rule_conf), so that a run imports no rule module it does not use.
        self.options: dict[str, dict[str, Any]] = {}
        for key, value in (data.get("rules") or {}).items():
            rule = resolve(key)
            if rule is None:  # validate() rejects these; Settings stays total anyway
                continue
            for option, option_value in value.items():
                if option == "severity":
                    self.severity[rule.CODE] = option_value
                else:
                    self.rule_conf(rule.CODE)[option] = option_value

    def with_overrides(
        self,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] | None = None,
        fail_on: str | None = None,
        exclude: Iterable[str] = (),
        kubernetes_version: str | None = None,
    ) -> Settings:
        """A copy with command-line choices applied (they replace the file's lists)."""
        copy = Settings.__new__(Settings)
        copy.__dict__.update(self.__dict__)
        copy.memo = {}
        if select is not None:
            copy.select = tuple(select)
        if ignore is not None:
            copy.ignore = tuple(ignore)
        if fail_on is not None:
            copy.fail_on = fail_on
        copy.exclude = self.exclude + tuple(exclude)
        if kubernetes_version is not None:  # (the options are shared with self: a changed copy of each)
            copy.kubernetes_version = kubernetes_version
            copy.options = {code: {**conf, "kubernetes-version": kubernetes_version} for code, conf in self.options.items()}
        return copy

    def enabled(self, code: str) -> bool:
        """Longest matching select/ignore entry wins; on a tie, ignore wins. Live rules only in a live run."""
        if not self.live and code in _LIVE_CODES:
            return False
        key = (code, self.select, self.ignore)  # the lists may be replaced, never mutated
        found = _ENABLED.get(key)
        if found is None:
            best_select = max((_match_length(e, code) for e in self.select), default=0)
            best_ignore = max((_match_length(e, code) for e in self.ignore), default=0)
            found = _ENABLED[key] = best_select > best_ignore
        return found

    def fails(self, severity: str) -> bool:
        """Whether a finding of this severity fails the run."""
        return SEVERITY_RANK[severity] >= SEVERITY_RANK[self.fail_on]

    def rule_conf(self, code: str) -> dict[str, Any]:
        """The options a rule's check receives (defaults merged with configuration)."""
        conf = self.options.get(code)
        if conf is None:
            conf = self.options[code] = dict(RULES[code].DEFAULTS)
        conf.setdefault("default-namespace", self.default_namespace)
        conf.setdefault("kubernetes-version", self.kubernetes_version)
        return conf


def _minor(version: Any) -> str | None:
    """`1.32` of `1.32`, `v1.32.4`...: the schema's pattern lets only such strings through."""
    if not isinstance(version, str):
        return None
    parts = version.strip().lstrip("v").split(".")
    return f"{int(parts[0])}.{int(parts[1].split('-')[0].split('+')[0])}" if len(parts) >= 2 and parts[0].isdigit() else None


_ENABLED: dict[tuple[str, tuple[str, ...], tuple[str, ...]], bool] = {}
_LIVE_CODES = frozenset(code for code, rule in RULES.items() if rule.SCOPE == "live")  # (policies.rule.LIVE)


def _match_length(entry: str, code: str) -> int:
    rule = RULES.get(code)
    if rule is not None and entry.lower() == rule.NAME:
        return 100  # a full name is as explicit as a full code
    if entry.upper() == "ALL":
        return 1
    return len(entry) if code.startswith(entry.upper()) else 0


def unknown_selectors(entries: Iterable[str]) -> list[str]:
    """Entries that neither prefix any rule code nor name a rule."""
    bad = []
    for entry in entries:
        if entry.upper() == "ALL" or resolve(entry) is not None:
            continue
        if not any(code.startswith(entry.upper()) for code in RULES):
            bad.append(entry)
    return bad


def parse_config_text(text: str, source: str) -> dict[str, Any]:
    """Parse `.fieldwarden.yaml` or a pyproject.toml's [tool.fieldwarden] table."""
    if source.endswith(".toml"):
        try:
            import tomllib
        except ImportError:  # pragma: no cover - Python 3.10
            import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
        try:
            table = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source}: not valid TOML: {exc}") from None
        tool = table.get("tool", {})
        data = tool.get("fieldwarden", {}) if isinstance(tool, dict) else {}
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: [tool.fieldwarden] must be a table of keys")
    else:
        import yaml

        try:
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise ConfigError(_yaml_error(exc, source)) from None
        if data is None:
            data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the configuration must be a mapping of keys")
    return data


class ConfigChain(NamedTuple):
    """A configuration file merged with the files it extends."""

    data: dict[str, Any]  # merged (without `extend`): what Settings is built from
    files: tuple[Path, ...]  # the file itself first, then each file it extends, in turn
    excludes: tuple[tuple[Path, tuple[str, ...]], ...]  # (folder the patterns are relative to, patterns)
    units: tuple[tuple[Path, tuple[str, ...]], ...] = ()  # `units:` globs, the same way


# A configuration from a linted repository is read whole; real ones are a few kilobytes.
MAX_CONFIG_BYTES = 1 << 20


def read_config(path: Path) -> tuple[str, dict[str, Any]]:
    """The text of a configuration file and the mapping it holds (not yet validated)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: over {MAX_CONFIG_BYTES:,} bytes: not a configuration file")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read configuration {path}: {exc}") from None
    return text, parse_config_text(text, str(path))


def load_config_chain(path: Path, check: Callable[[dict[str, Any], str, str], None] | None = None,
                      within: Path | None = None) -> ConfigChain:
    """Read, validate and merge a configuration file and the chain of files it `extend`s.

    `extend: PATH` is relative to the file that says it. The extending file wins key by
    key, except `rules` (merged rule by rule, option by option) and `webhook` (option by
    option); `exclude` and `units` lists add up, each pattern staying relative to the folder of
    the file that says it. `check(data, text, source)` validates one file (default: validate()).
    A cycle is a ConfigError naming the files in it. With `within`, every file of the chain
    must lie inside that folder (links resolved): a configuration committed to a repository
    cannot make the linter read, and echo in its errors, files elsewhere on the machine.
    """
    layers: list[tuple[Path, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    current = _shown_path(path)
    if within is not None and not _inside(current, within):
        raise ConfigError(f"{current}: links outside the repository {within}; a configuration in a repository "
                          "must be a file in it")
    while True:
        key = os.path.realpath(current)
        if key in seen:
            loop = [str(p) for p, _ in layers[seen[key]:]] + [str(current)]
            raise ConfigError(f"{layers[-1][0]}: extend: configuration cycle: {' -> '.join(loop)}")
        seen[key] = len(layers)
        text, data = read_config(current)
        (check or (lambda d, _t, s: validate(d, s)))(data, text, str(current))
        layers.append((current, data))
        extend = data.get("extend")
        if extend is None:
            break
        target = _shown_path(current.parent / os.path.expanduser(str(extend)))
        if within is not None and not _inside(target, within):
            raise ConfigError(f"{current}: extend: {extend}: outside the repository {within}; a configuration "
                              "in a repository may only extend files in it")
        if not target.is_file():
            raise ConfigError(f"{current}: extend: {extend}: no such configuration file")
        current = target
    merged: dict[str, Any] = {}
    excludes: list[tuple[Path, tuple[str, ...]]] = []
    units: list[tuple[Path, tuple[str, ...]]] = []
    for source, data in reversed(layers):  # the outermost first, so that nearer files override
        for name, value in data.items():
            if name == "extend":
                continue
            if name == "rules":
                rules = merged.setdefault("rules", {})
                for rule_key, options in (value or {}).items():
                    rule = resolve(rule_key)
                    code = rule.CODE if rule is not None else rule_key
                    rules[code] = {**rules.get(code, {}), **(options or {})}
            elif name in ("webhook", "cluster"):
                merged[name] = {**merged.get(name, {}), **(value or {})}
            elif name == "exclude":
                merged["exclude"] = [*merged.get("exclude", []), *value]
                excludes.append((source.parent, tuple(value)))
            elif name == "units":
                merged["units"] = [*merged.get("units", []), *value]
                units.append((source.parent, tuple(value)))
            else:
                merged[name] = value
    return ConfigChain(merged, tuple(p for p, _ in layers), tuple(excludes), tuple(units))


def load_settings(path: Path | None) -> Settings:
    """The policy configuration in `path` (validated, its `extend` chain merged), or the defaults.

    The one loader of the programs that take one `--config` file: `fieldwarden serve`, the gate
    controller and `set-image`, and `fieldwarden export` (the linter looks for its own, per folder).
    """
    if path is None:
        return Settings()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the configuration: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the configuration is not UTF-8 text") from None
    data = parse_config_text(text, str(path))
    validate(data, str(path))
    if "extend" in data:  # inherited as the linter does: relative to this file, cycles refused
        data = load_config_chain(path).data
    return Settings(data, str(path))


def _inside(path: Path, folder: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _yaml_error(exc: Exception, source: str) -> str:
    """`source:line:column: not valid YAML: problem (context)` from a PyYAML error."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
    return f"{where}: not valid YAML: {problem}" + (f" ({context})" if context else "")


def _shown_path(path: Path) -> Path:
    """A path as messages name it: relative to the current folder when below it, else absolute."""
    from pathlib import Path

    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return Path(absolute if relative.startswith("..") else relative)


def schema_json() -> str:
    """The schema as shipped in config.schema.json."""
    import json  # here, not at the top: `fieldwarden lint` starts without json

    return json.dumps(build_schema(), indent=2, sort_keys=False) + "\n"
