"""Twenty people reply at once from twenty processes: every post lands, none is refused for
losing an append race (``STORE_CONFLICT`` is retried at the door), and the log passes
`wop check`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PEOPLE = [f"p{i:02d}" for i in range(20)]


def council() -> str:
    members = ", ".join(f'"{p}"' for p in PEOPLE)
    humans = "\n".join(f'[[members]]\nid = "{p}"\nrole = "person"\nengine = "human"\n'
                       for p in PEOPLE)
    mentions = ", ".join(f'"{p}"' for p in PEOPLE)
    return f"""\
[council]
id = "town-hall"
task = "Vote."
max_turns_per_member = 2

[[rooms]]
id = "hall"
members = ["host", {members}]

[[members]]
id = "host"
role = "host"
engine = "script"
script = [
  {{ summary = "Asked.", posts = [
    {{ room = "hall", text = "Vote, everyone.", mentions = [{mentions}] }},
  ] }},
]

{humans}"""


@pytest.mark.slow
def test_twenty_simultaneous_replies_all_land(tmp_path, wop):
    (tmp_path / "hall.toml").write_text(council())
    assert wop("run", "hall.toml", "--run-id", "h").returncode == 3
    procs = [subprocess.Popen([sys.executable, "-m", "wopdsl", "reply", "h", "--room", "hall",
                               "--as", person, "--json", f"{person} votes yes"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for person in PEOPLE]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        results.append((proc.returncode, out, err))
    for person, (code, _out, err) in zip(PEOPLE, results, strict=True):
        assert code in (0, 3, 4), (person, err)
        assert "STORE_CONFLICT" not in err, (person, err)
    final = json.loads(wop("replay", "h", "--json").stdout)
    assert final["status"] == "completed"
    texts = wop("transcript", "h").stdout
    assert all(f"{person} votes yes" in texts for person in PEOPLE)
    assert wop("check", "h").returncode == 0
