"""The chat page with a model member: streamed tokens and usage, in a real headless Chromium.

A real `wop serve` runs a council whose writer is an ``engine = "llm"`` member; its profile
has no base_url, so the host's real ``openai`` client calls ``$OPENAI_BASE_URL`` = the scripted
loopback model server of this test, which streams the answer slowly in many SSE chunks.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.server.web_browser import Page, api_messages, wait_for

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")

from wopdsl.testing.model_server import Answer, ScriptedModelServer

STUDIO = Path(__file__).resolve().parent / "web_llm"
KEY_ENV = "WOPDSL_TEST_MODEL_KEY"
HOSTILE = "<img src=x onerror=window.__pwned=1>"
TEXT = (f"Draft: {HOSTILE} The beta ships on Friday to the forty teams of the pilot, with the "
        "rollback plan and the status page ready. @founder, do you approve this launch note?")
ANSWER = {"summary": "Drafted the launch note.",
          "posts": [{"roomId": "studio", "text": TEXT, "mentions": ["founder"]}]}
USAGE = (1200, 80)
BAD = "Sure! Here is the launch note you asked for, in plain words rather than JSON."
BAD_USAGE = (900, 20)

_ROSTER_JS = """return Object.fromEntries([...document.querySelectorAll('#roster tbody tr')].map(
  tr => [tr.dataset.member, [...tr.cells].map(td => td.textContent)]));"""
_STREAMS_JS = """return [...document.querySelectorAll('#streams .streaming')].map(d =>
  [d.dataset.member, d.querySelector('.text').textContent]);"""


def _roster(p: Page) -> dict[str, list[str]]:
    """The roster's cells (member, role, state, turns, usage) by member."""
    return dict(p.js(_ROSTER_JS))


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """The scripted OpenAI-compatible server the host's llm member calls."""
    with ScriptedModelServer() as server:
        yield server


def test_streamed_tokens_arrive_live_then_the_message_replaces_them(
        page: Callable[..., Page], model_server: ScriptedModelServer) -> None:
    # The first answer is not a turn result (plain text: shown as it is while it streams);
    # the member re-asks, and the second answer streams the post's text.
    model_server.add(Answer(BAD, usage=BAD_USAGE, chunks=8, chunk_delay_s=0.15),
                     Answer(ANSWER, usage=USAGE, chunks=24, chunk_delay_s=0.2), member="writer")
    p = page(councils=STUDIO, env={"OPENAI_BASE_URL": model_server.url,
                                   KEY_ENV: "sk-test-0000"})
    run_id = p.start("studio")
    full = Answer(ANSWER).text
    partials: list[str] = []
    shot = False
    deadline = time.monotonic() + 30
    while not any(m[1] == "writer" for m in p.messages()):
        assert time.monotonic() < deadline, f"no message from the writer; saw {partials}"
        streams = p.js(_STREAMS_JS)
        if streams:
            assert [s[0] for s in streams] == ["writer"], streams
            text = streams[0][1]
            if text and (not partials or partials[-1] != text):
                partials.append(text)
            if HOSTILE in text and not shot:
                assert _roster(p)["writer"][2] == "speaking"
                p.shot("web-streaming")
                shot = True
        time.sleep(0.05)
    # Several partial states, each a growing prefix of the post's text (the JSON around it is
    # not shown), none of it markup; the re-asked answer started over (nothing of the first).
    bad = [t for t in partials if BAD.startswith(t)]
    good = [t for t in partials if TEXT.startswith(t)]
    assert bad and partials == bad + good, partials
    assert len(good) >= 2, partials
    assert all(len(a) < len(b) for a, b in itertools.pairwise(good)), partials
    assert any(HOSTILE in t for t in partials) and shot, partials
    assert p.js("return window.__pwned") is None
    assert p.finds("#messages img, #messages script") == []
    # The saved message replaced the placeholder: one message, no stream left, no doubling.
    wait_for("the placeholder to go", lambda: p.js(_STREAMS_JS) == [])
    mine = [m for m in p.messages() if m[1] == "writer"]
    assert [m[2] for m in mine] == [TEXT]
    assert [m[0] for m in p.messages()] == api_messages(p.served, run_id, "studio")
    assert p.finds("#list .msg .text img") == []
    mention = p.finds("#list .msg .mention")
    assert [m.text for m in mention] == ["@founder"]
    # The roster shows the writer's tokens and cost, as the host reported them.
    status, page_, _ = p.served.request("GET", f"/v1/runs/{run_id}/events")
    assert status == 200, page_
    usage = [e["payload"] for e in page_["events"] if e["type"] == "provider.usage"]
    assert [(u["nodeId"], u["totalTokens"]) for u in usage] == [
        ("writer", sum(BAD_USAGE)), ("writer", sum(USAGE))]
    cost = sum((i * 2.5 + o * 10) / 1e6 for i, o in (BAD_USAGE, USAGE))
    assert sum(u["costEstimateUsd"] for u in usage) == pytest.approx(cost)
    tokens = sum(BAD_USAGE) + sum(USAGE)
    chunks = [e for e in page_["events"] if e["type"] == "output.chunk"]
    assert len(chunks) >= 4 and "".join(e["payload"]["chunk"] for e in chunks) == BAD + full
    wait_for("waiting for the founder", lambda: p.status() == "waiting-input")
    wait_for("the writer's usage", lambda: _roster(p)["writer"][4])
    roster = _roster(p)
    assert roster["writer"][4] == f"{tokens} tok / ${cost:.4f}", roster
    assert roster["writer"][2] != "speaking" and roster["writer"][3] == "1 / 2", roster
    assert roster["founder"][4] == "", roster  # a person uses no model tokens
    assert json.loads(full)["posts"][0]["text"] == TEXT
    # A reload replays the log: the same single message, the same usage, no placeholder.
    p.driver.refresh()
    wait_for("the message again", lambda: [m[2] for m in p.messages()] == [TEXT])
    assert p.js(_STREAMS_JS) == []
    wait_for("the usage again", lambda: _roster(p)["writer"][4] == roster["writer"][4])
    p.shot("web-streamed-done")
    # The page's reading of a cut-off answer, at every cut: always a prefix of the text.
    cuts = p.driver.execute_async_script(_CUTS_JS, full, TEXT)
    assert cuts.get("error") is None and cuts["bad"] == [], cuts
    assert cuts["final"] == TEXT and cuts["plain"] == "plain words", cuts


_CUTS_JS = """const [full, text, done] = arguments;
import('/ui/partial.js').then(({ streamedText }) => {
  const bad = [];
  let last = "";
  for (let n = 0; n <= full.length; n++) {
    const got = streamedText(full.slice(0, n), "studio");
    if (!text.startsWith(got) || got.length < last.length) bad.push([n, got]);
    last = got;
  }
  done({ bad, final: streamedText(full, "studio"), plain: streamedText("plain words", "studio") });
}, (err) => done({ error: String(err) }));"""
