"""The published two-member example of DESIGN.md §3-§4, shared by every test area."""

from __future__ import annotations

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
  { summary = "Finished {{ task }}: {{ triggers[0].text }}" },
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
'''  # noqa: E501 - the file exactly as DESIGN.md §4 prints it.
"""DESIGN.md §4's council file, verbatim."""

REVIEWER_TEXT = "Reviewed team/writer/1/0: Please review: Prepare a release note."
"""The reviewer's reply text the published example must reproduce."""
