"""An a2a member's agent asks (``input-required``): answered from the TUI and from a notebook.

The question waits like a person's turn in every view: the person who may answer it is
"waiting for input" in the TUI's roster and status line (and gets the keyboard, in the
question's room) and in the notebook's status line, roster and reply box. The real test
agent (official SDK, mode ``ask``) gets the answer on the same task.
"""

from __future__ import annotations

import json

import pytest

from tests.a2a.conftest import TOKEN, received
from tests.a2a.test_ask import QUESTION, _council

ASKED = f"analyst's agent asks: {QUESTION}"


async def test_the_tui_shows_the_question_waiting_and_answers_it(tmp_path, agent, log):
    pytest.importorskip("textual")
    from wopdsl_tui import CouncilApp
    from wopdsl_tui.widgets import Composer, Notice, Roster, StatusLine

    import wopdsl
    from tests.tui.conftest import finished, room_texts, settle, waiting

    app = CouncilApp(wopdsl.load(_council(tmp_path, agent, boss_rooms=("side", "market"))),
                     store=tmp_path / "runs.db", deterministic=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, waiting(app))
        # As for a person's turn: the question's room is active, the keyboard is the boss's.
        assert app.active_room == "market"
        assert app.focused is app.query_one(Composer)
        assert "boss → market · your turn:" in str(app.query_one(Notice).render())
        assert "waiting for boss" in str(app.query_one(StatusLine).render())
        roster = str(app.query_one(Roster).render()).splitlines()
        rows = {line.split()[0]: " ".join(line.split()[1:]) for line in roster
                if line and not line.startswith(" ")}
        assert rows["boss"] == "waiting for input"
        assert rows["analyst"] == "waiting for input"
        assert room_texts(app, "market")[-1] == ("system", ASKED)
        await pilot.press(*"Germany", "enter")
        await settle(pilot, finished(app))
        assert room_texts(app, "market")[-2:] == [("boss", "Germany"),
                                                  ("analyst", "Sized the Germany market.")]
        assert "waiting" not in str(app.query_one(StatusLine).render())
    first, answer = received(log)
    assert (answer["taskId"], answer["text"]) == (first["taskId"], "Germany")


CELLS = {
    "start": '''
import wopdsl

run = wopdsl.load(COUNCIL).start(store=STORE)
view = run.show()
view
''',
    "asked": '''
print(await view.wait())
print(view.text.splitlines()[1])
print(view.text.splitlines()[2])
print(view.reply_box.member.value, view.reply_box.room.value)
print([(row.id, row.state) for row in view_rows()])
''',
    "answered": '''
await run.reply("Germany")
print(await run.wait())
print([(m.sender, m.text) for m in run.messages if m.room == "market"][-2:])
''',
}


@pytest.mark.slow
def test_a_notebook_shows_the_question_waiting_and_answers_it(tmp_path, agent, log,
                                                              run_notebook):
    pytest.importorskip("ipywidgets")
    from nbformat.v4 import new_code_cell, new_notebook

    from tests.jupyter.helpers import displays, stdout

    council = _council(tmp_path, agent, boss_rooms=("side", "market"))
    setup = (f"COUNCIL = {str(council)!r}\nSTORE = {str(tmp_path / 'runs.db')!r}\n"
             "from wopdsl.projections.notebook_view import run_view\n"
             "def view_rows():\n    return run_view(run).roster\n")
    nb = new_notebook(cells=[new_code_cell(setup, id="setup"),
                             *(new_code_cell(src.strip("\n"), id=cid)
                               for cid, src in CELLS.items())])
    nb = run_notebook(nb, tmp_path)
    assert stdout(nb, "asked").splitlines() == [
        "waiting-input",
        "waiting for input from boss",
        f"analyst's agent asks in room market: {QUESTION}",
        "boss market",
        "[('writer', 'done'), ('outsider', 'idle'), ('analyst', 'waiting'), "
        "('boss', 'waiting')]",
    ]
    assert stdout(nb, "answered").splitlines() == [
        "completed", "[('boss', 'Germany'), ('analyst', 'Sized the Germany market.')]"]
    (shown,) = displays(nb, "asked")  # view.wait() shows the view as the run stopped
    assert "waiting for input from <b>boss</b>" in shown.data["text/html"]
    assert f"analyst's agent asks in room <b>market</b>: {QUESTION}" in shown.data["text/html"]
    first, answer = received(log)
    assert (answer["taskId"], answer["text"]) == (first["taskId"], "Germany")
    assert TOKEN not in json.dumps(nb)  # the member's header never reaches the notebook
