"""The official AG-UI TypeScript client (``@ag-ui/client``), run with node, for the host tests.

``.ci/agui.sh`` installs it from the npm registry into a cache folder and prints the folder;
``$WOPDSL_TEST_AGUI_CLIENT`` names it. Tests that need it skip without it, and say how to get
it; in CI (``CI=true``) they fail instead, never skip. ``drive`` runs ``driver.mjs`` (our own
code) with a plan of chat steps and returns what the client saw.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ENV = "WOPDSL_TEST_AGUI_CLIENT"
DRIVER = Path(__file__).resolve().parent / "driver.mjs"


def agui_client() -> Path:
    """The folder holding ``node_modules/@ag-ui/client``, or skip (fail in CI)."""
    folder = Path(os.environ.get(ENV, "") or "/nonexistent")
    node = shutil.which("node")
    if node and (folder / "node_modules" / "@ag-ui" / "client" / "package.json").is_file():
        return folder
    reason = (f"no AG-UI client: set {ENV} (e.g. {ENV}=\"$(.ci/agui.sh)\", which installs "
              "@ag-ui/client from the npm registry into a cache folder)"
              if node else "no node on PATH (the AG-UI client tests run @ag-ui/client)")
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason}; CI never skips these tests", pytrace=False)
    pytest.skip(reason)


def drive(url: str, thread: str, steps: list[dict[str, Any]], *,
          token: str | None = None, timeout: float = 180) -> list[dict[str, Any]]:
    """Run the chat ``steps`` with ``HttpAgent`` against ``url``; return each step's record."""
    plan = {"url": url, "threadId": thread, "steps": steps, "token": token}
    done = subprocess.run(["node", str(DRIVER), str(agui_client())], input=json.dumps(plan),
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr
    result: list[dict[str, Any]] = json.loads(done.stdout)["steps"]
    return result
