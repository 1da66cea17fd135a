"""End-to-end tests behind a real kube-apiserver (etcd + kube-apiserver on 127.0.0.1, no kubelet).

The harness (assets, pki, processes, cluster, kubectl, install) is ours; conftest.py holds the
fixtures. Every test here carries the `e2e` marker: `pytest -m e2e` runs them alone.
"""
