"""The ``principal`` member key: who may speak as a human member over HTTP."""

from __future__ import annotations

from tests.declare.helpers import BASE, assert_at, declaration_error, only_problem
from wopdsl.declare import loads_spec
from wopdsl.declare.export import to_toml
from wopdsl.declare.schema import council_json_schema


def test_a_human_member_may_name_its_principal() -> None:
    spec = loads_spec(BASE + 'engine = "human"\nprincipal = "alice"\n')
    assert spec.member("reviewer").principal == "alice"
    assert spec.member("writer").principal is None
    text = to_toml(spec)
    assert 'principal = "alice"' in text
    assert loads_spec(text) == spec


def test_only_members_whose_turns_come_from_outside_take_a_principal() -> None:
    problem = only_problem(BASE + 'principal = "alice"\n')
    assert_at(problem, 21, 1, "members[1] (reviewer).principal",
              "principal is only for members whose turns come from outside",
              "this member's engine is 'python'")


def test_a_principal_is_an_identifier() -> None:
    error = declaration_error(BASE + 'engine = "human"\nprincipal = "alice smith"\n')
    assert "members[1] (reviewer).principal" in str(error)


def test_the_schema_has_the_principal() -> None:
    member = council_json_schema()["$defs"]["MemberSpec"]["properties"]
    assert "principal" in member
