"""What cannot work in a deliberating council is refused at load, with file:line:col and a fix."""

from __future__ import annotations

from pathlib import Path

import pytest

import wopdsl
from tests.declare.helpers import assert_at, declaration_error, only_problem
from wopdsl.declare import loads_spec
from wopdsl.model import CouncilSpec

REPO = Path(__file__).resolve().parents[2]

BOARD = """\
[council]
id = "board"
task = "Ship?"
{council}

[[rooms]]
id = "board"
members = ["cfo", "cto", "chair"]
{room}

[[members]]
id = "cfo"
role = "CFO"
engine = "human"

[[members]]
id = "cto"
role = "CTO"
engine = "script"
script = [{{ summary = "s"{votes} }}]

[[members]]
id = "chair"
role = "chair"
engine = "human"

[[members]]
id = "outsider"
role = "outsider"
engine = "human"
{decision}
"""


def council(council: str = "", room: str = "", decision: str = "", votes: str = "") -> str:
    return BOARD.format(council=council, room=room, decision=decision, votes=votes)


DECISION = """
[[decisions]]
id = "ship"
room = "board"
question = "Ship it?"
options = ["ship", "hold"]
"""


def test_a_valid_board_loads() -> None:
    spec = loads_spec(council('chair = "chair"', "rounds = 2\nblind = true\nanonymous = true",
                              DECISION, ', votes = [{ decision = "ship", choice = "ship" }]'))
    assert spec.council.chair == "chair"
    assert (spec.rooms[0].rounds, spec.rooms[0].blind, spec.rooms[0].anonymous) == (2, True, True)
    assert spec.decisions[0].rule == "majority"


def test_a_decision_in_an_unknown_room() -> None:
    problem = only_problem(council(decision=DECISION.replace('room = "board"', 'room = "bord"')))
    assert_at(problem, 34, 1, "decisions[0] (ship).room", "room 'bord' is not declared",
              "did you mean 'board'?")


def test_a_voter_outside_the_room() -> None:
    problem = only_problem(council(decision=DECISION + 'voters = ["cfo", "outsider"]\n'))
    assert_at(problem, 37, 18, "decisions[0] (ship).voters[1]",
              "voter 'outsider' is not a member of room 'board'", "add 'outsider' to room")


def test_the_chair_outside_every_room() -> None:
    problem = only_problem(council('chair = "outsider"'))
    assert_at(problem, 4, 1, "council.chair", "chair 'outsider' is in no room",
              "add 'outsider' to the members of the room")


def test_an_undeclared_chair() -> None:
    problem = only_problem(council('chair = "boss"'))
    assert_at(problem, 4, 1, "council.chair", "chair 'boss' is not a declared member")


def test_the_chair_cannot_vote() -> None:
    problem = only_problem(council('chair = "chair"',
                                   decision=DECISION + 'voters = ["cfo", "chair"]\n'))
    assert_at(problem, 37, 18, "decisions[0] (ship).voters[1]", "the chair 'chair' cannot vote")


def test_rounds_below_one() -> None:
    problem = only_problem(council(room="rounds = 0"))
    assert_at(problem, 9, 1, "rooms[0] (board).rounds", "greater than or equal to 1")


def test_blind_needs_rounds() -> None:
    problem = only_problem(council(room="blind = true"))
    assert_at(problem, 9, 1, "rooms[0] (board).blind", "blind but has no rounds",
              "add rounds = N")


def test_options_not_distinct() -> None:
    problem = only_problem(council(decision=DECISION.replace('["ship", "hold"]',
                                                             '["ship", "hold", "ship"]')))
    assert_at(problem, 36, 1, "decisions[0] (ship).options", "options are not distinct: ship")


def test_quorum_above_the_voters() -> None:
    problem = only_problem(council(decision=DECISION + "quorum = 4\n"))
    assert_at(problem, 37, 1, "decisions[0] (ship).quorum",
              "quorum 4 is more than the 3 voters", "set quorum to at most 3")


def test_options_and_scale_together() -> None:
    problem = only_problem(council(decision=DECISION + "scale = [1, 5]\n"))
    assert "either options = [...] (a choice) or scale" in problem.render()
    assert problem.path == "decisions[0]" and problem.line == 32


def test_a_rule_on_a_scale() -> None:
    text = DECISION.replace('options = ["ship", "hold"]', 'scale = [1, 5]\nrule = "unanimous"')
    problem = only_problem(council(decision=text))
    assert_at(problem, 37, 1, "decisions[0] (ship).rule", "settled by the median score")


@pytest.mark.parametrize(("votes", "path", "fragment"), [
    (', votes = [{ decision = "sheep", choice = "ship" }]', "decision",
     "decision 'sheep' is not declared"),
    (', votes = [{ decision = "ship", choice = "later" }]', "choice",
     "choice 'later' is not an option of decision 'ship' (ship, hold)"),
])
def test_a_scripted_vote(votes: str, path: str, fragment: str) -> None:
    problem = only_problem(council(decision=DECISION, votes=votes))
    assert problem.path == f"members[1] (cto).script[0].votes[0].{path}"
    assert problem.line == 20 and fragment in problem.render()


def test_a_non_voter_scripted_vote() -> None:
    problem = only_problem(council(decision=DECISION + 'voters = ["cfo"]\n',
                                   votes=', votes = [{ decision = "ship", choice = "ship" }]'))
    assert problem.path == "members[1] (cto).script[0].votes[0].decision"
    assert "cto is not a voter of decision 'ship' (voters: cfo)" in problem.render()


def test_all_is_reserved() -> None:
    error = declaration_error(council().replace('id = "outsider"', 'id = "all"'))
    problem = next(p for p in error.problems if p.path == "members[3].id")
    assert_at(problem, 28, 1, "members[3].id", "'all' is a reserved id",
              "rename the member")


def test_a_scale_decision_reads_back_from_a_run_log() -> None:
    # run.started keeps the definition; hosts, `wop resume` and forks read it back: a scale
    # decision must not come back with the options' default rule (which it would refuse).
    spec = wopdsl.load(REPO / "councils" / "launch-board.toml").spec
    definition = spec.definition()
    assert "rule" not in definition["decisions"][1] and definition["decisions"][0]["rule"] \
        == "majority"
    assert CouncilSpec.model_validate(definition).definition() == definition
