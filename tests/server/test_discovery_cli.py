"""One discovery document: `wop capabilities` prints what `wop serve` serves, v1 and v2.

For the same councils and options, a real `wop capabilities` subprocess and a real `wop serve`
on loopback (`GET /.well-known/openwop`, with and without `OpenWOP-Version: 2.0`) give the
same document: the host's version list, limits, pause/resume, replay, model provenance for
`llm` councils, and the conformance fixtures.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import COUNCILS, REPO, Served

V2 = {"OpenWOP-Version": "2.0"}


def _capabilities(cwd: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "wopdsl", "capabilities", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(done.stdout)
    return doc


def _served(served: Served) -> tuple[dict[str, Any], dict[str, Any]]:
    status, v1, _ = served.request("GET", "/.well-known/openwop", token=None)
    status2, v2, _ = served.request("GET", "/.well-known/openwop", token=None, headers=V2)
    assert status == status2 == 200
    return v1, v2


@pytest.mark.parametrize("options", [(), ("--max-participants", "5", "--max-body-bytes", "9000")],
                         ids=["defaults", "options"])
def test_the_same_councils_give_the_same_document(serve: Any, tmp_path: Path,
                                                   options: tuple[str, ...]) -> None:
    paths = (str(COUNCILS / "desk.toml"), str(REPO / "councils" / "llm-review.toml"))
    served = serve(*paths, args=options)

    v1, v2 = _served(served)

    assert _capabilities(tmp_path, *paths, *options) == v1
    assert _capabilities(tmp_path, *paths, *options, "--v2") == v2
    assert v1["protocolVersions"] == ["1.0", "2.0"] == v2["protocolVersions"]
    assert v1["conversationTurnModelProvenance"] == {"supported": True}  # llm-review
    if options:
        assert v1["multiPartyConversation"]["maxParticipants"] == 5
        assert v1["limits"]["maxRequestBodyBytes"] == 9000 == v2["limits"]["maxRequestBodyBytes"]


def test_without_a_path_both_read_councils_and_without_it_the_bare_host(
        serve: Any, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "councils").mkdir(parents=True)
    shutil.copy(REPO / "councils" / "llm-review.toml", project / "councils")
    served = serve(cwd=project, default_paths=True)

    v1, v2 = _served(served)

    assert _capabilities(project) == v1
    assert _capabilities(project, "--v2") == v2
    assert "conversationTurnModelProvenance" in v1
    # Where `wop serve` has no councils/ to serve, `wop capabilities` describes a host whose
    # councils have no llm member: no model provenance, everything else the same.
    bare = _capabilities(tmp_path)
    assert bare == {k: v for k, v in v1.items() if k != "conversationTurnModelProvenance"}
    assert bare == _served(serve(COUNCILS / "desk.toml"))[0]


def test_the_conformance_fixtures_are_advertised_alike(serve: Any, tmp_path: Path) -> None:
    served = serve(args=("--conformance",), default_paths=True)

    v1, v2 = _served(served)

    assert _capabilities(tmp_path, "--conformance") == v1
    assert _capabilities(tmp_path, "--conformance", "--v2") == v2
    assert "conformance-noop" in v1["fixtures"] and v2["fixtures"] == v1["fixtures"]
