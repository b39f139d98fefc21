#!/usr/bin/env bash
# The official AG-UI TypeScript client the AG-UI tests drive `wop serve` with
# (tests/server/test_agui_client.py): @ag-ui/client and @ag-ui/core 1.0.0, with zod for the
# core's validators, installed from the npm registry into a cache folder (never into the
# repository) and printed:
#
#   WOPDSL_TEST_AGUI_CLIENT="$(.ci/agui.sh)"; export WOPDSL_TEST_AGUI_CLIENT
#
# The folder is $WOPDSL_AGUI_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/wopdsl/agui/1.0.0);
# a second run reuses it. Needs node and npm. Everything but the folder goes to stderr.
set -euo pipefail
AGUI_VERSION=1.0.0
ZOD_VERSION=3.25.76
DIR="${WOPDSL_AGUI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/wopdsl/agui/$AGUI_VERSION}"
if [[ ! -f "$DIR/node_modules/@ag-ui/client/package.json" ]]; then
    mkdir -p "$DIR"
    echo "agui.sh: installing @ag-ui/client@$AGUI_VERSION into $DIR" >&2
    if [[ ! -f "$DIR/package.json" ]]; then
        echo '{"name": "wopdsl-agui-tests", "private": true}' > "$DIR/package.json"
    fi
    npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
        "@ag-ui/client@$AGUI_VERSION" "@ag-ui/core@$AGUI_VERSION" "zod@$ZOD_VERSION" >&2
fi
echo "$DIR"
