"""The live view and its reply box on a real kernel: following, clicks, refusals, fallback."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.jupyter.conftest import RunNotebook
from tests.jupyter.helpers import displays, live_view, result, stdout

pytestmark = pytest.mark.slow

CELLS = {
    "council": '''
import asyncio
import sys

from wopdsl import Council, Post, Reply

gate = asyncio.Event()
council = Council("gated", task="Ship 0.1.")
council.room("review", members=["writer", "me"])


@council.member(role="writer")
async def writer(turn):
    if not turn.triggers:
        await gate.wait()  # hold the run: the view is shown while it is running
        return Reply(summary="asked", posts=[Post(room="review", text="<b>Ready?</b> @me",
                                                  mentions=["me"])])
    return Reply(summary="done: " + turn.triggers[-1].text)


council.human("me")
''',
    # show() as a statement and the view as the last line: displayed once, not twice.
    "show": '''
run = council.start(store="memory:")
view = run.show()
view
''',
    "running": '''
print(run.status, view.following, view.reply_box is not None)
gate.set()
print(await run.wait())
''',
    # No view.wait(): the follower task alone brings the view up to date.
    "followed": '''
while view.last_sequence < len(run.events) - 1 or view.status != run.status:
    await asyncio.sleep(0.01)
print(view.status, view.renders > 1)
print("&lt;b&gt;Ready?&lt;/b&gt;" in view.html, "<b>Ready?</b>" in view.html)
''',
    "refused": '''
box = view.reply_box
box.text.value = "hello @nobody"
box.button.click()
await box.pending
print(box.error.value)
print(repr(box.text.value), run.status, len(run.messages))
''',
    "sent": '''
box.text.value = "Ship it @writer"
box.button.click()
await box.pending
print(box.sent, repr(box.text.value), repr(box.error.value))
print(await view.wait())
print(box.button.disabled, box.text.disabled)
''',
    "fallback": '''
saved = sys.modules["ipywidgets"]
sys.modules["ipywidgets"] = None  # as if the extra were not installed
try:
    other = council.start(store="memory:")
    fallback = other.show()
finally:
    sys.modules["ipywidgets"] = saved
print(fallback.widget is None, fallback.reply_box is None)
''',
    "fallback-wait": '''
await other.reply("ok @writer", room="review")
print(await fallback.wait())
''',
}


def test_live_view_and_reply_box(run_notebook: RunNotebook, tmp_path: Path) -> None:
    nb = new_notebook(cells=[new_code_cell(src.strip("\n"), id=cid) for cid, src in CELLS.items()])
    nbformat.validate(nb)
    nb = run_notebook(nb, tmp_path)

    assert len(nb.cells[1].outputs) == 1  # the view, displayed once
    assert stdout(nb, "running") == "running True True\nwaiting-input\n"
    assert stdout(nb, "followed") == "waiting-input True\nTrue False\n"

    # A refused post shows its reason under the box, keeps the text, appends nothing.
    error, kept = stdout(nb, "refused").rsplit("\n", 2)[:2]
    assert "error[validation_error]" in error and "@nobody" in error
    assert kept == "'hello @nobody' waiting-input 1"

    # An accepted one clears the box; the run completes and the box closes.
    assert stdout(nb, "sent") == "['team/me/2/0'] '' ''\ncompleted\nTrue True\n"
    html, models = live_view(nb, "show")
    assert 'data-status="completed"' in html
    assert "done: Ship it @writer" in html
    text = next(m for m in models if m["model_name"] == "TextModel")
    assert text["state"]["value"] == "" and text["state"]["disabled"] is True

    # Front-ends without widgets see the view as HTML and as text, never a widget's repr.
    (shown,) = displays(nb, "show")
    assert shown.data["text/plain"].startswith("council gated · run ")
    assert "VBox" not in shown.data["text/plain"]
    # view.wait() shows the view under its own cell too, as the run stopped.
    (again,) = displays(nb, "sent")
    assert again.data["application/vnd.jupyter.widget-view+json"] == \
        shown.data["application/vnd.jupyter.widget-view+json"]
    assert 'data-status="completed"' in again.data["text/html"]
    assert again.data["text/plain"].splitlines()[0].endswith("· completed · 19 events")
    assert "  me team/me/2/0 @writer: Ship it @writer" in again.data["text/plain"]

    # Without ipywidgets: an HTML display updated in place, and how to get the reply box.
    assert stdout(nb, "fallback") == "True True\n"
    (shown,) = displays(nb, "fallback")
    fallback_html = shown.data["text/html"]
    assert "wopdsl[jupyter]" in fallback_html and "for a reply box" in fallback_html
    # Updated in place by the later cell: the saved output shows the end of the run.
    assert 'data-status="completed"' in fallback_html
    assert "done: ok @writer" in fallback_html
    assert stdout(nb, "fallback-wait") == "completed\n"
    assert shown.data["text/plain"].startswith("council gated · run ")
    assert "IPython.core.display" not in shown.data["text/plain"]
    (again,) = displays(nb, "fallback-wait")  # The same display, shown under the waiting cell.
    assert again.data["text/html"] == fallback_html


FAILING = '''
from wopdsl import Council

council = Council("breaks", task="Try.")
council.room("desk", members=["writer"])


@council.member(role="writer")
def writer(turn):
    raise ValueError("no <draft> today")


run = await council.arun(store="memory:")
run
'''


def test_a_failed_handlers_traceback_opens_on_demand(run_notebook: RunNotebook,
                                                     tmp_path: Path) -> None:
    nb = new_notebook(cells=[new_code_cell(FAILING.strip("\n"), id="failing")])
    nb = run_notebook(nb, tmp_path)
    shown = result(nb, "failing", "text/html")
    assert 'data-status="failed"' in shown
    start = shown.index('<details class="wop-traceback" data-member="writer"')
    block = shown[start:shown.index("</details>", start)]
    assert "Traceback (most recent call last):" in block
    assert "raise ValueError(&quot;no &lt;draft&gt; today&quot;)" in block
    assert "ValueError: no &lt;draft&gt; today" in block
