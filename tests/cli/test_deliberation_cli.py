"""`wop run` shows a debate, `wop vote` lets a person vote, `wop metrics` says who flipped."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import DB, REPO, Wop, stored_events

LAUNCH_BOARD = REPO / "councils" / "launch-board.toml"

HUMAN_VOTER = """\
[council]
id = "go-no-go"
task = "Go or no go?"

[[rooms]]
id = "room"
members = ["bot", "founder"]

[[decisions]]
id = "go"
room = "room"
question = "Go?"
options = ["go", "wait"]

[[members]]
id = "bot"
role = "analyst"
engine = "script"
script = [
  { summary = "Voted go.", posts = [{ room = "room", text = "I vote go. @founder?", mentions = ["founder"] }], votes = [{ decision = "go", choice = "go", reason = "ready" }] },
]

[[members]]
id = "founder"
role = "founder"
engine = "human"
initial_turn = false
"""  # noqa: E501


def test_run_shows_hidden_posts_the_reveal_the_tally_the_dissent_and_the_answer(
        wop: Wop) -> None:
    done = wop("run", str(LAUNCH_BOARD), "--run-id", "lb")

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "[board] -- Round 1 of 2 begins: 3 members answer." in out
    assert "answered round 1 (hidden until the round ends: 1 of 3)" in out
    assert "answered round 1 (hidden until the round ends: 3 of 3)" in out
    # The round's posts are printed once it ends: after the third hidden line.
    assert out.index("3 of 3)") < out.index("Ship. The release candidate") < \
        out.index("Round 2 of 2 begins")
    assert "[prep] cto team/cto/" in out and "@all: Anything blocking" in out
    assert "[board] -- Decision 'ship' closed: ship (ship 2, hold 1; 3 of 3 voted; 1 dissent)." \
        in out
    assert "    dissent: cfo (hold): billing risk stands" in out
    assert "\nanswer\n  Decision: ship (ship 2, hold 1); confidence 7/10." in out
    assert "completed: run lb (" in out


def test_metrics_say_who_flipped_and_whose_first_answer_survived(wop: Wop) -> None:
    assert wop("run", str(LAUNCH_BOARD), "--run-id", "lb").returncode == 0

    table = wop("metrics", "lb")
    doc = json.loads(wop("metrics", "lb", "--json").stdout)

    assert table.returncode == 0, table.stderr
    assert "member  turns  posts  mentions  answered  votes  flips  agreement  survival" \
        in table.stdout
    cmo = doc["members"]["cmo"]
    assert (cmo["flips"], cmo["survival"], cmo["agreement"]) == (2, 0.0, 1.0)
    assert doc["members"]["cfo"]["agreement"] == 0.0
    assert doc["members"]["cto"]["mentions_made"] == 2  # @all woke qa and sre
    assert doc["members"]["cto"]["mentions_answered"] == 2
    ship = doc["decisions"]["ship"]
    assert (ship["outcome"], ship["first_round_outcome"], ship["dissent"]) == \
        ("ship", "hold", 1)
    assert doc["decisions"]["confidence"]["outcome"] == 7


def test_a_person_votes_with_wop_vote(wop: Wop, tmp_path: Path) -> None:
    council = tmp_path / "go.toml"
    council.write_text(HUMAN_VOTER)
    waiting = wop("run", str(council), "--run-id", "g1")
    assert waiting.returncode == 3, waiting.stderr
    assert "vote with:  wop vote g1 go 'go|wait' --reason \"why\"" in waiting.stdout

    refused = wop("vote", "g1", "go", "later")
    assert refused.returncode == 2
    assert "choice 'later' is not an option of decision 'go' (go, wait)" in refused.stderr
    assert stored_events(tmp_path / DB, "g1")[-1]["type"] != "run.completed"

    done = wop("vote", "g1", "go", "wait", "--reason", "the board meets Monday")

    assert done.returncode == 0, done.stderr
    assert "decisions\n  go: tied (go 1, wait 1; 2 of 2 voted)" in done.stdout
    events = stored_events(tmp_path / DB, "g1")
    outputs = [e["payload"]["outputs"] for e in events if e["type"] == "node.completed"
               and e.get("nodeId") == "founder"]
    assert outputs == [{"summary": "voted wait on go", "votes": [
        {"decision": "go", "choice": "wait", "reason": "the board meets Monday"}]}]
    assert events[-1]["type"] == "run.completed"
    assert wop("check", "g1").returncode == 0


def test_wop_vote_prints_the_round_it_ends(wop: Wop) -> None:
    # The round's posts were hidden by `wop run`; the vote that ends the round reveals them.
    board = REPO / "tests" / "deliberation_councils" / "vote-board.toml"
    waiting = wop("run", str(board), "--run-id", "vb")
    assert waiting.returncode == 3, waiting.stderr
    assert "Hold: the billing" not in waiting.stdout

    done = wop("vote", "vb", "ship", "hold", "--reason", "billing first")

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("[board] cfo team/cfo/1/0: Hold: the billing migration is not done.") < \
        out.index("[board] -- Round 1 of 1 ended: the debate is over.")
    assert "[board] cto team/cto/2/0: Ship: the release candidate passed every suite twice." \
        in out
    assert "[board] -- Decision 'ship' closed: hold (ship 1, hold 2; 3 of 3 voted; 1 dissent)." \
        in out
