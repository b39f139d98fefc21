"""`wop eval --record` then `--offline` with the model server stopped: the same report, again.

The answers of every model call — the arms' members and the judges — are written to
cassettes; offline, a fresh store replays them without a model. A changed council fails,
naming the member and the turn whose request changed, as snapshot tests do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
pytest.importorskip("yaml", reason="cassettes need PyYAML (wopdsl[testing])")

from tests.cli.test_eval_judges import _judging, folder  # noqa: F401 - a fixture
from tests.cli.test_eval_models import SECRET, _wop
from wopdsl.testing.model_server import ScriptedModelServer


def _figures(path: Path) -> dict[str, Any]:
    """The report without what differs from one run to the next (wall time)."""
    doc = json.loads(path.read_text())
    for arm in doc["arms"]:
        arm.pop("wallS")
    for run in doc["runs"]:
        run.pop("wallS")
        run.pop("how")
    return {key: doc[key] for key in ("arms", "comparisons", "gates", "runs", "problems")}


def test_record_then_replay_offline_with_the_server_stopped(folder: Path) -> None:  # noqa: F811
    with ScriptedModelServer() as server:
        server.default, _calls = _judging()
        recorded = _wop(folder, server, "eval", "e.toml", "--record", "--json", "live.json",
                        "--limit", "4", "--quiet")
        assert recorded.returncode == 0, recorded.stderr
        made, gone = len(server.requests), server.url
    assert made == 16  # 8 runs and their 8 judgements
    cassettes = sorted(p.relative_to(folder).as_posix()
                       for p in (folder / "__cassettes__").rglob("*.yaml"))
    assert cassettes == [f"__cassettes__/models/{arm}/q{i}.1.yaml" for arm in ("strong", "weak")
                         for i in range(4)]
    text = (folder / "__cassettes__/models/strong/q3.1.yaml").read_text()
    assert "member: solver" in text and "member: judge" in text and SECRET not in text

    # The server is gone: its port answers nothing. A fresh store replays everything.
    for store in ("a.db", "b.db"):
        offline = _wop(folder, gone, "--store", store, "eval", "e.toml", "--offline",
                       "--json", f"{store}.json", "--limit", "4", "--quiet")
        assert offline.returncode == 0, offline.stderr
        assert _figures(folder / f"{store}.json") == _figures(folder / "live.json")

    # A changed council: the solver's brief is part of every request it makes.
    solver = (folder / "solver.toml").read_text()
    (folder / "solver.toml").write_text(solver.replace('role = "solver"',
                                                       'role = "solver"\nbrief = "Be quick."'))
    changed = _wop(folder, gone, "--store", "c.db", "eval", "e.toml", "--offline",
                   "--limit", "1", "--quiet")
    assert changed.returncode == 1
    assert changed.stderr.startswith("error[CASSETTE_MISMATCH]: recorded answers did not match:")
    assert "the request of member 'solver', turn 1 (run 1, attempt 0, call 1) no longer " \
           "matches the recording in" in changed.stderr
    assert "re-record with `wop eval e.toml --record`" in changed.stderr
    assert "Be quick." in changed.stderr  # the diff of the request shows what changed
    assert "strong  correct  0.0 % (0/1)" in changed.stdout  # the runs failed, visibly


def test_recording_needs_runs_made_now(folder: Path) -> None:  # noqa: F811
    with ScriptedModelServer() as server:
        server.default, _calls = _judging()
        assert _wop(folder, server, "eval", "e.toml", "--limit", "1", "--quiet").returncode == 0
        again = _wop(folder, server, "eval", "e.toml", "--record", "--limit", "1", "--quiet")
    assert again.returncode == 1
    assert "strong/q0.1.yaml: the run had finished in the store before, so nothing was " \
           "called and nothing recorded; record on a fresh store" in again.stderr
    assert not (folder / "__cassettes__").exists()


def test_a_damaged_cassette_stops_the_eval_clearly(folder: Path) -> None:  # noqa: F811
    with ScriptedModelServer() as server:
        server.default, _calls = _judging()
        recorded = _wop(folder, server, "eval", "e.toml", "--record", "--limit", "2",
                        "--quiet")
        assert recorded.returncode == 0, recorded.stderr
        gone = server.url
    (folder / "__cassettes__/models/weak/q1.1.yaml").write_text("format: [not, a, cassette\n")
    damaged = _wop(folder, gone, "--store", "d.db", "eval", "e.toml", "--offline", "--limit",
                   "2", "--quiet")
    assert damaged.returncode == 1
    assert damaged.stderr.startswith("error[CASSETTE_MISMATCH]: ")
    assert "weak/q1.1.yaml: not a readable cassette" in damaged.stderr
    assert "re-record it with `wop eval e.toml --record`" in damaged.stderr
    assert "Traceback" not in damaged.stderr
