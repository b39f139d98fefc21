"""Steering from a notebook on a real kernel (DESIGN.md §24): ``await run.reply(..., steer=True)``.

The post returns as soon as it is saved, while the member's turn is still running; the turn
stops and runs again with the post among its triggers.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.jupyter.conftest import RunNotebook
from tests.jupyter.helpers import stdout

pytestmark = pytest.mark.slow

CELLS = {
    "council": '''
import asyncio

from wopdsl import Council, Post, Reply

started = asyncio.Event()
council = Council("board", task="Set the budget.")
council.room("board", members=["cfo", "me"])


@council.member(role="cfo")
async def cfo(turn):
    if not turn.triggers:
        started.set()
        await asyncio.sleep(3600)  # a long first draft, until someone steers it
    return Reply(summary="redrafted", posts=[Post(room="board", text="Budget: 2M")])


council.human("me")
''',
    "running": '''
run = council.start(store="memory:")
await started.wait()
print(run.status)
''',
    "steer": '''
post = await run.reply("@cfo the budget is fixed at 2M", room="board", steer=True)
print(post, run.status)  # saved at once: the turn is still being stopped
print(await run.wait())
''',
    "after": '''
print([(m.sender, m.text) for m in run.messages])
retried = [e["payload"]["lastError"]["code"] for e in run.events if e["type"] == "node.retried"]
started_again = [e["payload"]["triggers"] for e in run.events
                 if e["type"] == "node.started" and e.get("nodeId") == "cfo"]
print(retried, started_again)
''',
}


def test_a_notebook_steers_a_running_member(run_notebook: RunNotebook, tmp_path: Path) -> None:
    nb = new_notebook(cells=[new_code_cell(src.strip("\n"), id=cid) for cid, src in CELLS.items()])
    nbformat.validate(nb)
    nb = run_notebook(nb, tmp_path)

    assert stdout(nb, "running") == "running\n"
    assert stdout(nb, "steer") == "team/me/2/0 running\ncompleted\n"
    assert stdout(nb, "after") == (
        "[('me', '@cfo the budget is fixed at 2M'), ('cfo', 'Budget: 2M')]\n"
        "['STEERED'] [[], ['team/me/2/0']]\n")
