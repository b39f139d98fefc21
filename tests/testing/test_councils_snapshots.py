"""Every ready-made council in ``councils/`` is locked by snapshots (DESIGN.md §16).

A change in the engine, the projections or a council file shows up here as a snapshot diff.
Councils are found when the tests are collected, so a new file is covered at once: record
its snapshots with ``pytest tests/testing/test_councils_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from wopdsl import WopError, load
from wopdsl.testing.fixtures import CouncilRunner
from wopdsl.testing.snapshot import EventLogSnapshot, MermaidSnapshot, TextSnapshot

COUNCILS = sorted((Path(__file__).resolve().parents[2] / "councils").glob("*.toml"))


def test_the_councils_folder_is_found() -> None:
    assert any(path.name == "release-team.toml" for path in COUNCILS)


@pytest.mark.parametrize("path", COUNCILS, ids=lambda path: path.stem)
def test_run(path: Path, run_council: CouncilRunner, snapshot: SnapshotAssertion,
             monkeypatch: pytest.MonkeyPatch) -> None:
    """The transcript and the normalised event log (a run waiting for a person stops there).

    Councils with ``llm`` members run against the scripted model server on loopback.
    """
    if any(m.engine == "llm" for m in load(path).spec.members):
        pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
        from wopdsl.testing.model_server import ScriptedModelServer
        from wopdsl.testing.review_answers import council_answer

        server = ScriptedModelServer().start()
        server.default = council_answer
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        try:
            _run_and_lock(path, run_council, snapshot)
        finally:
            server.stop()
        return
    _run_and_lock(path, run_council, snapshot)


def _run_and_lock(path: Path, run_council: CouncilRunner, snapshot: SnapshotAssertion) -> None:
    try:
        run = run_council(path)
    except WopError as error:
        # A council the host refuses (e.g. a room over maxParticipants) locks its refusal.
        assert error.render() + "\n" == snapshot(extension_class=TextSnapshot)
        return
    assert run.status in {"completed", "failed", "waiting-input"}
    assert run.transcript == snapshot
    assert run.events == snapshot(extension_class=EventLogSnapshot)


@pytest.mark.parametrize("path", COUNCILS, ids=lambda path: path.stem)
def test_graph(path: Path, snapshot: SnapshotAssertion) -> None:
    """What the compiler built: ``to_json()`` and ``to_mermaid()``."""
    graph = load(path).compile()
    assert graph.to_json() == snapshot(extension_class=JSONSnapshotExtension)
    assert graph.to_mermaid() == snapshot(extension_class=MermaidSnapshot)
