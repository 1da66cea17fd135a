"""The manifest linter: CLI, pre-commit hook and CI gate over the shared policies.

This folder is the lint core and its command line: `cli` (the `fieldwarden lint` entry),
`options`/`argparser` (the command line), `formats` (output), `engine` (one run over a project),
`analyse`/`sets`/`unitrun` (the rules over files, apply units and sets), `loader`/`discover`/
`resolve` (reading files, finding them, their configuration), `suppress`, `fix` and `cache`.

Subpackages: `units/` cuts a project into apply units and renders them (kustomize, Helm, GitOps
objects); `live/` runs the live checks of `lint --cluster`.

Imports go downwards: the core imports `policies` and `units/`, never the webhook; it imports
`live/` only from cli.py, lazily, so a lint without `--cluster` loads none of it. Keep the
`__init__` files free of imports: a plain lint loads only the modules it uses.
tests/linter/test_layers.py checks these rules.
"""
