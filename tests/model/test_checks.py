"""Cross-reference checks: located by the loader, path-only from check_spec."""

from __future__ import annotations

import pytest

from tests.declare.helpers import BASE, assert_at, declaration_error, only_problem
from wopdsl.model.checks import check_spec
from wopdsl.model.spec import CouncilSettings, CouncilSpec, MemberSpec, RoomSpec, ScriptStep

MAX = 2**53 - 1


def test_sound_council_has_no_problems() -> None:
    spec = CouncilSpec(
        council=CouncilSettings(id="c", task="t"),
        rooms=[RoomSpec(id="r", members=["a"])],
        members=[MemberSpec(id="a", role="r")],
    )
    assert check_spec(spec) == []


def test_duplicate_member_id() -> None:
    text = BASE + '\n[[members]]\nid = "writer"\nrole = "second writer"\nengine = "human"\n'
    problem = only_problem(text)
    assert_at(
        problem,
        23,
        1,
        "members[2] (writer).id",
        "duplicate member id 'writer' (first declared as members[0])",
        "rename one",
    )


def test_duplicate_room_id() -> None:
    text = BASE.replace(
        '[[members]]\nid = "writer"',
        '[[rooms]]\nid = "review"\nmembers = []\n\n[[members]]\nid = "writer"',
        1,
    )
    problem = only_problem(text)
    assert_at(problem, 10, 1, "rooms[1] (review).id", "duplicate room id 'review'")


def test_member_listed_twice_in_a_room() -> None:
    problem = only_problem(
        BASE.replace('["writer", "reviewer"]', '["writer", "reviewer", "writer"]')
    )
    assert_at(
        problem, 7, 34, "rooms[0] (review).members[2]", "'writer' is listed twice in room 'review'"
    )


def test_room_member_that_is_not_declared() -> None:
    problem = only_problem(
        BASE.replace('["writer", "reviewer"]', '["writer", "reviewer", "writter"]')
    )
    assert_at(
        problem,
        7,
        34,
        "rooms[0] (review).members[2]",
        "'writter' is not a declared member (members: writer, reviewer)",
        "did you mean 'writer'?",
    )


def test_mention_of_an_undeclared_member() -> None:
    problem = only_problem(BASE.replace('mentions = ["reviewer"]', 'mentions = ["editor"]'))
    assert_at(
        problem,
        14,
        88,
        "members[0] (writer).script[0].posts[0].mentions[0]",
        "mentions 'editor', which is not a declared member",
    )


def test_mention_of_a_member_outside_the_room() -> None:
    text = BASE.replace('["writer", "reviewer"]', '["writer"]')
    error = declaration_error(text)
    (problem,) = error.problems
    assert_at(
        problem,
        14,
        88,
        "members[0] (writer).script[0].posts[0].mentions[0]",
        "mentions 'reviewer', who is not in room 'review' (its members: writer)",
        "add 'reviewer' to room 'review'",
    )


def test_post_to_a_room_the_member_is_not_in() -> None:
    problem = only_problem(BASE.replace('["writer", "reviewer"]', '["reviewer"]'))
    assert_at(
        problem,
        14,
        35,
        "members[0] (writer).script[0].posts[0].room",
        "'writer' posts in room 'review' but is not one of its members (reviewer)",
    )


def test_post_to_an_undeclared_room() -> None:
    problem = only_problem(BASE.replace('{ room = "review"', '{ room = "reveiw"'))
    assert_at(
        problem,
        14,
        35,
        "members[0] (writer).script[0].posts[0].room",
        "room 'reveiw' is not declared (rooms: review)",
        "did you mean 'review'?",
    )


def test_post_in_a_council_without_rooms() -> None:
    text = BASE.replace('[[rooms]]\nid = "review"\nmembers = ["writer", "reviewer"]\n', "")
    problem = only_problem(text)
    assert problem.path == "members[0] (writer).script[0].posts[0].room"
    assert "declares no rooms" in problem.hint


def test_members_times_cap_overflow_on_the_council_cap() -> None:
    text = BASE.replace(
        'task = "Prepare a release note."', f'task = "t"\nmax_turns_per_member = {MAX}'
    )
    problem = only_problem(text)
    assert_at(
        problem,
        4,
        1,
        "council.max_turns_per_member",
        f"members × cap = 2 × {MAX} = {2 * MAX} is more than 2^53−1",
        f"at most {MAX // 2}",
    )


def test_members_times_cap_overflow_on_a_member_cap() -> None:
    problem = only_problem(BASE + f"max_turns = {2**52}\n")
    assert_at(problem, 21, 1, "members[1] (reviewer).max_turns", "members × cap = 2 × ")


def test_members_times_cap_at_the_limit_is_fine() -> None:
    spec = CouncilSpec(
        council=CouncilSettings(id="c", task="t", max_turns_per_member=MAX // 3),
        members=[MemberSpec(id=f"m{i}", role="r") for i in range(3)],
    )
    assert check_spec(spec) == []


@pytest.mark.parametrize("ident", [".", ".."])
def test_dot_ids_are_refused(ident: str) -> None:
    member = only_problem(BASE + f'\n[[members]]\nid = "{ident}"\nrole = "r"\n')
    assert_at(member, 23, 1, "members[2].id", f"a member id may not be '{ident}'")
    room = BASE.replace('id = "review"', f'id = "{ident}"').replace('room = "review"', 'room = "x"')
    problems = declaration_error(room).problems
    assert_at(problems[0], 6, 1, "rooms[0].id", f"a room id may not be '{ident}'")


# -- engines and their keys ------------------------------------------------------------


def test_script_engine_needs_a_script() -> None:
    problem = only_problem(BASE + 'engine = "script"\n')
    assert_at(
        problem, 21, 1, "members[1] (reviewer).engine", "engine 'script' needs a non-empty script"
    )


def test_script_engine_with_an_empty_script() -> None:
    problem = only_problem(BASE + 'engine = "script"\nscript = []\n')
    assert_at(problem, 22, 1, "members[1] (reviewer).script", "needs a non-empty script")


def test_human_engine_takes_no_script() -> None:
    text = BASE + 'engine = "human"\nscript = [{ summary = "x" }]\n'
    problem = only_problem(text)
    assert_at(
        problem,
        22,
        1,
        "members[1] (reviewer).script",
        "script is only for engine 'script' (this member's engine is 'human')",
    )


def test_human_engine_takes_no_handler() -> None:
    problem = only_problem(BASE + 'engine = "human"\nhandler = "agents:review"\n')
    assert_at(
        problem, 22, 1, "members[1] (reviewer).handler", "handler is only for engine 'python'"
    )


def test_python_engine_takes_no_script() -> None:
    problem = only_problem(BASE + 'script = [{ summary = "x" }]\n')
    assert_at(problem, 21, 1, "members[1] (reviewer).script", "this member's engine is 'python'")


def test_script_engine_takes_no_handler() -> None:
    text = BASE.replace('engine = "script"', 'engine = "script"\nhandler = "agents:write"')
    problem = only_problem(text)
    assert_at(problem, 13, 1, "members[0] (writer).handler", "this member's engine is 'script'")


def test_handler_must_name_module_and_function() -> None:
    problem = only_problem(BASE + 'handler = "agents.review"\n')
    assert_at(problem, 21, 1, "members[1] (reviewer).handler", "must be 'module:function'")


# -- the path-only form ----------------------------------------------------------------


def test_check_spec_returns_paths_without_locations() -> None:
    spec = CouncilSpec(
        council=CouncilSettings(id="c", task="t"),
        rooms=[RoomSpec(id="r", members=["a", "ghost"])],
        members=[
            MemberSpec(id="a", role="r", engine="script", script=[ScriptStep(summary="x")]),
            MemberSpec(id="a", role="r", engine="human"),
        ],
    )
    problems = check_spec(spec)
    assert [p.path for p in problems] == ["members[1] (a).id", "rooms[0] (r).members[1]"]
    assert all(p.hint and p.line is None and p.source is None for p in problems)
