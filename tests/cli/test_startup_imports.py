"""`wop --help` and the read-only commands load only what they need (they start fast).

Each command runs in a real subprocess the way the `wop` entry point starts it, against a
real SQLite store, and reports the modules it loaded. No time is asserted here (see
`bench/startup.py`): what is asserted is that the heavy parts (template engine, JSON Schema,
TUI, model clients, the engine, the council declaration models, asyncio) stay out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Wop, _env

REPORT = """\
import json, sys
from wopdsl.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(sorted(sys.modules), out)
raise SystemExit(code)
"""

NEVER = (
    "jinja2", "jsonschema", "textual", "rich", "openai", "httpx", "IPython", "ipywidgets",
    "starlette", "uvicorn", "psycopg", "asyncio", "tomllib", "tomli_w",
    "wopdsl.engine", "wopdsl.agents", "wopdsl.compile", "wopdsl.declare", "wopdsl.council",
    "wopdsl.run", "wopdsl.model.spec", "wopdsl.model.llm", "wopdsl.server", "wopdsl.jupyter",
    "wopdsl_tui", "wopdsl.protocol.event_model", "wopdsl.protocol.check", "opentelemetry",
    "wopdsl.projections.trace.derive", "wopdsl.projections.diff",
)
"""Top-level packages and wopdsl modules none of these commands may load."""


def _loaded(tmp_path: Path, *args: str) -> set[str]:
    report = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", REPORT, str(report), *args], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return set(json.loads(report.read_text(encoding="utf-8")))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER))


@pytest.fixture
def store(wop: Wop, tmp_path: Path, release_team: Path, human_council: Path) -> str:
    """A SQLite store with a completed run (`done`) and one waiting for input (`ask`)."""
    assert wop("run", str(release_team), "--run-id", "done", "--store", "runs.db"
               ).returncode == 0
    assert wop("run", str(human_council), "--run-id", "ask", "--store", "runs.db"
               ).returncode == 3
    return "runs.db"


def test_help_loads_no_model_layer(tmp_path: Path) -> None:
    modules = _loaded(tmp_path, "--help")
    assert _heavy(modules) == []
    assert not {m for m in modules if m.split(".")[0] == "pydantic"}
    assert "wopdsl.cli._commands" not in modules and "wopdsl.cli._drive" not in modules


def _pydantic(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core"))


@pytest.mark.parametrize("command", [["runs"], ["runs", "--json"], ["events", "done"],
                                     ["events", "ask"], ["transcript", "done"],
                                     ["transcript", "ask"]])
def test_read_only_commands_load_nothing_heavy(tmp_path: Path, store: str,
                                               command: list[str]) -> None:
    modules = _loaded(tmp_path, *command, "--store", store)
    assert _heavy(modules) == []
    assert "wopdsl.cli._drive" not in modules
    if command[0] == "events":
        # Printing the log needs no fold, so no model at all.
        assert _pydantic(modules) == []


def test_listing_ended_runs_loads_no_model(wop: Wop, tmp_path: Path,
                                           release_team: Path) -> None:
    # An ended run's status is its last event's; only a run still going is folded.
    assert wop("run", str(release_team), "--run-id", "done", "--store", "runs.db"
               ).returncode == 0
    modules = _loaded(tmp_path, "runs", "--store", "runs.db")
    assert _heavy(modules) == [] and _pydantic(modules) == []


def test_the_public_api_still_loads_on_use(tmp_path: Path) -> None:
    # Lazy names are the same objects as before; `wopdsl.compile` stays the function even
    # after its subpackage's modules are imported.
    code = (
        "import wopdsl, wopdsl.compile.graph, wopdsl.model, wopdsl.protocol\n"
        "from wopdsl.compile import compile as fn\n"
        "from wopdsl.council import Council\n"
        "from wopdsl.protocol.event_model import RunEvent\n"
        "assert wopdsl.compile is fn and wopdsl.Council is Council, wopdsl.compile\n"
        "assert wopdsl.protocol.RunEvent is RunEvent\n"
        "assert wopdsl.model.CouncilSpec.__module__ == 'wopdsl.model.spec'\n"
        "assert set(wopdsl.__all__) <= set(dir(wopdsl))\n"
        "try:\n"
        "    wopdsl.nothing\n"
        "except AttributeError as exc:\n"
        "    assert 'nothing' in str(exc)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_no_endpoint_imports_no_opentelemetry(wop: Wop, tmp_path: Path, release_team: Path,
                                              human_council: Path) -> None:
    # Runs, replies and forks export nothing and load no OpenTelemetry module without an
    # endpoint (or --otel): start-up stays as it was.
    env = {k: v for k, v in _env().items() if not k.startswith("OTEL_")}
    for args in (["run", str(release_team), "--run-id", "r", "--store", "runs.db"],
                 ["run", str(human_council), "--run-id", "h", "--store", "runs.db"],
                 ["reply", "h", "--room", "desk", "Aurora", "--store", "runs.db"],
                 ["fork", "r", "--from", "8", "--run-id", "f", "--store", "runs.db"]):
        report = tmp_path / "modules.json"
        done = subprocess.run([sys.executable, "-c", REPORT, str(report), *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode in (0, 3), done.stdout + done.stderr
        modules = set(json.loads(report.read_text(encoding="utf-8")))
        assert sorted(m for m in modules if m.split(".")[0] == "opentelemetry") == [], args
        assert "wopdsl.projections.trace.live" not in modules


def test_diff_loads_only_what_it_needs(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "a", "--store", "runs.db").returncode == 0
    assert wop("run", str(release_team), "--run-id", "b", "--store", "runs.db").returncode == 0
    report = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", REPORT, str(report), "diff", "a", "b",
                           "--store", "runs.db"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    modules = set(json.loads(report.read_text(encoding="utf-8")))
    # Only the diff itself: no engine, no asyncio, no run handle, no OpenTelemetry.
    heavy = _heavy(modules)
    assert "wopdsl.projections.diff.align" in heavy
    assert all(m.startswith("wopdsl.projections.diff") for m in heavy), heavy
