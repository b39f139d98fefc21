"""Recorded answers from the real small model: record once, replay offline, same snapshots.

A fresh project (a council of two ``llm`` members and a test marked ``wop_cassette``) is run
with pytest in a subprocess, as a user runs it: first ``--wop-record --snapshot-update``
against llama.cpp's ``llama-server`` with SmolLM2-135M (``$WOPDSL_TEST_LLAMA_URL``, from
``.ci/llama.sh``), then plainly with ``$OPENAI_BASE_URL`` on a closed port. The replay must
reproduce the transcript and the normalised event log written while recording, byte for byte.
What the model says is not judged.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.real_model import llama_url, served_model

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

COUNCIL = '''\
[council]
id = "small-review"
task = "Decide whether to ship the release on Friday."
max_turns_per_member = 1

[[rooms]]
id = "desk"
members = ["proposer", "critic"]

[[members]]
id = "proposer"
role = "proposer"
brief = "Say in one sentence whether to ship, and ask the critic."
engine = "llm"
model = "small"

[[members]]
id = "critic"
role = "critic"
brief = "Name one risk in one sentence."
engine = "llm"
model = "small"
initial_turn = false

[models.small]
model = "smollm2"
temperature = 0.0
max_output_tokens = 96
'''

TEST = '''\
import pytest

@pytest.mark.wop_cassette
def test_small_review(run_council, snapshot):
    run = run_council("councils/small-review.toml")
    assert run.status in {"completed", "failed"}   # the model's wisdom is not judged
    assert run.transcript == snapshot
    assert run.events == snapshot
'''


def pytest_in(project: Path, base_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "WOP_RECORD", "OPENAI_"))}
    env["OPENAI_BASE_URL"] = base_url
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:textual-snapshot",
         "-p", "no:hypothesispytest", "-W", "error", *args],
        cwd=project, env=env, capture_output=True, text=True, timeout=900, check=False)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_recording_of_the_real_model_replays_offline_identically(tmp_path: Path) -> None:
    url = llama_url()
    (tmp_path / "councils").mkdir()
    (tmp_path / "councils" / "small-review.toml").write_text(COUNCIL, encoding="utf-8")
    (tmp_path / "test_small.py").write_text(TEST, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")

    recorded = pytest_in(tmp_path, url, "--wop-record", "--snapshot-update")

    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "2 snapshots generated." in recorded.stdout
    snapshots = tmp_path / "__snapshots__" / "test_small"
    written = {p.name: p.read_bytes() for p in sorted(snapshots.iterdir())}
    cassette = yaml.safe_load((tmp_path / "__cassettes__" / "test_small" /
                               "test_small_review.yaml").read_text(encoding="utf-8"))
    exchanges = cassette["exchanges"]
    assert exchanges and exchanges[0]["member"] == "proposer"
    served = served_model(url)
    for exchange in exchanges:  # each answer came from the real server
        assert exchange["response"]["status"] == 200
        assert exchange["response"]["body"]["model"] == served
        assert exchange["response"]["body"]["usage"]["completion_tokens"] > 0

    replayed = pytest_in(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")

    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "2 snapshots passed." in replayed.stdout
    assert {p.name: p.read_bytes() for p in sorted(snapshots.iterdir())} == written
