"""Tool calls and approvals on the chat page, in a real headless Chromium on a real `wop serve`.

The sre (an llm member; the host's real ``openai`` client calls the scripted loopback model
server) asks to restart a service; the tool needs oncall's approval. The page approves or
rejects over the host's approval endpoint; the tool counts its effects in ``restarts.log``
and answers with HTML that would run script if the page inserted it as markup.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.server.conftest import ALICE, BOB
from tests.server.web_browser import Page, wait_for

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from wopdsl.testing.model_server import Answer, ScriptedModelServer, ToolCalls

pytestmark = pytest.mark.slow
DESK = Path(__file__).resolve().parent / "web_tools"
KEY_ENV = "WOPDSL_TEST_MODEL_KEY"
HOSTILE = "<img src=x onerror=window.__pwned=1><script>window.__pwned=2</script>"
REPORT = Answer({"summary": "done", "posts": [
    {"roomId": "ops", "text": "Restart handled.", "mentions": []}]})

_CALLS_JS = """return [...document.querySelectorAll('#tool-calls li')].map(li => [li.dataset.call,
  li.querySelector('.head').textContent, li.querySelector('.state').textContent,
  li.querySelector('.outcome') ? li.querySelector('.outcome').textContent : null]);"""


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """The scripted OpenAI-compatible server the host's llm member calls."""
    with ScriptedModelServer() as server:
        yield server


def _desk(page: Callable[..., Page], model: ScriptedModelServer, **kwargs: object) -> Page:
    return page(councils=DESK, env={"OPENAI_BASE_URL": model.url, KEY_ENV: "sk-test-0000"},
                **kwargs)


def _restarts(p: Page) -> list[str]:
    log = p.served.store.parent / "restarts.log"  # the host's folder
    return log.read_text().splitlines() if log.exists() else []


def _asked(p: Page) -> object:
    return p.find("#approvals").is_displayed() and p.find("#approvals .approval")


def test_approve_from_the_page_makes_the_call_once(page: Callable[..., Page],
                                                   model_server: ScriptedModelServer) -> None:
    model_server.add(ToolCalls(("restart_service", {"service": "api"})), REPORT)
    p = _desk(page, model_server)
    run_id = p.start("desk")
    box = wait_for("the approval box", lambda: _asked(p))
    wait_for("the run to wait", lambda: p.status() == "waiting-approval")
    assert _restarts(p) == []
    assert box.find_element("css selector", ".what").text == (
        'oncall to decide: sre asks to call restart_service: restart_service({"service": "api"})')
    calls = p.js(_CALLS_JS)
    assert calls == [["call/sre/1/0", 'sre→ restart_service({"service": "api"})',
                      "waiting for oncall", None]]
    p.shot("web-approval")
    box.find_element("css selector", "button.approve").click()
    wait_for("the run's end", lambda: p.status() == "completed", timeout=30)
    assert _restarts(p) == ["restarted api"]  # exactly once
    wait_for("the approval box to go", lambda: not p.find("#approvals").is_displayed())
    (call_id, _head, state, outcome), = wait_for(
        "the result", lambda: [c for c in p.js(_CALLS_JS) if c[3] is not None])
    assert call_id == "call/sre/1/0" and state.startswith("approved by oncall · ok · ")
    # The tool's HTML is shown as text; nothing of it ran or became an element.
    assert outcome == f"{HOSTILE} api restarted"
    assert p.js("return window.__pwned") is None
    assert p.finds("#tool-calls img, #tool-calls script, #approvals img") == []
    status, events, _ = p.served.request("GET", f"/v1/runs/{run_id}/events")
    assert status == 200, events
    assert [e["type"] for e in events["events"]].count("approval.granted") == 1
    p.driver.refresh()  # a reload replays the log: the same call, decided, no box
    wait_for("the call again", lambda: p.js(_CALLS_JS) and p.js(_CALLS_JS)[0][2] == state)
    assert not p.find("#approvals").is_displayed()


def test_reject_from_the_page_with_tokens(page: Callable[..., Page], tokens_file: Path,
                                          model_server: ScriptedModelServer) -> None:
    model_server.add(ToolCalls(("restart_service", {"service": "db"})), REPORT)
    p = _desk(page, model_server, args=("--tokens", str(tokens_file)), token=ALICE)
    status, run, _ = p.served.request("POST", "/v1/runs", {"workflowId": "desk"}, token=BOB)
    assert status == 201, run
    # Bob started the run, but oncall speaks for alice only: Bob may not decide (said).
    p.open(f"/runs/{run['runId']}")
    wait_for("the token prompt", lambda: p.find("#token-input").is_displayed())
    p.find("#token-input").send_keys(BOB)
    p.find("#token-form button").click()
    box = wait_for("the approval box", lambda: _asked(p))
    note = box.find_element("css selector", ".note").text
    assert note == "You are signed in as bob; only alice may decide as oncall.", note
    assert not box.find_element("css selector", "button.approve").is_enabled()
    assert not box.find_element("css selector", "button.reject").is_enabled()
    p.shot("web-approval-not-allowed")
    # Alice (a guest of the run: oncall names her), in a tab of her own, rejects.
    p.driver.switch_to.new_window("tab")
    p.open(f"/runs/{run['runId']}")
    wait_for("the token prompt", lambda: p.find("#token-input").is_displayed())
    p.find("#token-input").send_keys(ALICE)
    p.find("#token-form button").click()
    box = wait_for("the approval box", lambda: _asked(p))
    box.find_element("css selector", ".reason").send_keys("not during the sale")
    box.find_element("css selector", "button.reject").click()
    wait_for("the run's end", lambda: p.status() == "completed", timeout=30)
    assert _restarts(p) == []  # never called
    tool = next(m for m in model_server.requests[1].body["messages"] if m["role"] == "tool")
    # The log (and so the model) names the principal who decided: alice, for oncall.
    assert tool["content"] == ("error (REJECTED): not called: alice rejected this call: not "
                               "during the sale")
    (_id, _head, state, _outcome), = wait_for(
        "the rejection", lambda: [c for c in p.js(_CALLS_JS) if "forbidden" in c[2]])
    assert state.startswith("rejected by alice: not during the sale · forbidden REJECTED · ")
    assert ALICE not in p.driver.page_source and BOB not in p.driver.page_source
    body = json.dumps(model_server.requests[1].body)
    assert ALICE not in body
