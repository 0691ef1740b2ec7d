# syntax=docker/dockerfile:1
#
# agent-gateway's image: the wheel of this checkout and its dependencies in a venv on a slim
# Python base, run as an unprivileged user on 0.0.0.0:8080 (AgentCore Runtime's contract).
#
# The build stage turns the checkout into wheels for the platform it runs on (buildx runs it
# once for linux/amd64 and once for linux/arm64), the final stage installs only those wheels,
# offline, without a compiler or the source. Every build and start step is a script of
# docker/, so tests/test_image.py runs the same steps in a fresh venv where no base image can
# be pulled.
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t agent-gateway:0.1.0 .
#
# Pin the base by digest for reproducible builds: --build-arg PYTHON_IMAGE=python:3.11.14-slim-bookworm@sha256:...
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY . .
RUN ["sh", "docker/build.sh", "/wheels"]

FROM ${PYTHON_IMAGE}
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY docker/install.sh docker/healthcheck.py /opt/gateway/
# The wheels are mounted, not copied: they never become a layer of the image.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    ["sh", "/opt/gateway/install.sh", "/wheels", "/opt/venv"]
RUN ["useradd", "--system", "--no-log-init", "--uid", "10001", "--user-group", "--create-home", "--home-dir", "/data", "gateway"]

# jwt mode by default: a container is reached from outside it, so nobody may name themselves
# (GATEWAY_JWT_* says whose tokens count; without one the gateway refuses to start).
ENV PATH=/opt/venv/bin:$PATH \
    GATEWAY_HOST=0.0.0.0 \
    GATEWAY_PORT=8080 \
    GATEWAY_AUTH=jwt \
    GATEWAY_DB=/data/gateway.db \
    GATEWAY_LOG_FORMAT=json
USER 10001:10001
WORKDIR /data
EXPOSE 8080
# Whether the process serves (/livez): a model provider's outage or a drain must not make an
# orchestrator that replaces unhealthy tasks (ECS, Swarm) restart every container.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "/opt/gateway/healthcheck.py", "/livez"]
# SIGTERM drains: runs in progress finish within GATEWAY_DRAIN_SECONDS (25), so give
# `docker stop` at least 30 s (-t 30); Kubernetes' default grace period is 30 s.
STOPSIGNAL SIGTERM
ENTRYPOINT ["agent-gateway"]
CMD ["serve"]
