"""docs/guides/toml.md, "the full reference", is checked against the product.

Every key `wop schema` knows is documented in its table with the schema's default and
values, and every error message the page quotes is one `wop validate` prints today.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guides" / "toml.md"
EXAMPLE = (ROOT / "councils" / "release-team.toml").read_text(encoding="utf-8")

SECTIONS = {
    "## `[council]`": ["CouncilSettings"],
    "## `[[rooms]]`": ["RoomSpec"],
    "## `[[members]]`": ["MemberSpec"],
    "### Tool policies": ["ToolPolicy"],
    "### Script steps": ["ScriptStep", "ScriptPost", "ScriptVote"],
    "## `[[decisions]]`": ["DecisionSpec"],
    "## `[models.NAME]`": ["ModelProfile"],
    "## `[mcp.NAME]`": ["McpServerSpec"],
}
"""Each section of the page, and the schema definitions its key tables document, in order."""


def _wop(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wopdsl", *args], cwd=cwd, capture_output=True,
                          text=True, encoding="utf-8", timeout=120, check=False)


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    done = _wop("schema", cwd=tmp_path_factory.mktemp("schema"))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _section(heading: str) -> str:
    """The page's text from ``heading`` to the next heading."""
    text = _page()
    start = text.index(f"\n{heading}\n") + 1
    following = re.search(r"^#+ ", text[start + len(heading):], flags=re.M)
    return text[start:] if following is None else text[start:start + len(heading)
                                                          + following.start()]


def _tables(text: str, first_column: str) -> list[list[list[str]]]:
    """The markdown tables in ``text`` whose first column is ``first_column`` (rows of cells)."""
    tables: list[list[list[str]]] = []
    current: list[list[str]] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if current is None:
            current = []
            if cells[0] == first_column:
                tables.append(current)
            continue
        if not set(cells[0]) <= {"-", ":"}:
            current.append(cells)
    return tables


def _code(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _toml(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


def _enum(prop: dict[str, Any]) -> list[Any]:
    for option in [prop, *prop.get("anyOf", [])]:
        if "enum" in option:
            return list(option["enum"])
    return []


@pytest.mark.parametrize("heading", list(SECTIONS))
def test_every_key_of_the_schema_is_documented_with_its_default(schema: dict[str, Any],
                                                                heading: str) -> None:
    tables = _tables(_section(heading), "key")
    assert len(tables) == len(SECTIONS[heading]), f"{heading}: one key table per definition"
    for name, rows in zip(SECTIONS[heading], tables, strict=True):
        definition = schema["$defs"][name]
        documented = {_code(row[0])[0]: row for row in rows}
        assert sorted(documented) == sorted(definition["properties"]), (
            f"{heading}: the keys of {name} differ from `wop schema`")
        for key, prop in definition["properties"].items():
            key_type, default = documented[key][1], documented[key][2]
            if key in definition.get("required", []):
                assert default == "required", f"{name}.{key} is required"
            elif prop.get("default") is not None:
                assert f"`{_toml(prop['default'])}`" in default, f"{name}.{key}: {default}"
            for value in _enum(prop):
                assert f"`{_toml(value)}`" in key_type, f"{name}.{key}: {value} missing"


def test_every_table_of_the_file_has_its_section(schema: dict[str, Any]) -> None:
    headings = {"council": "## `[council]`", "rooms": "## `[[rooms]]`",
                "members": "## `[[members]]`", "models": "## `[models.NAME]`",
                "mcp": "## `[mcp.NAME]`", "decisions": "## `[[decisions]]`"}
    assert set(schema["properties"]) == set(headings)
    for heading in headings.values():
        assert f"\n{heading}\n" in _page()


def test_the_engine_table_has_a_row_per_engine(schema: dict[str, Any]) -> None:
    engines = _enum(schema["$defs"]["MemberSpec"]["properties"]["engine"])
    (rows,) = _tables(_section("### Engines and the keys they take"), "`engine`")
    assert [_code(row[0])[0] for row in rows] == engines


def _edit(*changes: tuple[str, str]) -> str:
    text = EXAMPLE
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _writer(replacement: str) -> str:
    """The example with the writer's `engine = "script"` and script replaced."""
    start = EXAMPLE.index('engine = "script"\nscript = [\n  { summary = "Review')
    end = EXAMPLE.index("\n]\n", start) + 3
    return EXAMPLE[:start] + replacement + EXAMPLE[end:]


LLM_COUNCIL = """\
[council]
id = "c"
task = "t"
max_cost_usd = 1

[[rooms]]
id = "review"
members = ["writer", "reviewer"]

[[members]]
id = "writer"
role = "writer"
engine = "llm"
model = "lcoal"

[[members]]
id = "reviewer"
role = "reviewer"
engine = "llm"
{reviewer}
[models.local]
model = "m"
"""

EXAMPLES = [  # The page's three output blocks, in order: the files that print them.
    _edit(("max_turns_per_member = 2", "max_turns_per_member = 0"),
          ("initial_turn = false\n", "initial_turn = false\nturn_cap = 1\n")),
    _edit(('mentions = ["reviewer"]', 'mentions = ["editor"]')),
    _edit(("version = 1", "version = one")),
]

MESSAGES: dict[str, list[tuple[str, str | bytes]]] = {
    # Each row of the page's table of messages: files whose `wop validate` prints them.
    "a file that does not exist": [("missing.toml", "")],
    "a file that is not UTF-8": [("latin1.toml", '[council]\nid = "c"\ntask = "caf\xe9"\n'
                                  .encode("latin-1"))],
    "id with `/`, spaces, control characters, or over 64 characters": [
        ("council.toml", _edit(('id = "writer"', 'id = "a/b"')))],
    "`.` or `..` as an id": [("council.toml", _edit(('id = "writer"', 'id = ".."')))],
    "same id twice": [("council.toml", _edit(('id = "reviewer"\nrole', 'id = "writer"\nrole')))],
    "room lists an unknown member": [("council.toml", _edit(
        ('members = ["writer", "reviewer"]', 'members = ["writer", "reviewer", "ghost"]')))],
    "room lists a member twice": [("council.toml", _edit(
        ('members = ["writer", "reviewer"]', 'members = ["writer", "reviewer", "writer"]')))],
    "post to a room the member is not in": [("council.toml", _edit(
        ('members = ["writer", "reviewer"]', 'members = ["reviewer"]')))],
    "post to a room that does not exist": [("council.toml", _edit(
        ('{ room = "review", text = "Please', '{ room = "reveiw", text = "Please')))],
    "mention of a member outside the room": [("council.toml", _edit(
        ('members = ["writer", "reviewer"]', 'members = ["reviewer"]')))],
    "engine/keys mismatch": [
        ("council.toml", _writer('engine = "script"\nscript = []\n')),
        ("council.toml", _edit(('initial_turn = false\nengine = "script"',
                                'initial_turn = false\nengine = "human"\nhandler = "a:b"')))],
    "cap overflow": [("council.toml", _edit(("max_turns_per_member = 2",
                                             "max_turns_per_member = 9007199254740991")))],
    "a date in `data`": [("council.toml", _edit(
        ('{ summary = "Draft checked.",', '{ summary = "Draft checked.", data = { when = '
                                          '2024-01-01 },')))],
    "wrong type": [("council.toml", _edit(('role = "writer"', "role = 5")))],
    "unknown engine": [("council.toml", _edit(('initial_turn = false\nengine = "script"',
                                               'initial_turn = false\nengine = "robot"')))],
    "a handler that does not exist": [
        ("council.toml", _writer('handler = "agents:speek"\n')),
        ("agents.py", "def speak(turn):\n    return 'hi'\n")],
    "an `llm` member without a profile": [("council.toml", LLM_COUNCIL.format(reviewer=""))],
    "an `llm` member naming an undeclared profile": [
        ("council.toml", LLM_COUNCIL.format(reviewer=""))],
    "an `llm` key on another engine": [("council.toml", _edit(
        ("initial_turn = false\n", "initial_turn = false\ntemperature = 0.5\n")))],
    "a cost budget without prices": [
        ("council.toml", LLM_COUNCIL.format(reviewer='model = "local"').replace(
            'model = "lcoal"', 'model = "local"'))],
}


def _validate(tmp_path: Path, files: list[tuple[str, str | bytes]]) -> str:
    """Write ``files`` into a fresh folder; return what `wop validate` prints for each council."""
    folder = tmp_path / f"case-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    printed = []
    for name, content in sorted(files, key=lambda file: file[0].endswith(".toml")):
        if content:  # An empty council stands for a file that does not exist.
            path = folder / name
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
        if name.endswith(".toml"):
            done = _wop("validate", name, cwd=folder)
            assert done.returncode == 2, done.stdout
            assert "Traceback" not in done.stderr
            printed.append(done.stderr)
    return "\n".join(printed)


def test_the_quoted_outputs_are_what_wop_validate_prints(tmp_path: Path) -> None:
    section = _section("## What errors look like")
    blocks = re.findall(r"```text\n(.*?)```", section, flags=re.S)
    assert len(blocks) == len(EXAMPLES)
    for block, council in zip(blocks, EXAMPLES, strict=True):
        assert _validate(tmp_path, [("council.toml", council)]) == block


def test_every_quoted_message_is_printed_today(tmp_path: Path) -> None:
    (rows,) = _tables(_section("## What errors look like"), "problem")
    assert [row[0] for row in rows] == list(MESSAGES), "one set of input files per row"
    for problem, cell in rows:
        printed = _validate(tmp_path, MESSAGES[problem])
        for message in _code(cell):
            pattern = ".*?".join(map(re.escape, message.split("…")))
            assert re.search(pattern, printed), f"{problem}: {message!r} not in\n{printed}"
