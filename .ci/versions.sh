#!/usr/bin/env bash
# Print the versions an environment resolved for what the extras bring (to stderr):
#   .ci/versions.sh .venv/bin/python
set -euo pipefail
"$1" -m pip list --format=freeze 2>/dev/null \
    | grep -iE '^(pytest|syrupy|pytest-asyncio|pytest-textual-snapshot|textual|openai|httpx2?|starlette|uvicorn|pydantic|jinja2|ipykernel|ipywidgets|pyyaml|anyio|psycopg)==' >&2
