# The image the Helm chart (helm/fieldwarden) runs: `fieldwarden serve` (the admission webhook,
# gunicorn inside) and `fieldwarden controller`. Build from the repository root:
#   docker build -t ghcr.io/fieldwarden/fieldwarden:"$(python3 -c 'import fieldwarden; print(fieldwarden.__version__)')" .
# (the version is written once, in fieldwarden/__init__.py; helm/fieldwarden/Chart.yaml's appVersion follows it)
# Slim, non-root (uid/gid 65532, as the chart's securityContext), read-only-root friendly
# (nothing is written outside /tmp, which the chart mounts as an emptyDir), exec-form
# entrypoint: no shell is involved at runtime.

FROM python:3.12-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY constraints/ constraints/
COPY fieldwarden/ fieldwarden/
COPY policies/ policies/
COPY linter/ linter/
COPY webhook/ webhook/
# A virtualenv copied whole into the runtime stage (same base image, same interpreter path).
# Every dependency pinned (constraints/webhook.txt, checked by tests/test_constraints.py and
# .ci/clean-install): a rebuild gets the versions CI ran, whatever was released since.
RUN python -m venv /opt/fieldwarden \
 && /opt/fieldwarden/bin/pip install -c constraints/webhook.txt '.[webhook]' \
 && /opt/fieldwarden/bin/pip check \
 && /opt/fieldwarden/bin/fieldwarden --version

FROM python:3.12-slim
LABEL org.opencontainers.image.title="fieldwarden" \
      org.opencontainers.image.source="https://github.com/fieldwarden/fieldwarden" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --gid 65532 fieldwarden \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin fieldwarden
COPY --from=build /opt/fieldwarden /opt/fieldwarden
ENV PATH=/opt/fieldwarden/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["fieldwarden"]
CMD ["serve"]
