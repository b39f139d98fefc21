"""The example chat page (``examples/agui-chat``) works against `wop serve`.

Its logic (``chat-core.mjs``, the official ``@ag-ui/client``) is driven in node against a real
host: a task, the person's turn from the chat box, a tool call accepted with its button. Its
server (``serve.mjs``) passes the page's requests on with the bearer token it holds, and
refuses what a page of another site sends.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.agui.client import agui_client
from tests.agui.http import parse_sse, run_input
from tests.server.conftest import ALICE, COUNCILS, free_port

pytest.importorskip("ag_ui", reason="needs ag-ui-protocol (the server extra)")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agui-chat"

SCRIPT = """
import { createChat } from "./chat-core.mjs";
const [url, token, ...steps] = JSON.parse(process.argv[1]);
const chat = createChat({ url, headers: { Authorization: `Bearer ${token}` },
                          threadId: "example-thread" });
const seen = [];
for (const [kind, value] of steps) {
  if (kind === "send") await chat.send(value);
  else await chat.decide(chat.agent.pendingInterrupts[0].id, value);
  seen.push({ messages: chat.agent.messages.map((m) => [m.name ?? m.role, m.content ?? ""]),
              interrupts: chat.agent.pendingInterrupts.map((i) => i.reason),
              status: chat.agent.state.status });
}
process.stdout.write(JSON.stringify(seen));
"""


def _page_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "page"
    folder.mkdir()
    for name in ("chat-core.mjs", "serve.mjs", "index.html"):
        shutil.copy(EXAMPLE / name, folder / name)
    (folder / "node_modules").symlink_to(agui_client() / "node_modules")
    return folder


def test_the_example_chats_with_a_council_and_its_person(serve: Any, tokens_file: Path,
                                                         tmp_path: Path) -> None:
    folder = _page_folder(tmp_path)
    served = serve(COUNCILS, args=("--tokens", str(tokens_file)), token=ALICE)
    plan = [f"{served.url}/agui/desk", ALICE, ["send", "Where is my parcel?"],
            ["send", "It never came, @bot"]]
    done = subprocess.run(["node", "--input-type=module", "-e", SCRIPT, json.dumps(plan)],
                          cwd=folder, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    asked, answered = json.loads(done.stdout)
    assert asked["interrupts"] == ["human_turn"] and asked["status"] == "waiting-input"
    assert answered["interrupts"] == [] and answered["status"] == "completed"
    assert answered["messages"][1:] == [["bot", "Hello! What do you need, @visitor?"],
                                        ["visitor", "It never came, @bot"],
                                        ["bot", "You asked: It never came, @bot"]]


def test_the_example_server_passes_the_page_on_with_its_token(serve: Any, tokens_file: Path,
                                                              tmp_path: Path) -> None:
    folder = _page_folder(tmp_path)
    served = serve(COUNCILS, args=("--tokens", str(tokens_file)), token=ALICE)
    port = free_port()
    env = {**os.environ, "WOP_URL": served.url, "WOP_TOKEN": ALICE, "PORT": str(port)}
    page = subprocess.Popen(["node", "serve.mjs"], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert page.stdout is not None
        assert b"chat page on" in page.stdout.readline()
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(base + "/", timeout=10) as answer:
            assert b"/dist/chat.js" in answer.read()

        def send(headers: dict[str, str]) -> tuple[int, str]:
            request = urllib.request.Request(
                f"{base}/agui/desk", data=json.dumps(run_input("via-page", "Hi")).encode(),
                method="POST", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    return answer.status, answer.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read().decode()

        assert send({"Content-Type": "application/json",
                     "Origin": "http://evil.example"})[0] == 403
        assert send({"Content-Type": "text/plain"})[0] == 403
        status, body = send({"Content-Type": "application/json", "Origin": base})
        assert status == 200
        events = parse_sse(body)
        assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_FINISHED"
        assert ALICE not in body
    finally:
        page.terminate()
        page.wait(10)
        if page.stdout is not None:
            page.stdout.close()
