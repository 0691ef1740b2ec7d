#!/bin/sh
# The image's final stage: a venv at $2 holding the gateway from the wheels in $1 and nothing
# else; --no-index, so what runs is exactly what the build stage resolved.
set -eu
wheels="${1:?usage: docker/install.sh WHEEL_DIR VENV}"
venv="${2:?usage: docker/install.sh WHEEL_DIR VENV}"
python -m venv "$venv"
"$venv/bin/pip" install --no-index --find-links "$wheels" "agent-gateway[postgres]"
