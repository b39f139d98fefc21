"""Decorator councils equal their TOML twins; the sync twin refuses to nest."""

import asyncio
import textwrap

import pytest

import wopdsl
from tests.published import decorated_release_team
from wopdsl import Council, Post, Reply

TOML = textwrap.dedent('''
    [council]
    id = "release-team"
    version = 1
    task = "Prepare a release note."
    global_concurrency = 1
    max_turns_per_member = 2
    tail_messages = 3

    [[rooms]]
    id = "review"
    members = ["writer", "reviewer"]

    [[members]]
    id = "writer"
    role = "writer"
    brief = "Draft the release note."

    [[members]]
    id = "reviewer"
    role = "reviewer"
    brief = "Check the draft."
    initial_turn = false
''')


def decorated() -> Council:
    return decorated_release_team()


def test_decorators_and_toml_give_identical_specs(tmp_path):
    path = tmp_path / "team.toml"
    path.write_text(TOML, encoding="utf-8")
    assert wopdsl.load(path).spec == decorated().spec


def test_export_round_trip_is_lossless(tmp_path):
    council = decorated()
    path = tmp_path / "exported.toml"
    # Its handlers are nested functions, which a file cannot name: the declaration alone.
    path.write_text(council.to_toml(handlers=False), encoding="utf-8")
    assert wopdsl.load(path).spec == council.spec
    with pytest.raises(wopdsl.DeclarationError, match="cannot be named in a council file"):
        council.to_toml()


def test_decorated_council_runs_the_published_example(tmp_path):
    run = decorated().run(store=tmp_path / "runs.db")
    assert run.status == "completed"
    texts = [(m.sender, m.text) for m in run.messages]
    assert texts == [
        ("writer", "Please review: Prepare a release note."),
        ("reviewer", "Reviewed team/writer/1/0: Please review: Prepare a release note."),
    ]
    assert run.result["agents"][0]["result"]["summary"].startswith("Finished")


def bound_toml_council(tmp_path) -> Council:
    """The TOML twin of ``decorated()``, with the decorated handlers bound to it."""
    path = tmp_path / "team.toml"
    path.write_text(TOML, encoding="utf-8")
    council = wopdsl.load(path)
    source = decorated()
    council.bind("writer")(source.handlers["writer"])
    council.bind("reviewer")(source.handlers["reviewer"])
    return council


def test_bind_handlers_to_a_toml_council(tmp_path):
    assert bound_toml_council(tmp_path).run(store="memory:").status == "completed"


def test_unbound_python_member_is_a_declaration_error(tmp_path):
    path = tmp_path / "team.toml"
    path.write_text(TOML, encoding="utf-8")
    with pytest.raises(wopdsl.DeclarationError, match="without a handler"):
        wopdsl.load(path).run(store="memory:")


def test_loaded_council_takes_no_new_members(tmp_path):
    path = tmp_path / "team.toml"
    path.write_text(TOML, encoding="utf-8")
    with pytest.raises(wopdsl.DeclarationError, match="no new rooms or members"):
        wopdsl.load(path).room("extra", members=["writer"])


def test_bad_decorator_declaration_lists_every_problem():
    council = Council("bad", task="t", max_turns_per_member=0)
    council.room("r", members=["ghost"])
    with pytest.raises(wopdsl.DeclarationError) as info:
        _ = council.spec
    text = str(info.value)
    assert "max_turns_per_member" in text


def test_sync_run_refuses_inside_a_running_loop():
    async def inside():
        with pytest.raises(RuntimeError, match=r"await council\.arun\(\)"):
            decorated().run(store="memory:")

    asyncio.run(inside())


def test_user_code_may_name_post_rooms_by_keyword_or_wire_name():
    assert Post(room="r", text="t").room == "r"
    assert Post.model_validate({"roomId": "r", "text": "t"}).model_dump(by_alias=True) == {
        "roomId": "r", "text": "t", "mentions": []}


def test_compile_is_reused_until_the_declaration_or_a_handler_changes(tmp_path):
    council = bound_toml_council(tmp_path)
    graph = council.compile()
    assert council.compile() is graph
    assert council.run(store=tmp_path / "a.db").status == "completed"
    assert council.compile() is graph

    # Re-binding a handler compiles anew, and the next run uses the new handler.
    council.bind("reviewer")(lambda turn: Reply(summary="Second reviewer."))
    regraphed = council.compile()
    assert regraphed is not graph
    run = council.run(store=tmp_path / "b.db")
    assert run.result["agents"][1]["result"]["summary"] == "Second reviewer."

    # A decorator council compiles anew after a member is added.
    built = decorated()
    first = built.compile()
    built.add_member("observer", role="observer", engine="human")
    assert built.compile() is not first
    assert list(built.compile().members) == ["writer", "reviewer", "observer"]
