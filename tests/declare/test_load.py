"""Loading council files: the example, syntax errors, field errors, files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.declare.helpers import BASE, assert_at, declaration_error, only_problem
from wopdsl import load
from wopdsl.declare import load_spec, loads_spec
from wopdsl.declare.toml import load_declaration, spec_from_data
from wopdsl.errors import DeclarationError, Problem
from wopdsl.model.spec import (
    CouncilSettings,
    CouncilSpec,
    MemberSpec,
    RoomSpec,
    ScriptPost,
    ScriptStep,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "councils" / "release-team.toml"


def test_release_team_example_loads_to_the_expected_spec() -> None:
    expected = CouncilSpec(
        council=CouncilSettings(
            id="release-team",
            version=1,
            task="Prepare a release note.",
            global_concurrency=1,
            max_turns_per_member=2,
            tail_messages=3,
        ),
        rooms=[RoomSpec(id="review", members=["writer", "reviewer"])],
        members=[
            MemberSpec(
                id="writer",
                role="writer",
                brief="Draft the release note.",
                engine="script",
                script=[
                    ScriptStep(
                        summary="Review requested.",
                        posts=[
                            ScriptPost(
                                room="review",
                                text="Please review: {{ task }}",
                                mentions=["reviewer"],
                            )
                        ],
                    ),
                    ScriptStep(summary="Finished after review {{ triggers[0].id }}: {{ task }}"),
                ],
            ),
            MemberSpec(
                id="reviewer",
                role="reviewer",
                brief="Check the draft.",
                initial_turn=False,
                engine="script",
                script=[
                    ScriptStep(
                        summary="Draft checked.",
                        posts=[
                            ScriptPost(
                                room="review",
                                text="Reviewed {{ triggers[0].id }}: {{ triggers[0].text }}",
                                mentions=["writer"],
                            )
                        ],
                    )
                ],
            ),
        ],
    )
    assert load_spec(EXAMPLE) == expected
    assert load_spec(str(EXAMPLE)) == expected


def test_the_example_file_is_the_design_example() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text.startswith('[council]\nid = "release-team"\n')
    assert loads_spec(text).members[1].initial_turn is False


def test_defaults_fill_what_the_file_leaves_out() -> None:
    spec = loads_spec('[council]\nid = "c"\ntask = "t"\n')
    assert spec.council.max_turns_per_member == 8
    assert spec.council.tail_messages == 20
    assert spec.rooms == [] and spec.members == []


# -- syntax errors ---------------------------------------------------------------------


def test_syntax_error_has_tomllib_line_and_column() -> None:
    problem = only_problem('[council]\nid = "c"\ntask = Prepare\n')
    assert (problem.line, problem.column) == (3, 8)
    assert problem.render().startswith("council.toml:3:8: TOML syntax error: invalid value")
    assert "quote strings" in problem.hint


def test_syntax_error_at_end_of_document_points_at_the_end() -> None:
    problem = only_problem('[council]\nid = "c"\ntask = "t"\nx = [1, 2\n')
    assert problem.line == 5 and problem.column == 1
    assert "unclosed array" in problem.message


def test_multi_line_inline_table_gets_a_one_line_hint() -> None:
    problem = only_problem('[council]\nid = "c"\ntask = "t"\nx = { a = 1,\n  b = 2 }\n')
    assert (problem.line, problem.column) == (4, 13)
    assert "one line" in problem.hint


def test_duplicate_key_points_at_the_repeated_key() -> None:
    problem = only_problem('[council]\nid = "c"\ntask = "t"\n\n[[members]]\nid = "a"\nid = "b"\n')
    assert (problem.line, problem.column) == (7, 1)
    assert "members[0].id is already set" in problem.message
    assert "once per table" in problem.hint


# -- unknown keys ----------------------------------------------------------------------


def test_unknown_top_level_key() -> None:
    problem = only_problem('name = "x"\n\n[council]\nid = "c"\ntask = "t"\n')
    assert_at(problem, 1, 1, "name",
              "unknown key 'name' (allowed: council, rooms, members, models, mcp, decisions)")


def test_council_setting_above_the_council_table_is_moved_there() -> None:
    first, second = declaration_error('task = "x"\n\n[council]\nid = "c"\n').problems
    assert_at(first, 1, 1, "task", "unknown key 'task'", "under the [council] table")
    assert_at(second, 3, 1, "council.task", "missing required key 'task'", "to [council]")


def test_unknown_key_in_council() -> None:
    problem = only_problem('[council]\nid = "c"\ntask = "t"\nturn_cap = 3\n')
    assert_at(
        problem,
        4,
        1,
        "council.turn_cap",
        "unknown key 'turn_cap' (allowed: id, version, task,",
        "did you mean 'max_turns_per_member'?",
    )


def test_unknown_key_in_a_member() -> None:
    problem = only_problem(BASE + "turn_cap = 2\n")
    assert_at(
        problem,
        21,
        1,
        "members[1] (reviewer).turn_cap",
        "unknown key 'turn_cap' (allowed: id, role, brief, initial_turn, engine,",
        "did you mean 'max_turns'?",
    )


def test_unknown_key_inside_a_script_post() -> None:
    text = BASE.replace('mentions = ["reviewer"] }', 'mentions = ["reviewer"], roomId = "x" }')
    problem = only_problem(text)
    assert_at(
        problem,
        14,
        101,
        "members[0] (writer).script[0].posts[0].roomId",
        "unknown key 'roomId' (allowed: room, text, mentions)",
        "did you mean 'room'?",
    )


def test_unknown_key_in_a_dotted_inline_member_table() -> None:
    text = '[council]\nid = "c"\ntask = "t"\n[[members]]\nid = "a"\nrole = "r"\nx.y = 1\n'
    assert_at(only_problem(text), 7, 1, "members[0] (a).x", "unknown key 'x'")


# -- wrong types and missing keys ------------------------------------------------------


def test_wrong_type_string() -> None:
    problem = only_problem('[council]\nid = "c"\ntask = 5\n')
    assert_at(problem, 3, 1, "council.task", "must be a string, got integer 5", "in quotes")


def test_wrong_type_boolean() -> None:
    problem = only_problem(BASE.replace("initial_turn = false", 'initial_turn = "no"'))
    assert_at(
        problem,
        20,
        1,
        "members[1] (reviewer).initial_turn",
        'must be true or false, got string "no"',
    )


def test_wrong_type_array_for_room_members() -> None:
    problem = only_problem(BASE.replace('members = ["writer", "reviewer"]', 'members = "writer"'))
    assert_at(problem, 7, 1, "rooms[0] (review).members", "must be an array")


def test_wrong_engine_name() -> None:
    problem = only_problem(BASE.replace('engine = "script"', 'engine = "lm"'))
    assert_at(
        problem,
        12,
        1,
        "members[0] (writer).engine",
        "must be one of 'python', 'script', 'human', 'external', 'llm' or 'a2a', got \"lm\"",
    )


def test_missing_required_key_points_at_its_table() -> None:
    problem = only_problem(BASE.replace('role = "reviewer"\n', ""))
    assert_at(problem, 17, 1, "members[1] (reviewer).role", "missing required key 'role'")
    assert "this [[members]] table" in problem.hint


def test_missing_council_table() -> None:
    problem = only_problem('[[members]]\nid = "a"\nrole = "r"\n')
    assert problem.path == "council" and problem.message == "missing the [council] table"
    assert problem.line is None
    assert problem.render().startswith("council.toml: council: missing the [council] table")


def test_dates_are_not_json_data() -> None:
    text = BASE.replace(
        '{ summary = "asked",', '{ summary = "asked", data = { when = 2024-01-01 },'
    )
    problem = only_problem(text)
    assert_at(problem, 14, 24, "members[0] (writer).script[0].data", "holds a date at .when")


# -- limits ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "shown"),
    [
        ("0", "got 0"),
        ("-1", "got -1"),
        (str(2**53), f"got {2**53}"),
        ("1.5", "got 1.5"),
        ("true", "got true"),
        ('"3"', 'got "3"'),
    ],
)
def test_limits_must_be_positive_safe_integers(literal: str, shown: str) -> None:
    problem = only_problem(BASE + f"max_turns = {literal}\n")
    assert_at(
        problem,
        21,
        1,
        "members[1] (reviewer).max_turns",
        f"must be a positive safe integer (1 … 2^53−1), {shown}",
        "whole number from 1 to 9007199254740991",
    )


@pytest.mark.parametrize(
    "key",
    ["version", "global_concurrency", "max_turns_per_member", "tail_messages", "timeout_ms"],
)
def test_every_council_limit_is_checked(key: str) -> None:
    problem = only_problem(f'[council]\nid = "c"\ntask = "t"\n{key} = 0\n')
    assert_at(problem, 4, 1, f"council.{key}", "must be a positive safe integer")


def test_largest_safe_integer_is_accepted() -> None:
    spec = loads_spec(f'[council]\nid = "c"\ntask = "t"\ntail_messages = {2**53 - 1}\n')
    assert spec.council.tail_messages == 2**53 - 1


# -- identifiers -----------------------------------------------------------------------

IDENT = "must be 1-64 characters of [A-Za-z0-9._-] (no '/', spaces or control characters)"


@pytest.mark.parametrize(
    ("literal", "shown"),
    [
        ('"a/b"', 'got "a/b"'),
        ('"code reviewer"', 'got "code reviewer"'),
        ('"a\\u0001b"', 'got "a\\u0001b"'),
        ('"tab\\there"', 'got "tab\\there"'),
        ('""', "got 0 characters"),
        ('"' + "x" * 65 + '"', "got 65 characters"),
    ],
)
def test_member_ids_are_identifiers(literal: str, shown: str) -> None:
    text = '[council]\nid = "c"\ntask = "t"\n\n[[members]]\nid = ' + literal + '\nrole = "r"\n'
    problem = only_problem(text)
    assert_at(problem, 6, 1, "members[0].id", f"{IDENT}, {shown}")


def test_identifier_hint_suggests_a_valid_id() -> None:
    text = '[council]\nid = "c"\ntask = "t"\n\n[[rooms]]\nid = "team room"\nmembers = []\n'
    problem = only_problem(text)
    assert_at(problem, 6, 1, "rooms[0].id", IDENT)
    assert 'e.g. "team-room"' in problem.hint


def test_identifiers_inside_arrays_are_located() -> None:
    problem = only_problem(BASE.replace('["writer", "reviewer"]', '["writer", "re/viewer"]'))
    assert_at(problem, 7, 22, "rooms[0] (review).members[1]", IDENT, 'got "re/viewer"')


def test_mention_identifier_in_nested_inline_array() -> None:
    problem = only_problem(BASE.replace('mentions = ["reviewer"]', 'mentions = ["a b"]'))
    assert_at(problem, 14, 88, "members[0] (writer).script[0].posts[0].mentions[0]", IDENT)


# -- all problems at once --------------------------------------------------------------


def test_every_problem_is_listed_in_file_order() -> None:
    text = BASE.replace('task = "Prepare a release note."', "task = 1") + "max_turns = 0\nbad = 1\n"
    error = declaration_error(text)
    assert [p.path for p in error.problems] == [
        "council.task",
        "members[1] (reviewer).max_turns",
        "members[1] (reviewer).bad",
    ]
    assert [p.line for p in error.problems] == [3, 21, 22]
    rendered = error.render()
    assert rendered.startswith(
        "error[DECLARATION_INVALID]: invalid council declaration (3 problems):"
    )
    assert "\n  council.toml:21:1: members[1] (reviewer).max_turns: must be a positive" in rendered
    assert "\n    hint: " in rendered
    assert isinstance(error, ValueError)


# -- files -----------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(DeclarationError) as caught:
        load_spec(missing)
    (problem,) = caught.value.problems
    assert problem.source == str(missing) and problem.message == "file not found"
    assert str(caught.value).startswith(
        f"invalid council declaration:\n  {missing}: file not found"
    )


def test_a_directory_is_not_a_council_file(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match="is a directory"):
        load_spec(tmp_path)


def test_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('[council]\nid = "c"\ntask = "café"\n'.encode("latin-1"))
    with pytest.raises(DeclarationError) as caught:
        load_spec(path)
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (3, 12)
    assert "not UTF-8" in problem.message and "0xe9" in problem.message
    assert problem.hint == "save the file as UTF-8"


def test_file_problems_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "council.toml"
    path.write_text(BASE + "max_turns = 0\n", encoding="utf-8")
    with pytest.raises(DeclarationError) as caught:
        load_spec(path)
    assert f"{path}:21:1: members[1] (reviewer).max_turns:" in str(caught.value)


def test_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    assert load_spec(path).id == "release-team"


# -- other entry points ----------------------------------------------------------------


def test_the_declaration_places_compile_problems_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "council.toml"
    path.write_text(BASE, encoding="utf-8")
    problems = [
        Problem("template syntax error", path="members[0].brief", hint="fix it"),
        Problem("bad schema", path="rooms (review).members", hint="fix it"),
        Problem("no path", hint="fix it"),
    ]
    located = load_declaration(path).locate(problems)
    assert [(p.path, p.line, p.column) for p in located] == [
        ("rooms (review).members", 7, 1),
        ("members[0].brief", 9, 1),
        ("", None, None),
    ]
    assert all(p.source == str(path) for p in located)


def test_compile_problems_keep_their_place_without_reading_the_file_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "council.toml"
    broken = BASE.replace('role = "writer"\n', 'role = "writer"\nbrief = "{{ oops "\n')
    assert broken != BASE
    path.write_text(broken, encoding="utf-8")
    council = load(path)
    path.unlink()  # compile() must not need the file: the load kept its source map.
    with pytest.raises(DeclarationError) as caught:
        council.compile()
    (problem,) = caught.value.problems
    assert problem.path.startswith("members[0]") and problem.path.endswith(".brief")
    assert (problem.source, problem.line) == (str(path), 12)
    assert "template syntax error" in problem.message


def test_spec_from_data_uses_the_same_messages_without_locations() -> None:
    data = {
        "council": {"id": "c", "task": "t"},
        "members": [{"id": "a", "role": "r", "max_turns": 0}],
        "rooms": [{"id": "r", "members": ["ghost"]}],
    }
    with pytest.raises(DeclarationError) as caught:
        spec_from_data(data, source="agents.py")
    (problem,) = caught.value.problems
    assert problem.render().startswith(
        "agents.py: members[0] (a).max_turns: must be a positive safe integer"
    )
    data["members"] = [{"id": "a", "role": "r"}]
    with pytest.raises(DeclarationError) as caught:
        spec_from_data(data)
    (problem,) = caught.value.problems
    assert problem.render().startswith("<council>: rooms[0] (r).members[0]: 'ghost' is not")


def test_check_spec_runs_once_per_load(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from wopdsl.model.checks import check_spec

    # ``wopdsl.compile`` is also the name of the re-exported function: fetch the modules.
    compile_module = importlib.import_module("wopdsl.compile")
    toml_module = importlib.import_module("wopdsl.declare.toml")

    calls: list[str] = []

    def counting(spec: CouncilSpec) -> list[Problem]:
        calls.append(spec.id)
        return check_spec(spec)

    monkeypatch.setattr(toml_module, "check_spec", counting)
    monkeypatch.setattr(compile_module, "check_spec", counting)
    council = load(EXAMPLE)
    council.compile()
    assert calls == ["release-team"]
    # A spec built elsewhere is unchecked: compile() checks it.
    compile_module.compile(council.spec)
    assert calls == ["release-team", "release-team"]


@pytest.mark.parametrize(("value", "got"), [
    ('["writer"]', "got an array"), ("[]", "got array []"), ("{ a = 1 }", "got a table"),
    ("3", "got integer 3"),
])
def test_type_errors_say_what_they_got_once(value: str, got: str) -> None:
    problem = only_problem(BASE.replace('role = "writer"', f"role = {value}"))
    message = problem.render()
    assert f"must be a string, {got}" in message
    assert "array an array" not in message and "table a table" not in message
