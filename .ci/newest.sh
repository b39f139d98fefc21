#!/usr/bin/env bash
# The newest-versions environment: wopdsl with its extras at the newest releases the registry
# has (syrupy, pytest, textual, openai, starlette, uvicorn, ipywidgets …, nothing pinned), in a
# venv of its own beside the pinned .venv, running the tests of what users install those
# extras for: the pytest plugin and the shipped example (tests/testing), the terminal UI, the
# notebook view, the chat page, and the llm engine against the newest openai client. A
# release of a dependency that breaks users then breaks CI first. See docs/ci.md.
#
#   .ci/newest.sh            # (re)create .venv-newest, print the versions, run the tests
#
# Left out here, run in the pinned env only: the TUI's SVG screenshots (test_snapshots.py and
# the approval screen in test_tools.py; pytest-textual-snapshot pins syrupy 4.8, which would
# hold this env back) and tests needing services this env does
# not install (PostgreSQL, the real model). Everything but pytest's report goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${WOPDSL_NEWEST_VENV:-.venv-newest}"
PY="$VENV/bin/python"
EXTRAS="tui,jupyter,testing,server,llm,mcp"
# Test-only tools, also unpinned: the async plugin the suite's config names, and what the
# selected tests drive (hypothesis properties, notebooks, the browser).
TOOLS=(pytest-asyncio hypothesis nbclient nbformat selenium)
TESTS=(tests/testing tests/tui tests/jupyter tests/llm/test_run.py
       tests/server/test_page.py tests/server/test_web_stream.py)
SKIP=(--ignore=tests/tui/test_snapshots.py --ignore=tests/tui/test_postgres.py
      --deselect=tests/tui/test_tools.py::test_snapshot_the_ops_desk_asks_oncall
      -m "not real_model")

rm -rf "$VENV"
python3 -m venv "$VENV" >&2
"$PY" -m pip install --quiet --upgrade pip >&2
"$PY" -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[$EXTRAS]" "${TOOLS[@]}" >&2
"$PY" -m ipykernel install --sys-prefix --name python3 >/dev/null
echo "newest-versions env ($VENV):" >&2
.ci/versions.sh "$PY"
exec "$PY" -m pytest -p no:cacheprovider "${SKIP[@]}" "${TESTS[@]}"
