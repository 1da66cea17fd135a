"""The live checks of `fieldwarden lint --cluster`: `run` (the pass over a lint's files),
`units` (each unit's objects as the cluster would receive them), `checks` (planning the
requests and judging the answers), `client_apply` (what client-side `kubectl apply` sends),
`refusals` (refusals that name no field, reworded with it), `paths` (the one gate request paths pass) and `cluster` (the Kubernetes client).

May import the lint core, `units/` and `policies`; never the webhook. Only the core's cli.py
imports this package, lazily, when `--cluster` is given. Keep this file free of imports.
"""
