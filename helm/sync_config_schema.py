"""Copy fieldwarden's configuration schema into the chart's values.schema.json, as property `config`.

Helm validates the chart's values against values.schema.json and cannot read another file,
so the policy configuration's JSON Schema (policies/config.schema.json, what `fieldwarden
schema` prints) is embedded there, with an `$id` of its own so that its `#/$defs/...`
references resolve inside the copy. tests/helm checks that the copy is current. Run from
anywhere, after `fieldwarden schema > policies/config.schema.json`:

    python3 helm/sync_config_schema.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
POLICY_SCHEMA = REPO / "policies" / "config.schema.json"
VALUES_SCHEMA = REPO / "helm" / "fieldwarden" / "values.schema.json"
CONFIG_ID = "https://fieldwarden.io/schemas/config.schema.json"


def embedded_config_schema() -> dict[str, Any]:
    """The policies' schema as values.schema.json embeds it."""
    return {"$id": CONFIG_ID, **json.loads(POLICY_SCHEMA.read_text(encoding="utf-8"))}


def main() -> int:
    values = json.loads(VALUES_SCHEMA.read_text(encoding="utf-8"))
    values["properties"]["config"] = embedded_config_schema()
    VALUES_SCHEMA.write_text(json.dumps(values, indent=2) + "\n", encoding="utf-8")
    print(f"{VALUES_SCHEMA.relative_to(REPO)}: config schema updated from {POLICY_SCHEMA.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
