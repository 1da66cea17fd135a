#!/usr/bin/env bash
# fieldwarden's webhook on a local kind cluster: the steps docs/quickstart.md shows, run from the
# repository's root. Each step lies between "--8<-- [start:NAME]" and "--8<-- [end:NAME]" (the page
# includes it with pymdownx.snippets). tests/e2e/test_quickstart.py runs every step but "cluster",
# "image" and "delete-cluster" against a real kube-apiserver, in this order, and checks what each prints.
set -euo pipefail

# --8<-- [start:cluster]
kind create cluster --name fieldwarden
# --8<-- [end:cluster]

# --8<-- [start:image]
docker build -t fieldwarden:dev .
kind load docker-image fieldwarden:dev --name fieldwarden
# --8<-- [end:image]

# --8<-- [start:install]
helm install fieldwarden helm/fieldwarden --namespace fieldwarden --create-namespace \
  --set image.repository=fieldwarden --set image.tag=dev
# --8<-- [end:install]

# --8<-- [start:wait]
kubectl -n fieldwarden rollout status deployment/fieldwarden-webhook --timeout=180s
kubectl -n fieldwarden rollout status deployment/fieldwarden-controller --timeout=180s
# --8<-- [end:wait]

# --8<-- [start:certificate]
# The CA the chart made, and the caBundle each webhook trusts: the same.
ca=$(kubectl -n fieldwarden get secret fieldwarden-webhook-ca -o jsonpath='{.data.ca\.crt}')
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
  kubectl get "$kind" fieldwarden \
    -o jsonpath='{range .webhooks[*]}{.name}{" "}{.clientConfig.caBundle}{"\n"}{end}' |
  while read -r name bundle; do
    if [ "$bundle" = "$ca" ]; then echo "$name trusts the release's CA"; else echo "$name: another CA"; fi
  done
done
# The serving certificate: the Service's names, and when it expires.
kubectl -n fieldwarden get secret fieldwarden-webhook-tls -o jsonpath='{.data.tls\.crt}' | base64 -d |
  openssl x509 -noout -ext subjectAltName -enddate
# --8<-- [end:certificate]

# --8<-- [start:namespace]
kubectl create namespace demo
# --8<-- [end:namespace]

# --8<-- [start:gate]
kubectl -n demo run web --image=nginx:1.27
kubectl -n demo get pod web -o jsonpath='{.spec.readinessGates}{"\n"}'
kubectl -n demo wait pod/web --for=condition=Ready --timeout=120s
# --8<-- [end:gate]

# --8<-- [start:image-update]
kubectl -n demo set image pod/web web=nginx:1.28
# --8<-- [end:image-update]

# --8<-- [start:other-update]
kubectl -n demo patch pod web -p '{"spec":{"activeDeadlineSeconds":3600}}'
# --8<-- [end:other-update]

# --8<-- [start:autoscaler]
kubectl -n demo apply -f docs/quickstart/api.yaml
kubectl -n demo wait deployment/api --for=jsonpath='{.spec.replicas}'=3 --timeout=120s
# --8<-- [end:autoscaler]

# --8<-- [start:deploy]
kubectl -n demo apply -f docs/quickstart/api.yaml
kubectl -n demo get deployment api -o jsonpath='{.spec.replicas}{"\n"}'
# --8<-- [end:deploy]

# --8<-- [start:uninstall]
helm uninstall fieldwarden --namespace fieldwarden
kubectl delete namespace demo fieldwarden
# --8<-- [end:uninstall]

# --8<-- [start:delete-cluster]
kind delete cluster --name fieldwarden
# --8<-- [end:delete-cluster]
