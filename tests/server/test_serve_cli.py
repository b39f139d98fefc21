"""`wop serve` as a command: what it serves, what it refuses, how it stops."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import COUNCILS, REPO, start_server


def test_serves_files_and_folders_and_lists_them(serve: Any, tmp_path: Path) -> None:
    served = serve(COUNCILS / "desk.toml", COUNCILS / "deadline.toml")
    status, body, _ = served.request("GET", "/v1/workflows")
    assert status == 200
    assert [w["workflowId"] for w in body["workflows"]] == ["desk", "deadline"]
    desk = served.request("GET", "/v1/workflows/desk")[1]
    assert desk["members"][1] == {"id": "visitor", "role": "user", "engine": "human",
                                  "principal": "alice"}
    assert desk["definition"]["council"]["id"] == "desk" and desk["digest"].startswith("sha256:")
    folder = serve(COUNCILS)
    ids = {w["workflowId"] for w in folder.request("GET", "/v1/workflows")[1]["workflows"]}
    assert ids == {"desk", "deadline", "pingpong"}


def test_the_docs_show_what_wop_serve_councils_prints(serve: Any) -> None:
    # docs/guides/serve.md and docs/cli.md print `wop serve councils/`'s first line.
    served = serve(REPO / "councils")
    first = next(line for line in served.logs().splitlines() if line.startswith("wop serve: "))
    assert f"store {served.store}," in first
    first = first.replace(f"store {served.store},", "store .wop/runs.db,")
    for doc in ("docs/guides/serve.md", "docs/cli.md"):
        text = (REPO / doc).read_text(encoding="utf-8")
        shown = [line for line in text.splitlines() if line.startswith("wop serve: ")]
        assert shown == [first], doc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_clean_stop_exits_0_and_leaves_runs_resumable(serve: Any, sig: int) -> None:
    served = serve()
    run_id = served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    assert served.stop(sig) == 0
    again = serve(store=served.store)
    assert again.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "waiting-input"


def test_invalid_or_missing_councils_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[council]\nid = "bad"\ntask = "x"\nmax_turns_per_member = 0\n')
    served = start_server(tmp_path, bad, wait=False)
    assert served.proc.wait(30) == 2
    assert "error[DECLARATION_INVALID]" in served.logs() and "bad.toml:4" in served.logs()
    served = start_server(tmp_path, tmp_path / "nowhere", wait=False)
    assert served.proc.wait(30) == 2
    assert "no such file or folder" in served.logs()
    twin = tmp_path / "twin.toml"
    twin.write_text((COUNCILS / "desk.toml").read_text())
    served = start_server(tmp_path, COUNCILS / "desk.toml", twin, wait=False)
    assert served.proc.wait(30) == 2
    assert "council id 'desk' is also the id of" in served.logs()
    empty = tmp_path / "empty"
    empty.mkdir()
    served = start_server(tmp_path, empty, wait=False)
    assert served.proc.wait(30) == 2
    assert "no .toml council files" in served.logs()
    for text in (served.logs(),):
        assert "Traceback" not in text


def test_a_council_too_large_for_the_host_is_refused_at_creation(serve: Any,
                                                                 tmp_path: Path) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--max-participants", "2"))
    assert served.request("POST", "/v1/runs", {"workflowId": "desk"})[0] == 201
    big = tmp_path / "big.toml"
    big.write_text('[council]\nid = "big"\ntask = "t"\n[[rooms]]\nid = "all"\n'
                   'members = ["a", "b", "c"]\n' + "".join(
                       f'[[members]]\nid = "{m}"\nrole = "r"\nengine = "script"\n'
                       f'script = [{{ summary = "ok" }}]\n' for m in "abc"))
    served = serve(big, args=("--max-participants", "2"))
    status, body, _ = served.request("POST", "/v1/runs", {"workflowId": "big"})
    assert (status, body["error"]) == (422, "conversation_roster_exceeded")
    assert "maxParticipants" in body["message"] and body["details"]["maxParticipants"] == 2
