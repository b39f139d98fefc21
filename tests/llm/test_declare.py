"""``[models.NAME]`` profiles and ``engine = "llm"`` members: load, errors, decorators, export."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wopdsl import Council
from wopdsl.declare import loads_spec
from wopdsl.declare.export import to_toml
from wopdsl.declare.schema import council_json_schema
from wopdsl.errors import DeclarationError

COUNCIL = """\
[council]
id = "critique"
task = "Write a haiku about tea."
max_tokens = 20000
max_cost_usd = 0.5

[[rooms]]
id = "desk"
members = ["writer", "critic"]

[[members]]
id = "writer"
role = "writer"
brief = "Draft, then improve."
engine = "llm"
model = "local"
temperature = 0.7
max_output_tokens = 300
system_prompt = "You are {{ member }}."
turn_prompt = "Turn {{ turn }}: {{ task }}"
repair_attempts = 2

[[members]]
id = "critic"
role = "critic"
engine = "llm"
model = "local"
initial_turn = false

[models.local]
base_url = "http://127.0.0.1:11434/v1"
model = "qwen2.5:7b-instruct"
api_key_env = "LOCAL_KEY"
temperature = 0.2
max_output_tokens = 800
max_concurrency = 2
price_in_per_mtok = 0.15
price_out_per_mtok = 0.6
"""


def _problems(text: str) -> str:
    with pytest.raises(DeclarationError) as info:
        loads_spec(text, source="c.toml")
    return str(info.value)


def test_profiles_and_members_load() -> None:
    spec = loads_spec(COUNCIL)
    profile = spec.models["local"]
    assert (profile.model, profile.base_url, profile.api_key_env) == (
        "qwen2.5:7b-instruct", "http://127.0.0.1:11434/v1", "LOCAL_KEY")
    assert (profile.max_concurrency, profile.price_out_per_mtok) == (2, 0.6)
    writer = spec.member("writer")
    assert (writer.engine, writer.model, writer.temperature, writer.max_output_tokens) == (
        "llm", "local", 0.7, 300)
    assert writer.repair_attempts == 2 and writer.turn_prompt == "Turn {{ turn }}: {{ task }}"
    assert (spec.council.max_tokens, spec.council.max_cost_usd) == (20000, 0.5)


def test_export_round_trips() -> None:
    spec = loads_spec(COUNCIL)
    text = to_toml(spec)
    assert "[models.local]" in text
    assert loads_spec(text) == spec


def test_decorators_build_the_same_spec() -> None:
    council = Council("critique", task="Write a haiku about tea.", max_tokens=20000,
                      max_cost_usd=0.5)
    council.model("local", model="qwen2.5:7b-instruct", base_url="http://127.0.0.1:11434/v1",
                  api_key_env="LOCAL_KEY", temperature=0.2, max_output_tokens=800,
                  max_concurrency=2, price_in_per_mtok=0.15, price_out_per_mtok=0.6)
    council.room("desk", members=["writer", "critic"])
    council.add_member("writer", role="writer", brief="Draft, then improve.", engine="llm",
                       model="local", temperature=0.7, max_output_tokens=300,
                       system_prompt="You are {{ member }}.",
                       turn_prompt="Turn {{ turn }}: {{ task }}", repair_attempts=2)
    council.add_member("critic", role="critic", engine="llm", model="local",
                       initial_turn=False)
    assert council.spec == loads_spec(COUNCIL)
    assert loads_spec(to_toml(council.spec)) == council.spec


@pytest.mark.parametrize(("old", "new", "anchor", "says"), [
    ('model = "local"\ntemperature', 'model = "locl"\ntemperature', 'model = "locl"',
     "did you mean 'local'"),
    ("temperature = 0.7", "temperature = 2.5", "temperature = 2.5", "less than or equal to 2"),
    ('api_key_env = "LOCAL_KEY"', 'api_key_env = "sk-123"', "api_key_env",
     "never put a key in the file"),
    ('base_url = "http://127.0.0.1:11434/v1"', 'base_url = "localhost:11434"', "base_url",
     "http:// or https://"),
    ("max_concurrency = 2", "max_concurrency = 0", "max_concurrency",
     "greater than or equal to 1"),
    ("price_in_per_mtok = 0.15", "price_in_per_mtok = -1", "price_in_per_mtok",
     "greater than or equal to 0"),
    ("max_output_tokens = 800", "max_output_tokens = 800\nseed = 3", "seed", "seed"),
    ("max_cost_usd = 0.5", "max_cost_usd = true", "max_cost_usd", "max_cost_usd"),
    ('id = "critic"\nrole = "critic"\nengine = "llm"\nmodel = "local"\n',
     'id = "critic"\nrole = "critic"\nengine = "llm"\n', 'engine = "llm"\ninitial',
     "needs model"),
])
def test_bad_values_name_file_line_column(old: str, new: str, anchor: str, says: str) -> None:
    assert old in COUNCIL
    text = COUNCIL.replace(old, new, 1)
    line = text[: text.index(anchor)].count("\n") + 1
    message = _problems(text)
    assert f"c.toml:{line}:1:" in message, message
    assert says in message, message


def test_llm_keys_on_other_engines_are_errors() -> None:
    text = COUNCIL.replace('id = "critic"\nrole = "critic"\nengine = "llm"\nmodel = "local"',
                           'id = "critic"\nrole = "critic"\nengine = "human"\nmodel = "local"')
    message = _problems(text)
    line = text[: text.index('engine = "human"\nmodel')].count("\n") + 2
    assert "model is only for engine 'llm'" in message and f"c.toml:{line}:1" in message


def test_cost_budget_needs_prices() -> None:
    text = COUNCIL.replace("price_in_per_mtok = 0.15\nprice_out_per_mtok = 0.6\n", "")
    message = _problems(text)
    assert "max_cost_usd needs prices" in message and "c.toml:5:1:" in message


def test_schema_covers_profiles_and_llm_members() -> None:
    from jsonschema import Draft202012Validator

    schema = council_json_schema()
    assert "llm" in json.dumps(schema["$defs"]["MemberSpec"]["properties"]["engine"])
    assert "ModelProfile" in schema["$defs"]
    import tomllib

    Draft202012Validator(schema).validate(tomllib.loads(COUNCIL))
    bad = tomllib.loads(COUNCIL)
    bad["models"]["local"]["api_key"] = "sk-secret"
    assert list(Draft202012Validator(schema).iter_errors(bad))


def test_import_wopdsl_does_not_import_openai(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(COUNCIL)
    code = textwrap.dedent(f"""
        import sys
        import wopdsl
        assert "openai" not in sys.modules, "import wopdsl imported openai"
        council = wopdsl.load({str(tmp_path / "c.toml")!r})
        council.compile()
        assert "openai" not in sys.modules, "compile() imported openai"
        print("light")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip() == "light", done.stderr


def test_without_the_extra_validation_names_it(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(COUNCIL)
    # A real interpreter where `openai` cannot be found, as on an install without the extra.
    code = textwrap.dedent(f"""
        import sys
        from importlib.abc import MetaPathFinder
        class NoOpenAI(MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "openai" or name.startswith("openai."):
                    raise ModuleNotFoundError(name)
                return None
        sys.meta_path.insert(0, NoOpenAI())
        from wopdsl.cli import main
        sys.exit(main(["validate", {str(tmp_path / "c.toml")!r}]))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "wopdsl[llm]" in done.stderr and "c.toml:" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
