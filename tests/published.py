"""The published two-member example of DESIGN.md §3-§4, shared by every test area."""

from __future__ import annotations

from typing import Any

from wopdsl import Council, Post, Reply, Turn

RELEASE_TEAM_TOML = '''\
[council]
id = "release-team"
version = 1
task = "Prepare a release note."
global_concurrency = 1
max_turns_per_member = 2
tail_messages = 3

[[rooms]]
id = "review"
members = ["writer", "reviewer"]

[[members]]
id = "writer"
role = "writer"
brief = "Draft the release note."
engine = "script"
script = [
  { summary = "Review requested.", posts = [{ room = "review", text = "Please review: {{ task }}", mentions = ["reviewer"] }] },
  { summary = "Finished after review {{ triggers[0].id }}: {{ task }}" },
]

[[members]]
id = "reviewer"
role = "reviewer"
brief = "Check the draft."
initial_turn = false
engine = "script"
script = [
  { summary = "Draft checked.", posts = [{ room = "review", text = "Reviewed {{ triggers[0].id }}: {{ triggers[0].text }}", mentions = ["writer"] }] },
]
'''  # noqa: E501 - the file as DESIGN.md §4 prints it, but for one line (below).
"""DESIGN.md §4's council file, but for the writer's closing summary: §4's
``Finished {{ task }}: {{ triggers[0].text }}`` printed "Finished Prepare a release note.: …"
(issue 35). §3's published reviewer text (:data:`REVIEWER_TEXT`) is unchanged."""

REVIEWER_TEXT = "Reviewed team/writer/1/0: Please review: Prepare a release note."
"""The reviewer's reply text the published example must reproduce."""


def decorated_release_team(seen: list[str] | None = None) -> Council:
    """DESIGN.md §5: the same council with decorators (a sync writer, an async reviewer).

    Args:
        seen: When given, each handler appends its member id on every turn.
    """
    council = Council("release-team", task="Prepare a release note.", max_turns_per_member=2,
                      tail_messages=3)
    council.room("review", members=["writer", "reviewer"])

    @council.member(role="writer", brief="Draft the release note.")
    def writer(turn: Turn) -> Reply:
        if seen is not None:
            seen.append("writer")
        if turn.turn == 1:
            return Reply(summary="Review requested.", posts=[
                Post(room="review", text=f"Please review: {turn.task}", mentions=["reviewer"])])
        return Reply(summary=f"Finished after review {turn.triggers[0].id}: {turn.task}")

    @council.member(role="reviewer", brief="Check the draft.", initial_turn=False)
    async def reviewer(turn: Turn) -> dict[str, Any]:
        if seen is not None:
            seen.append("reviewer")
        asked = turn.triggers[0]
        return {"summary": "Draft checked.", "posts": [
            {"roomId": "review", "text": f"Reviewed {asked.id}: {asked.text}",
             "mentions": ["writer"]}]}

    return council
