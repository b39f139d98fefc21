"""export, schema, capabilities, tui, fork, and how errors are shown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import wopdsl.engine
from tests.cli.conftest import Wop, stored_events
from wopdsl.declare import loads_spec

DECORATED = """\
from wopdsl import Council, Reply

council = Council("release-team", task="Prepare a release note.", max_turns_per_member=2,
                  tail_messages=3)
council.room("review", members=["writer", "reviewer"], title="Review desk")
council.human("me", role="editor")


@council.member(role="writer", brief="Draft the release note.")
def writer(turn):
    return Reply(summary="drafted")


@council.member(role="reviewer", brief="Check the {{ task }}", initial_turn=False,
                max_turns=1)
async def reviewer(turn):
    return Reply(summary="checked")


not_a_council = 42
"""

DB = Path(".wop/runs.db")


def test_export_round_trips_a_decorator_council(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "mycouncil.py").write_text(DECORATED, encoding="utf-8")

    done = wop("export", "mycouncil:council")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("[council]\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import mycouncil  # type: ignore[import-not-found]

        exported = loads_spec(done.stdout)
        # The same declaration, with the bound handlers named as references.
        assert [m.handler for m in exported.members] == \
            [None, "mycouncil:writer", "mycouncil:reviewer"]
        assert exported.model_copy(update={"members": [
            m.model_copy(update={"handler": None}) for m in exported.members
        ]}) == mycouncil.council.spec
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("mycouncil", None)
    (tmp_path / "exported.toml").write_text(done.stdout, encoding="utf-8")
    assert wop("validate", "exported.toml").returncode == 0
    # It runs as written: the writer finishes, nobody asks the reviewer, the human waits.
    ran = wop("run", "exported.toml", "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["result"]["agents"][1]["result"] == {"summary": "drafted"}


def test_export_errors_are_clear(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "mycouncil.py").write_text(DECORATED, encoding="utf-8")
    (tmp_path / "broken.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    cases = {
        "missing_module:council": "cannot import module 'missing_module'",
        "broken:council": "cannot import module 'broken': RuntimeError: boom",
        "mycouncil:nothing": "module 'mycouncil' has no attribute 'nothing'",
        "mycouncil:not_a_council": "mycouncil:not_a_council is a int, not a wopdsl.Council",
        "mycouncil": "expected MODULE:ATTR",
    }
    for reference, message in cases.items():
        done = wop("export", reference)
        assert done.returncode == 2, reference
        assert done.stderr.startswith("error[DECLARATION_INVALID]: "), done.stderr
        assert message in done.stderr, done.stderr
        assert "hint:" in done.stderr and "Traceback" not in done.stderr


def test_schema_is_valid_json_schema(wop: Wop) -> None:
    done = wop("schema")
    assert done.returncode == 0
    schema = json.loads(done.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert sorted(schema["properties"]) == ["council", "decisions", "mcp", "members", "models",
                                            "rooms"]
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)


def test_capabilities_document(wop: Wop) -> None:
    doc = json.loads(wop("capabilities").stdout)
    assert doc["protocolVersion"] == "1.0"
    assert doc["supportedEnvelopes"] and all(isinstance(e, str)
                                             for e in doc["supportedEnvelopes"])
    assert set(doc["schemaVersions"]) == set(doc["supportedEnvelopes"])
    assert set(doc["limits"]) == {"clarificationRounds", "schemaRounds", "envelopesPerTurn",
                                  "maxRequestBodyBytes"}
    assert doc["protocolVersions"] == ["1.0", "2.0"]  # what `wop serve` speaks
    assert doc["conversationPrimitive"] is True
    assert doc["multiPartyConversation"] == {
        "supported": True, "maxParticipants": wopdsl.protocol.capabilities.DEFAULT_MAX_PARTICIPANTS}
    custom = json.loads(wop("capabilities", "--max-participants", "5").stdout)
    assert custom["multiPartyConversation"]["maxParticipants"] == 5


def test_tui_without_the_extra(wop: Wop, tmp_path: Path) -> None:
    # A real subprocess in which textual can't be imported.
    code = ("import sys; sys.modules['textual'] = None\n"
            "from wopdsl.cli import main\nraise SystemExit(main(['tui', 'some-run']))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "wop tui needs the TUI extra: pip install 'wopdsl[tui]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_tui_hands_the_target_and_store_to_the_tui_package(wop: Wop, tmp_path: Path) -> None:
    # An unknown run is refused by wopdsl_tui.run_app before any screen is drawn.
    done = wop("tui", "ghost-run", "--store", "elsewhere.db")
    assert done.returncode == 2
    assert done.stderr.startswith("error[RUN_NOT_FOUND]: run ghost-run not found")
    assert "Traceback" not in done.stderr


def test_fork_branches_from_a_sequence(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "src").returncode == 0

    done = wop("fork", "src", "--from", "8", "--run-id", "forked")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("run forked (fork of src at #8, mode branch")
    assert "[review] reviewer team/reviewer/2/0 @writer: Reviewed team/writer/1/0" in done.stdout
    assert "completed: run forked (" in done.stdout
    source = stored_events(tmp_path / DB, "src")
    forked = stored_events(tmp_path / DB, "forked")
    assert [e["type"] for e in forked[:8]] == [e["type"] for e in source[:8]]
    assert forked[-1]["payload"]["outputs"] == source[-1]["payload"]["outputs"]


def test_fork_in_replay_mode_reports_divergence(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "moody.py").write_text(
        "from pathlib import Path\nfrom wopdsl import Reply\n\n"
        "def solo(turn):\n"
        "    return Reply(summary=Path(__file__).with_name('mood.txt').read_text())\n",
        encoding="utf-8")
    (tmp_path / "moody.toml").write_text(
        '[council]\nid = "moody"\ntask = "t"\n\n[[rooms]]\nid = "r"\nmembers = ["solo"]\n\n'
        '[[members]]\nid = "solo"\nrole = "s"\nhandler = "moody:solo"\n', encoding="utf-8")
    (tmp_path / "mood.txt").write_text("calm", encoding="utf-8")
    assert wop("run", "moody.toml", "--run-id", "m").returncode == 0
    same = wop("fork", "m", "--from", "4", "--mode", "replay", "--run-id", "m-same")
    assert same.returncode == 0 and "diverged" not in same.stdout
    (tmp_path / "mood.txt").write_text("stormy", encoding="utf-8")

    done = wop("fork", "m", "--from", "4", "--mode", "replay", "--run-id", "m-other")

    assert done.returncode == 0, done.stderr
    assert "replay diverged from m at #" in done.stdout and ": output" in done.stdout
    kinds = [e["payload"]["divergenceKind"] for e in stored_events(tmp_path / DB, "m-other")
             if e["type"] == "replay.diverged"]
    assert kinds == ["output"]


def test_fork_checks_its_arguments(wop: Wop, release_team: Path) -> None:
    assert wop("fork", "src", "--from", "-1").returncode == 2
    assert wop("fork", "src", "--from", "1", "--mode", "other").returncode == 2
    assert wop("fork", "ghost", "--from", "1").stderr.startswith("error[RUN_NOT_FOUND]")
    assert wop("run", str(release_team), "--run-id", "src").returncode == 0
    done = wop("fork", "src", "--from", "9999")
    assert done.returncode == 2
    assert done.stderr.startswith("error[validation_error]: --from 9999 is outside")
    assert wop("fork", "src", "--from", "5", "--run-id", "src").returncode == 2


def test_internal_errors_hide_the_traceback_unless_debug(tmp_path: Path) -> None:
    code = ("import wopdsl.declare as d\n"  # `wop schema` reads it from here when it runs
            "d.council_json_schema = lambda: 1 / 0\n"
            "from wopdsl.cli import main\nimport sys\nraise SystemExit(main(sys.argv[1:]))\n")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, check=False)

    quiet = run("schema")
    assert quiet.returncode == 1
    assert quiet.stderr.startswith("error[INTERNAL]: ZeroDivisionError: division by zero")
    assert "--debug" in quiet.stderr and "Traceback" not in quiet.stderr
    loud = run("--debug", "schema")
    assert loud.returncode == 1 and "Traceback (most recent call last)" in loud.stderr
    also = run("schema", "--debug")
    assert also.returncode == 1 and "Traceback" in also.stderr


def test_debug_shows_the_traceback_of_a_wop_error(wop: Wop) -> None:
    done = wop("--debug", "transcript", "nope")
    assert done.returncode == 2
    assert "Traceback" in done.stderr and "error[RUN_NOT_FOUND]" in done.stderr


def test_help_and_version(wop: Wop) -> None:
    done = wop("--help")
    assert done.returncode == 0
    for command in ("validate", "run", "resume", "reply", "events", "replay", "transcript",
                    "rooms", "runs", "export", "schema", "capabilities", "tui", "fork"):
        assert command in done.stdout
    assert wop("--version").stdout.startswith("wop (wopdsl) ")


def test_the_wop_console_script(tmp_path: Path, release_team: Path) -> None:
    script = Path(sys.executable).parent / "wop"
    assert script.is_file(), "pip install -e . installs the `wop` entry point"
    done = subprocess.run([str(script), "run", str(release_team), "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
