"""Handler modules: each council folder its own namespace; export names handlers; validate is
honest about members `wop run` cannot run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import wopdsl
from tests.bounded import bounded_wop

COUNCIL = """\
[council]
id = "{name}"
task = "Say who you are."

[[members]]
id = "speaker"
role = "speaker"
handler = "agents:speak"
"""


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "council.toml").write_text(COUNCIL.format(name=name), encoding="utf-8")
    (folder / "helpers.py").write_text(f"WHO = {name!r}\n", encoding="utf-8")
    (folder / "agents.py").write_text(
        "from . import helpers\n\n"
        "def speak(turn):\n"
        "    return f'I am {helpers.WHO}'\n", encoding="utf-8")
    return folder


async def test_two_councils_with_an_agents_py_each_never_share_a_module(
        tmp_path: Path) -> None:
    first, second = _folder(tmp_path, "first"), _folder(tmp_path, "second")
    a = await wopdsl.load(first / "council.toml").arun(store="memory:")
    b = await wopdsl.load(second / "council.toml").arun(store="memory:")
    assert a.result["agents"][0]["result"] == {"summary": "I am first"}
    assert b.result["agents"][0]["result"] == {"summary": "I am second"}
    assert "agents" not in sys.modules or not str(
        getattr(sys.modules["agents"], "__file__", "")).startswith(str(tmp_path))
    assert str(first) not in sys.path and str(second) not in sys.path


def test_a_council_folder_never_shadows_the_standard_library(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "shadow")
    (folder / "csv.py").write_text("raise SystemExit('shadowed the standard library')\n",
                                   encoding="utf-8")
    (folder / "agents.py").write_text(
        "def speak(turn):\n    import csv\n    return csv.__name__\n", encoding="utf-8")
    done = bounded_wop("run", "shadow/council.toml", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["agents"][0]["result"] == {"summary": "csv"}


def test_sibling_absolute_imports_still_resolve(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "absolute")
    (folder / "agents.py").write_text(
        "import helpers\n\ndef speak(turn):\n    return helpers.WHO\n", encoding="utf-8")
    done = bounded_wop("run", "absolute/council.toml", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["agents"][0]["result"] == {"summary": "absolute"}


DECORATED = """\
from wopdsl import Council

council = Council("lambdas", task="T")
council.add_member("anon", role="r")
council.bind("anon")(lambda turn: "hi")


def make():
    def nested(turn):
        return "nested"
    return nested


council.add_member("inner", role="r")
council.bind("inner")(make())
council.add_member("nobody", role="r")
"""


def test_export_refuses_handlers_a_file_cannot_name(tmp_path: Path) -> None:
    (tmp_path / "lambdas.py").write_text(DECORATED, encoding="utf-8")
    done = bounded_wop("export", "lambdas:council", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error[DECLARATION_INVALID]:")
    assert "members[0] (anon).handler: the handler of 'anon' cannot be named" in done.stderr
    assert "lambda or a nested function" in done.stderr
    assert "members[1] (inner).handler" in done.stderr
    assert "members[2] (nobody): python member 'nobody' has no handler" in done.stderr
    assert done.stdout == ""


def test_validate_refuses_a_file_wop_run_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(
        '[council]\nid = "c"\ntask = "T"\n\n[[members]]\nid = "w"\nrole = "r"\n',
        encoding="utf-8")
    done = bounded_wop("validate", "c.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert "c.toml:5:1: members[0] (w): python member 'w' has no handler" in done.stderr
    assert "@council.bind" in done.stderr


@pytest.mark.parametrize("reference", ["agents:missing", "agents:speak.nothing"])
def test_a_bad_handler_reference_is_located(tmp_path: Path, reference: str) -> None:
    folder = _folder(tmp_path, "bad")
    text = (folder / "council.toml").read_text(encoding="utf-8")
    (folder / "council.toml").write_text(text.replace("agents:speak", reference),
                                         encoding="utf-8")
    done = bounded_wop("validate", "bad/council.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert "council.toml:8:1: members[0].handler: cannot import handler" in \
        done.stderr
