"""Shared text for the testing-plugin tests."""

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

INI = '''\
[pytest]
addopts = -p no:cacheprovider
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
'''
"""The inner sessions' config: as strict as the project's own."""
