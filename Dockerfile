# syntax=docker/dockerfile:1
# ksched container image. Two targets, the same runtime:
#   docker build -t ksched:0.1.0 .                                    ksched only (default)
#   docker build --target ksched-contrib -t ksched:0.1.0-contrib .     + the ksched-contrib plugins
# Third-party plugins: a derived image (`FROM ksched:0.1.0` + `pip install`), see
# docs/plugins.md "Shipping it".

ARG PYTHON_IMAGE=python:3.11-slim

# ---- builder: wheels for ksched, ksched-contrib and every dependency ---------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml README.md ./
COPY ksched ./ksched
COPY contrib_plugins ./contrib_plugins
RUN pip wheel --wheel-dir /wheels . ./contrib_plugins

# ---- runtime: a virtualenv with ksched, run as an unprivileged user ----------------------
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="ksched" \
      org.opencontainers.image.description="A Kubernetes scheduler in Python with pip-installable plugins" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    VIRTUAL_ENV=/opt/ksched/venv \
    PATH=/opt/ksched/venv/bin:$PATH
# UID/GID 65532 as in deploy/base (runAsUser); no home, no shell.
RUN groupadd --system --gid 65532 ksched \
 && useradd --system --uid 65532 --gid ksched --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin ksched \
 && python -m venv /opt/ksched/venv
# The wheels are mounted for the install only, so they never land in a layer.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels /wheels/ksched-*.whl \
 && ksched plugins
WORKDIR /
USER 65532:65532
EXPOSE 10259
ENTRYPOINT ["ksched"]
CMD ["run", "--config", "/etc/ksched/config.yaml"]

# ---- ksched-contrib: the runtime plus the community plugins -------------------------------
FROM runtime AS ksched-contrib
USER 0:0
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels /wheels/ksched_contrib-*.whl \
 && ksched plugins
USER 65532:65532

# ---- the default target: ksched only --------------------------------------------------------
FROM runtime AS ksched
