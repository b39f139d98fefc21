"""The report's per-arm figures: turns, tokens, cost, failures and the §22 deliberation metrics.

Two script councils whose deliberation is known in advance: ``board`` (one blind round; a,
b vote x, c votes y) and ``debate`` (two blind rounds; round 1 a votes x, b and c vote y;
round 2 b changes to x). Every aggregated figure is computed here by hand from those votes.
"""

from __future__ import annotations

from pathlib import Path

from tests.evals.conftest import BOARD, board_vs_solo, write
from wopdsl import attach, open_store
from wopdsl.evals.api import run_eval


def _member(member: str, *votes: str) -> str:
    steps = "".join(f"""
[[members.script]]
summary = "{choice}"
posts = [{{ room = "board", text = "{choice}" }}]
votes = [{{ decision = "pick", choice = "{choice}", reason = "round {n}" }}]
""" for n, choice in enumerate(votes, start=1))
    return f'\n[[members]]\nid = "{member}"\nrole = "{member}"\nengine = "script"\n{steps}'


DEBATE = BOARD.split("[[members]]")[0].replace("id = \"board\"\ntask", "id = \"debate\"\ntask") \
    .replace("rounds = 1", "rounds = 2") + _member("a", "x", "x") + _member("b", "y", "x") + \
    _member("c", "y", "y") + """
[[members]]
id = "chair"
role = "chair"
engine = "script"
script = [{ summary = "{{ task }} = 4 (x)" }]
"""

EVAL = board_vs_solo("figures", settings="jobs = 2\n").replace('council = "solo.toml"',
                                                               'council = "debate.toml"') \
    .replace('id = "solo"', 'id = "debate"')


def test_every_arm_figure_aggregates_its_runs(tmp_path: Path) -> None:
    write(tmp_path, "board.toml", BOARD)
    write(tmp_path, "debate.toml", DEBATE)
    report = run_eval(write(tmp_path, "e.toml", EVAL), tmp_path / "runs.db")
    assert report.passed and report["finished"] == 4
    board, debate = report["arms"]
    for arm in (board, debate):
        assert (arm["runs"], arm["completed"], arm["failed"]) == (2, 2, 0)
        assert arm["tokens"] == {"total": 0, "perRun": 0.0} and arm["costUsd"] is None
        assert arm["judges"] is None and arm["wallS"]["perRun"] > 0
    # board: a, b, c one turn each and the chair's; debate: two rounds, then the chair.
    assert (board["turns"]["perRun"], debate["turns"]["perRun"]) == (4.0, 7.0)
    assert board["deliberation"] == {
        "decisions": 2, "votesPerRun": 3.0, "flipsPerRun": 0.0, "unanimous": 0.0,
        "dissentPerDecision": 1.0,   # c
        "meanMargin": 0.3333,        # (2 - 1) / 3
        "agreement": 0.6667,         # a and b voted with the outcome, c did not
        "firstAnswerSurvival": 1.0,  # one round: every first answer is the last
        "changedByDebate": 0.0, "mentionsAnswered": None}
    assert debate["deliberation"] == {
        "decisions": 2, "votesPerRun": 6.0,
        "flipsPerRun": 1.0,          # b: y, then x
        "unanimous": 0.0, "dissentPerDecision": 1.0, "meanMargin": 0.3333,
        "agreement": 0.6667,
        "firstAnswerSurvival": 0.6667,  # a kept x and c kept y; b did not keep y
        "changedByDebate": 1.0,      # round 1 alone: y (b, c); after round 2: x (a, b)
        "mentionsAnswered": None}
    store = open_store(tmp_path / "runs.db")
    try:  # the per-run figures are those `wop metrics RUN` shows
        for run in report["runs"]:
            metrics = attach(store, run["runId"]).metrics()
            pick = metrics.decisions["pick"]
            assert run["deliberation"]["flips"] == pick.flips
            assert run["deliberation"]["dissent"] == pick.dissent
            assert run["deliberation"]["changedByDebate"] == int(
                pick.first_round_outcome != pick.outcome)
            assert run["turns"] == sum(m.turns for m in metrics.members.values())
    finally:
        store.close()
