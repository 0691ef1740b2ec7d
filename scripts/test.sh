#!/usr/bin/env bash
# Installs everything the test suite needs, from this repository's own files, and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -e ".[test]"

# The official @ag-ui/client, pinned by the lock file, drives the SSE door.
(cd tests/e2e/node && npm ci --silent --no-audit --no-fund)
# The WebSocket agent package: its tests and types run against @ag-ui/client from its lock file.
(cd clients/agui-websocket && npm ci --silent --no-audit --no-fund)

# The CopilotKit page the browser tests drive, built once with Vite (its own lock file).
(cd tests/e2e/copilotkit && npm ci --silent --no-audit --no-fund && npx vite build)

# Debian's Chromium and CJK fonts for the browser tests (no browser download works here), and
# PostgreSQL's server, which the tests start on loopback themselves (tests/support/postgres.py).
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
fc-list 2>/dev/null | grep -qi "noto.*cjk" || missing+=(fonts-noto-cjk)
compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "missing ${missing[*]}: install them (browser tests skip without chromium;" \
            "PostgreSQL tests fail without postgresql)" >&2
    fi
fi

.venv/bin/ruff check gateway tests scripts
.venv/bin/mypy gateway
.venv/bin/pytest -q "$@"
