#!/bin/sh
# The image's build stage, run from the checkout: the gateway and every dependency it runs
# with in a container (the PostgreSQL store included, for a cluster) as wheels in $1, built or
# fetched for the platform this runs on, so the final stage installs them offline.
set -eu
wheels="${1:?usage: docker/build.sh WHEEL_DIR}"
python -m pip wheel --wheel-dir "$wheels" ".[postgres]"
