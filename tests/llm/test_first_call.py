"""The first model call of a process does not block the event loop: openai is imported and the
CA bundle loaded in a worker thread (in a fresh process, where nothing is loaded yet)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent("""
    import json, ssl, sys, threading

    seen = []

    def hook(event, args):
        if event == "import" and args[0] == "openai":
            seen.append(["import openai", threading.current_thread().name])

    sys.addaudithook(hook)
    load = ssl.SSLContext.load_verify_locations

    def observed(self, *args, **kwargs):
        seen.append(["load CA bundle", threading.current_thread().name])
        return load(self, *args, **kwargs)

    ssl.SSLContext.load_verify_locations = observed

    import asyncio, os
    from wopdsl import Council
    from wopdsl.testing.model_server import Answer, ScriptedModelServer

    assert "openai" not in sys.modules
    with ScriptedModelServer([Answer({"summary": "ok"})]) as server:
        os.environ["OPENAI_BASE_URL"] = server.url
        council = Council("first", task="t")
        council.model("m", model="x")
        council.add_member("solo", role="r", engine="llm", model="m")
        run = asyncio.run(council.arun(store="memory:"))
    print(json.dumps({"status": run.status, "seen": seen}))
""")


def test_the_first_call_imports_openai_and_loads_certificates_off_the_loop(
        tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == "completed"
    steps = {what for what, _thread in report["seen"]}
    assert steps == {"import openai", "load CA bundle"}
    assert all(thread != "MainThread" for _what, thread in report["seen"]), report
