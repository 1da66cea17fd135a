"""The policy core shared by the linter and the webhook.

Rules are pure functions over plain dicts; nothing in this package reads files,
the environment or a request, and nothing imports the linter, the webhook,
Flask, gunicorn or the kubernetes client.
"""
