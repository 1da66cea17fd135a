"""The cluster side of fieldwarden, three programs in three subpackages.

- `server/`: the admission webhook (`fieldwarden serve`): reading AdmissionReviews, running the
  admission rules, JSON patches, the Flask app, gunicorn, TLS, logs and metrics;
- `inventory/`: which HPAs and VPAs exist, from a file or listed and watched in a live cluster;
- `gate/`: the readiness-gate controller (`fieldwarden controller`) and the in-place image update
  (`fieldwarden set-image`);
- `kube/`: the edge to the Kubernetes API the other three share (the client, the reflector loop).
"""
