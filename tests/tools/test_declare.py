"""Declaring tools: TOML keys, checks with file:line:col, the schema, export round trips."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.declare.helpers import declaration_error
from tests.tools.conftest import council_toml
from wopdsl import Council, DeclarationError, load
from wopdsl.declare import council_json_schema, loads_spec, to_toml

TOML = """\
[council]
id = "ops"
task = "Fix it."
max_tool_calls = 10

[models.local]
model = "m"

[mcp.files]
command = "python"
args = ["-m", "my_tools.server"]
env = ["FILES_ROOT"]

[mcp.search]
url = "http://127.0.0.1:8765/mcp"
headers = { Authorization = "SEARCH_AUTH" }

[[rooms]]
id = "ops"
members = ["sre", "oncall"]

[[members]]
id = "sre"
role = "sre"
engine = "llm"
model = "local"
tools = ["mcp:files/read_log", "mcp:search/*", "ops:restart_service", "lookup"]
max_tool_calls = 4

[members.tool_policy.restart_service]
approval = "oncall"
idempotent = false
timeout_ms = 5000
max_result_bytes = 1024

[[members]]
id = "oncall"
role = "user"
engine = "human"
initial_turn = false
"""


def lookup(key: str) -> str:
    """Look a key up."""
    return key


def test_the_keys_load_and_round_trip() -> None:
    spec = loads_spec(TOML)
    member = spec.members[0]
    assert member.tools == ["mcp:files/read_log", "mcp:search/*", "ops:restart_service",
                            "lookup"]
    assert member.tool_policy is not None
    policy = member.tool_policy["restart_service"]
    assert (policy.approval, policy.idempotent, policy.timeout_ms) == ("oncall", False, 5000)
    assert spec.mcp["files"].transport == "stdio" and spec.mcp["search"].transport == "http"
    assert spec.mcp["search"].headers == {"Authorization": "SEARCH_AUTH"}
    assert spec.council.max_tool_calls == 10
    text = to_toml(spec)
    again = loads_spec(text)
    assert again == spec and again.digest() == spec.digest() and to_toml(again) == text


def test_councils_without_tools_keep_their_digest() -> None:
    plain = load(Path(__file__).resolve().parents[2] / "councils" / "release-team.toml")
    definition = plain.spec.definition()
    assert "mcp" not in definition
    assert all("tools" not in m for m in definition["members"])


def test_the_schema_describes_the_new_tables() -> None:
    schema = council_json_schema()
    text = json.dumps(schema)
    for key in ("tool_policy", "max_tool_calls", "idempotent", "approval", "headers",
                "startup_timeout_ms", "max_tools"):
        assert key in text
    assert "mcp" in schema["properties"]
    done = subprocess.run([sys.executable, "-m", "wopdsl", "schema"], capture_output=True,
                          text=True, check=False, timeout=60)
    assert done.returncode == 0 and "tool_policy" in done.stdout


@pytest.mark.parametrize(("snippet", "where", "message"), [
    ('[mcp.x]\ncommand = "a"\nurl = "http://h/mcp"\n', "mcp.x",
     "needs exactly one of command and url"),
    ('[mcp.x]\nurl = "http://h/mcp"\nheaders = { Authorization = "Bearer abc" }\n',
     "mcp.x.headers.Authorization", "must be the NAME of an environment variable"),
    ('[mcp.x]\nurl = "http://h/mcp"\nargs = ["a"]\n', "mcp.x",
     "args and env are for stdio servers"),
    ('[mcp.x]\ncommand = "a"\nport = 3\n', "mcp.x.port", "unknown key"),
])
def test_bad_server_tables_are_located(snippet: str, where: str, message: str) -> None:
    error = declaration_error(TOML.replace("[mcp.files]", snippet + "\n[mcp.files]"))
    rendered = str(error)
    assert "council.toml:9:" in rendered or "council.toml:1" in rendered, rendered
    assert where in rendered and message in rendered, rendered
    assert "Bearer abc" not in rendered  # a value pasted by mistake is never echoed


def test_bad_member_tools_are_located() -> None:
    error = declaration_error(TOML.replace('"lookup"]', '"lookup", "mcp:nope/x", "mcp:bad", '
                                                     '"lookup"]')
                              .replace('approval = "oncall"', 'approval = "sre"')
                              .replace("[members.tool_policy.restart_service]",
                                       "[members.tool_policy.restrat_service]"))
    rendered = str(error)
    assert "council.toml:27:" in rendered
    assert "'mcp:bad' is not an MCP tool reference" in rendered
    problems = error.problems
    assert len(problems) == 1  # a field error stops the cross checks
    error = declaration_error(TOML.replace('"lookup"]', '"lookup", "mcp:nope/x", "lookup"]')
                              .replace('"mcp:search/*", ', '')  # a wildcard defers the check
                              .replace('approval = "oncall"', 'approval = "sre"')
                              .replace("[members.tool_policy.restart_service]",
                                       "[members.tool_policy.restrat_service]"))
    messages = {p.path: p.message for p in error.problems}
    assert "MCP server 'nope' is not declared" in messages["members[0] (sre).tools[3]"]
    assert "listed twice" in messages["members[0] (sre).tools[4]"]
    assert "not one of this member's tools" in messages[
        "members[0] (sre).tool_policy.restrat_service"]
    assert "not a human member" in messages[
        "members[0] (sre).tool_policy.restrat_service.approval"]
    assert all(p.line is not None for p in error.problems)


def test_tools_are_only_for_llm_members() -> None:
    error = declaration_error(TOML.replace('engine = "human"',
                                           'engine = "human"\ntools = ["ops:x"]'))
    assert "tools is only for engine 'llm'" in str(error)


def test_an_unannotated_python_tool_is_a_compile_problem(tmp_path: Path) -> None:
    (tmp_path / "ops.py").write_text(textwrap.dedent('''
        def restart_service(name) -> str:
            return name
    '''), encoding="utf-8")
    text = TOML.replace('"mcp:files/read_log", "mcp:search/*", ', "").replace(
        ', "lookup"', "")
    (tmp_path / "council.toml").write_text(text, encoding="utf-8")
    council = load(tmp_path / "council.toml")
    with pytest.raises(DeclarationError) as caught:
        council.compile()
    rendered = str(caught.value)
    assert "council.toml:27:" in rendered and "members[0].tools[0]" in rendered
    assert "parameter name has no type annotation" in rendered


def test_decorated_tools_export_as_references() -> None:
    council = Council("ops", task="Fix it.")
    council.model("local", model="m")
    council.mcp("files", command="python", args=["-m", "srv"])
    council.room("ops", members=["sre"])
    council.add_member("sre", role="sre", engine="llm", model="local",
                       tools=["lookup", "mcp:files/read_log"],
                       tool_policy={"lookup": {"idempotent": True}})
    council.tool(lookup)
    text = council.to_toml()
    assert 'tools = ["tests.tools.test_declare:lookup", "mcp:files/read_log"]' in text
    assert "[mcp.files]" in text and "idempotent = true" in text
    assert loads_spec(text).members[0].tool_policy["lookup"].idempotent is True
    council.compile()  # the registered function is found
    with pytest.raises(DeclarationError, match="'shout' is not a registered tool"):
        Council.from_spec(loads_spec(text.replace("tests.tools.test_declare:lookup", "shout")
                                     .replace("tool_policy.lookup", "tool_policy.shout"))
                          ).compile()


def _clash_error(tmp_path: Path, tools: str) -> str:
    (tmp_path / "cnt.py").write_text('def count(label: str) -> str:\n    """Count."""\n'
                                     "    return label\n", encoding="utf-8")
    (tmp_path / "council.toml").write_text(council_toml(
        'command = "python"\nargs = ["server.py"]', tools, name="evil"), encoding="utf-8")
    council = load(tmp_path / "council.toml")
    with pytest.raises(DeclarationError) as caught:
        council.compile()
    return str(caught.value)


def test_a_python_tool_and_an_mcp_tool_of_one_name_clash_in_either_order(
        tmp_path: Path) -> None:
    first = _clash_error(tmp_path, '"mcp:evil/count", "cnt:count"')
    second = _clash_error(tmp_path, '"cnt:count", "mcp:evil/count"')
    message = ("sre: two tools would be named 'count' for the model: the Python function "
               "cnt:count and the MCP tool 'count' of server 'evil' (mcp:evil/count); a "
               "model calls tools by name, so one would hide the other")
    hint = ("hint: keep one of them in the member's tools; or rename the Python function "
            "(or register it under another name with @council.tool(name=...))")
    # The same error, at the second of the two in the file (line 23, its column).
    assert f"council.toml:23:28: members[0].tools[1]: {message}\n    {hint}" in first, first
    assert f"council.toml:23:23: members[0].tools[1]: {message}\n    {hint}" in second, second


def test_two_named_mcp_tools_and_a_registered_tool_clash_in_code() -> None:
    def count(label: str) -> str:
        """Count."""
        return label

    for tools in (["count", "mcp:evil/count"], ["mcp:evil/count", "count"]):
        council = Council("ops", task="Fix it.")
        council.model("local", model="m")
        council.mcp("evil", command="python", args=["server.py"])
        council.room("ops", members=["sre"])
        council.add_member("sre", role="sre", engine="llm", model="local", tools=tools)
        council.tool(count)
        with pytest.raises(DeclarationError, match=r"the @council.tool function 'count' and "
                           r"the MCP tool 'count' of server 'evil' \(mcp:evil/count\)"):
            council.compile()
    council = Council("ops", task="Fix it.")
    council.model("local", model="m")
    council.mcp("a", command="python", args=["a.py"]).mcp("b", command="python",
                                                           args=["b.py"])
    council.room("ops", members=["sre"])
    council.add_member("sre", role="sre", engine="llm", model="local",
                       tools=["mcp:b/read.log", "mcp:a/read_log"])
    with pytest.raises(DeclarationError) as caught:
        council.compile()
    assert ("two tools would be named 'read_log' for the model: the MCP tool 'read_log' of "
            "server 'a' (mcp:a/read_log) and the MCP tool 'read.log' of server 'b' "
            "(mcp:b/read.log)") in str(caught.value)
    assert "hint: keep one of them in the member's tools\n" in str(caught.value) + "\n"


def test_max_tools_bounds_the_tools_listed_one_by_one() -> None:
    many = ", ".join(f'"mcp:files/t{i}"' for i in range(129))
    error = declaration_error(TOML.replace('"mcp:search/*", ', "").replace(
        '"mcp:files/read_log"', many))
    (problem,) = [p for p in error.problems if p.path.endswith(".tools")]
    assert problem.path == "members[0] (sre).tools" and problem.line == 27
    assert problem.message == "131 tools are listed, more than max_tools = 128"
    assert "raise max_tools (at most 1024)" in problem.hint
    spec = loads_spec(TOML.replace('"mcp:search/*", ', "").replace(
        '"mcp:files/read_log"', many).replace("max_tool_calls = 4", "max_tool_calls = 4\n"
                                               "max_tools = 131"))
    assert spec.members[0].max_tools == 131
    error = declaration_error(TOML.replace("max_tool_calls = 4", "max_tools = 1025"))
    assert "members[0] (sre).max_tools" in str(error) and "1024" in str(error)
    error = declaration_error(TOML.replace('engine = "human"', 'engine = "human"\n'
                                           "max_tools = 3"))
    assert "max_tools is only for engine 'llm'" in str(error)
    council = Council("ops", task="Fix it.")  # the same key in code
    council.model("local", model="m")
    council.room("ops", members=["sre"])
    council.add_member("sre", role="sre", engine="llm", model="local",
                       tools=["lookup", "tests.tools.test_declare:lookup"], max_tools=1)
    with pytest.raises(DeclarationError, match=r"members\[0\] \(sre\)\.tools: 2 tools are "
                       r"listed, more than max_tools = 1"):
        council.compile()
