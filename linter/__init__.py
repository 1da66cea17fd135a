"""The manifest linter: CLI, pre-commit hook and CI gate over the shared policies."""
