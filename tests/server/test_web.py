"""The chat page of `wop serve`, in a real headless Chromium against a real `wop serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import ALICE, BOB
from tests.server.web_browser import WEB_COUNCILS, api_messages, host_path, wait_for


def test_start_a_run_watch_post_a_turn_and_see_it_finish(page: Any) -> None:
    p = page(env={"WEB_DELAY": "0.3"})
    p.open("/")
    wait_for("the councils", lambda: len(p.finds("#councils li")) == 2)
    p.shot("web-home")
    run_id = p.start("board")
    assert p.served.request("GET", f"/v1/runs/{run_id}")[0] == 200
    wait_for("the greeting", lambda: any("Should we ship" in t for t in p.texts()))
    assert p.messages()[0][1] == "strategist"
    assert p.js("return [...document.querySelector('#list .msg').querySelectorAll('.mention')]"
                ".map(e => e.textContent)") == ["@founder"]
    assert p.attributes("#tabs button", "data-room") == ["board", "ops"]
    wait_for("waiting for the founder", lambda: p.status() == "waiting-input")
    roster = p.texts_by("#roster tbody tr", "data-member")
    assert set(roster) == {"founder", "strategist"}
    snap = p.served.request("GET", f"/v1/runs/{run_id}")[1]["nodeStates"]
    assert f"{snap['strategist']['turns']} / 4" in roster["strategist"]
    assert "founder (human)" in roster["founder"] and "0 / 4" in roster["founder"]
    # The other room filled meanwhile; its tab counts what was not read.
    wait_for("the ops room's unread badge", lambda: p.find('#tabs [data-room="ops"] .unread'))
    p.click('#tabs [data-room="ops"]')
    wait_for("the analyst's report", lambda: any("99.2%" in t for t in p.texts()))
    assert "no human member" in p.find("#composer-note").text
    assert not p.find("#text").is_enabled()
    p.shot("web-ops-room")
    p.click('#tabs [data-room="board"]')
    wait_for("the board room", lambda: any("Should we ship" in t for t in p.texts()))
    # @-completion offers the room's members.
    box = p.find("#text")
    assert box.is_enabled()
    box.send_keys("Yes, ship it. @str")
    wait_for("the completion list", lambda: p.find("#complete").is_displayed())
    assert [li.get_attribute("data-member") for li in p.finds("#complete li")] == ["strategist"]
    p.shot("web-composer")
    from selenium.webdriver.common.keys import Keys

    box.send_keys(Keys.TAB)
    assert box.get_attribute("value") == "Yes, ship it. @strategist "
    box.send_keys("announce it.")
    p.find("#send").click()
    wait_for("the founder's message", lambda: any(
        m[1] == "founder" and m[2] == "Yes, ship it. @strategist announce it."
        for m in p.messages()))
    wait_for("the strategist's answer", lambda: any(t.startswith("Noted: Yes") for t in p.texts()))
    wait_for("the run's end", lambda: p.status() == "completed", timeout=30)
    assert not box.is_enabled() and "completed" in p.find("#composer-note").text
    assert p.find("#refusal").is_displayed() is False
    p.shot("web-run-completed")
    # The page shows exactly the run's messages, in order.
    assert [m[0] for m in p.messages()] == api_messages(p.served, run_id, "board")
    # The run shows up under "runs started from this browser".
    p.open("/")
    wait_for("the recent run", lambda: run_id in p.find("#recent").text)


def test_a_refused_turn_shows_its_reason_and_appends_nothing(page: Any) -> None:
    p = page()
    run_id = p.start("board")
    wait_for("waiting for the founder", lambda: p.status() == "waiting-input")
    before = api_messages(p.served, run_id, "board")
    long = "Ship it on Friday, no more waiting. " * 7
    p.find("#text").send_keys(long)
    p.find("#send").click()
    refusal = wait_for("the refusal", lambda: p.find("#refusal").is_displayed() and
                       p.find("#refusal").text)
    assert "validation_error" in refusal and "turn_schema" in refusal, refusal
    assert "too long" in refusal
    assert p.find("#text").get_attribute("value") == long  # kept for editing
    p.shot("web-refusal")
    assert api_messages(p.served, run_id, "board") == before
    assert p.status() == "waiting-input"


def test_text_from_members_and_people_is_never_markup(page: Any) -> None:
    p = page()
    run_id = p.start("board")
    wait_for("waiting for the founder", lambda: p.status() == "waiting-input")
    hostile = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> '
               '@strategist')
    status, answer, _ = p.served.request(
        "POST", f"/v1/runs/{run_id}/interrupts/room:board",
        {"resumeValue": {"content": {"text": hostile, "mentions": ["strategist"]}}})
    assert status == 200, answer
    wait_for("the echo", lambda: f"Noted: {hostile}" in p.texts())
    assert hostile in p.texts()
    assert p.js("return window.__pwned") is None
    assert p.finds("#list img") == [] and p.finds("#list script") == []
    assert p.finds("#messages img, #messages script") == []


def test_reload_mid_run_loses_and_doubles_nothing_with_a_token(page: Any, tokens_file: Path
                                                                ) -> None:
    p = page(args=("--tokens", str(tokens_file)), env={"WEB_DELAY": "0.4"}, token=ALICE)
    p.open("/")
    form = wait_for("the token prompt", lambda: p.find("#token-view").is_displayed() and
                    p.find("#token-input"))
    p.shot("web-token")
    form.send_keys(ALICE)
    p.find("#token-form button").click()
    run_id = p.start("board")
    assert "alice" in p.find("#who").text
    wait_for("the greeting", lambda: p.messages())
    p.driver.refresh()  # the token is kept for the tab (sessionStorage): no prompt again
    wait_for("the greeting again", lambda: p.messages())
    assert not p.find("#token-view").is_displayed()
    wait_for("waiting for the founder", lambda: p.status() == "waiting-input")
    p.find("#text").send_keys("Ship it, @strategist")
    p.find("#send").click()
    wait_for("the founder's message", lambda: any(m[1] == "founder" for m in p.messages()))
    p.driver.refresh()
    wait_for("the run's end", lambda: p.status() == "completed", timeout=30)
    for room in ("board", "ops"):
        p.click(f'#tabs [data-room="{room}"]')
        want = api_messages(p.served, run_id, room)
        wait_for(f"all of {room}", lambda: len(p.messages()) == len(want))  # noqa: B023
        ids = [m[0] for m in p.messages()]
        assert ids == want and len(set(ids)) == len(ids)


def test_a_principal_that_may_not_speak_sees_the_composer_disabled(page: Any, tokens_file: Path
                                                                   ) -> None:
    p = page(args=("--tokens", str(tokens_file)), token=BOB)
    status, run, _ = p.served.request("POST", "/v1/runs", {"workflowId": "board"})
    assert status == 201, run
    p.open(f"/runs/{run['runId']}")
    wait_for("the token prompt", lambda: p.find("#token-view").is_displayed())
    p.find("#token-input").send_keys("not-a-token-at-all")
    p.find("#token-form button").click()
    wait_for("the refusal of a bad token", lambda: "refused" in p.find("#token-error").text)
    p.find("#token-input").send_keys(BOB)
    p.find("#token-form button").click()
    wait_for("the greeting", lambda: p.messages())
    note = wait_for("the reason", lambda: p.find("#composer-note").is_displayed() and
                    p.find("#composer-note").text)
    assert "bob" in note and "alice" in note, note
    assert not p.find("#text").is_enabled() and not p.find("#send").is_enabled()
    p.shot("web-not-allowed")
    # No token appears on the page.
    assert BOB not in p.driver.page_source and ALICE not in p.driver.page_source


@pytest.mark.slow
def test_ten_thousand_messages_stay_usable(page: Any) -> None:
    p = page(env={"FLOOD_TURNS": "10", "FLOOD_POSTS": "1000"})
    run_id = p.start("flood")
    wait_for("the run's end", lambda: p.status() == "completed", timeout=120)
    total = len(api_messages(p.served, run_id, "hall"))
    assert total >= 10_000
    wait_for("every message", lambda: f"({total - len(p.messages())} more)" in
             p.find("#earlier").text, timeout=60)
    rendered = len(p.messages())
    assert 0 < rendered <= 300, rendered
    assert p.messages()[-1][2] == "Go on, @talker."
    took = p.js("""const t = performance.now(); document.getElementById('earlier').click();
                   return performance.now() - t;""")
    assert len(p.messages()) <= 300 and p.find("#later").is_displayed()
    assert p.messages()[0][2] != p.texts()[-1]
    p.find("#later").click()
    assert p.messages()[-1][2] == "Go on, @talker." and len(p.messages()) <= 300
    p.shot("web-ten-thousand")
    print(f"10k messages: {rendered} nodes rendered; 'show earlier' took {took:.1f} ms")


@pytest.mark.parametrize("auth", [False, True], ids=["eventsource", "fetch-with-token"])
def test_a_host_restart_mid_run_resumes_the_stream_after_the_last_event(
        page: Any, serve: Any, tokens_file: Path, auth: bool) -> None:
    args = ("--tokens", str(tokens_file)) if auth else ()
    p = page(args=args, env={"WEB_DELAY": "0.5"}, token=ALICE if auth else None)
    if auth:
        p.open("/")
        wait_for("the token prompt", lambda: p.find("#token-input")).send_keys(ALICE)
        p.find("#token-form button").click()
    run_id = p.start("board")
    wait_for("the greeting", lambda: p.messages())
    url = p.served.url
    assert p.served.stop() == 0
    wait_for("the page to notice", lambda: "reconnecting" in p.find("#conn").text)
    again = serve(WEB_COUNCILS, args=(*args, "--port", url.rsplit(":", 1)[1]),
                  store=p.served.store, env={"PYTHONPATH": host_path(WEB_COUNCILS),
                                             "WEB_DELAY": "0.5"},
                  token=p.served.token, wait=False)
    again.url = url  # the same address, so the page's reconnects reach it
    wait_for("the host again", lambda: again.request("GET", "/.well-known/openwop")[0] == 200)
    p.served = again
    wait_for("the live stream again", lambda: p.find("#conn").text == "live")
    wait_for("waiting for the founder", lambda: p.status() == "waiting-input")
    p.find("#text").send_keys("Go, @strategist")
    p.find("#send").click()
    wait_for("the run's end", lambda: p.status() == "completed", timeout=30)
    for room in ("board", "ops"):
        p.click(f'#tabs [data-room="{room}"]')
        want = api_messages(p.served, run_id, room)
        wait_for(f"all of {room}", lambda: [m[0] for m in p.messages()] == want)  # noqa: B023
