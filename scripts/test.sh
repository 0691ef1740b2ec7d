#!/usr/bin/env bash
# Installs everything the test suite needs, from this repository's own files, and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -e ".[test]"

# A hash of what a step's result depends on: these files (in this order) and node's version.
inputs_hash() {
    { node --version; sha256sum "$@"; } | sha256sum | cut -d" " -f1
}

# The files under these folders, but what npm and Vite make there.
files_in() {
    find "$@" \( -name node_modules -o -name dist \) -prune -o -type f -print | LC_ALL=C sort
}

# npm ci in a folder, unless node_modules was installed from this very lock file (and these
# other inputs): their hash is kept in node_modules/.agw-hash, which npm ci itself empties.
npm_ci() {
    local folder=$1 hash
    shift
    hash=$(inputs_hash "$folder/package.json" "$folder/package-lock.json" "$@")
    if [ "$(cat "$folder/node_modules/.agw-hash" 2>/dev/null)" != "$hash" ]; then
        (cd "$folder" && npm ci --silent --no-audit --no-fund)
        echo "$hash" >"$folder/node_modules/.agw-hash"
    fi
}

# The official @ag-ui/client, pinned by the lock file, drives the SSE door.
npm_ci tests/e2e/node
# The WebSocket agent package: its tests and types run against @ag-ui/client from its lock file.
npm_ci clients/agui-websocket

# The CopilotKit page the browser tests drive, built once with Vite (its own lock file). It
# installs a copy of the WebSocket agent (.npmrc), so the agent's files count as inputs too;
# the build is redone only when they, the page's sources or its lock file changed.
mapfile -t agent < <(files_in clients/agui-websocket)
npm_ci tests/e2e/copilotkit "${agent[@]}"
mapfile -t page < <(files_in tests/e2e/copilotkit)
hash=$(inputs_hash "${page[@]}" "${agent[@]}" gateway/examples/navigator/tools/navigateToScreen.json)
if [ "$(cat tests/e2e/copilotkit/dist/.agw-hash 2>/dev/null)" != "$hash" ]; then
    (cd tests/e2e/copilotkit && npx vite build)
    echo "$hash" >tests/e2e/copilotkit/dist/.agw-hash
fi

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
.venv/bin/mypy gateway scripts
# The suite on every core, each module's tests on one worker (the servers a module starts
# start once per module); then the few tests marked serial, alone. Exit code 5: "$@" chose
# no serial test.
.venv/bin/pytest -q -n auto --dist loadscope "$@"
.venv/bin/pytest -q --only-serial "$@" || [ $? -eq 5 ]

# The multi-core setup with every run crossing to a worker (docs/multicore.md): the server
# tier of the folders whose tests drive runs, again with two worker processes behind each
# test's gateway (tests/support/servers.py reads GATEWAY_WORKERS). Not tests/doors: it
# passes with workers too, at 6x its CPU (two spawned workers a gateway), for doors whose
# code is the same either way. For the whole suite only: arguments chose what to run.
if [ $# -eq 0 ]; then
    GATEWAY_WORKERS=2 .venv/bin/pytest -q -n auto --dist loadscope -m server \
        tests/adk tests/a2ui tests/e2e tests/examples tests/hub tests/store tests/translate
fi
