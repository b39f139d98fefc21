"""Auth fails closed; principals guard members; tokens never leak."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tests.server.conftest import ALICE, BOB, start_server

TURN = {"resumeValue": {"role": "user", "content": {"text": "Hi @bot", "mentions": ["bot"]}}}


def test_requests_without_a_valid_token_get_401(serve: Any, tokens_file: Path) -> None:
    served = serve(args=("--tokens", str(tokens_file)))
    for method, path in [("GET", "/v1/workflows"), ("GET", "/v1/workflows/desk"),
                         ("POST", "/v1/runs"), ("GET", "/v1/runs/x"),
                         ("GET", "/v1/runs/x/events"), ("POST", "/v1/runs/x/cancel"),
                         ("GET", "/v1/nowhere"), ("GET", "/elsewhere")]:
        for token in (None, "wrong-token-0123456789", ALICE + "x", ALICE[:-1]):
            status, body, headers = served.request(method, path, {} if method == "POST"
                                                   else None, token=token)
            assert status == 401, (method, path, token, body)
            assert body["error"] == "unauthorized" and body["message"]
            assert headers["www-authenticate"].startswith("Bearer")
    assert served.request("GET", "/v1/workflows", token=ALICE)[0] == 200
    assert served.request("GET", "/v1/workflows", token=BOB)[0] == 200
    # Discovery and the OpenAPI document need no token.
    assert served.request("GET", "/.well-known/openwop", token=None)[0] == 200
    assert served.request("GET", "/v1/openapi.json", token=None)[0] == 200


def test_a_member_with_a_principal_takes_turns_only_from_it(serve: Any,
                                                            tokens_file: Path) -> None:
    served = serve(args=("--tokens", str(tokens_file)))
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "desk"}, token=BOB)
    assert status == 201
    run_id = created["runId"]
    served.token = BOB
    served.wait_status(run_id, "waiting-input")
    before = served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"]
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/room:chat", TURN,
                                     token=BOB)
    assert status == 403 and body["error"] == "forbidden"
    assert body["details"] == {"member": "visitor"}
    after = served.request("GET", f"/v1/runs/{run_id}/events")[1]
    assert after["lastEventSeq"] == before and after["runStatus"] == "waiting-input"
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/room:chat", TURN,
                                     token=ALICE)
    assert status == 200, body
    assert served.wait_status(run_id, "completed")["status"] == "completed"


def test_tokens_from_the_environment(serve: Any) -> None:
    served = serve(env={"WOP_TOKENS": f"alice={ALICE}"})
    assert served.request("GET", "/v1/workflows", token=None)[0] == 401
    assert served.request("GET", "/v1/workflows", token=ALICE)[0] == 200


def test_without_tokens_only_loopback(tmp_path: Path) -> None:
    served = start_server(tmp_path, args=("--host", "0.0.0.0"), wait=False)
    assert served.proc.wait(30) == 2
    text = served.logs()
    assert "refusing to serve on 0.0.0.0 without tokens" in text
    assert "Traceback" not in text


def test_bad_tokens_files_are_refused_without_showing_a_token(tmp_path: Path) -> None:
    secret = "short-secret"
    path = tmp_path / "tokens.toml"
    path.write_text(f'[tokens]\nalice = "{secret}"\n')
    served = start_server(tmp_path, args=("--tokens", str(path)), wait=False)
    assert served.proc.wait(30) == 2
    assert "alice" in served.logs() and secret not in served.logs()
    path.write_text(f'[tokens]\nalice = "{ALICE}"\nbob = "{ALICE}"\n')
    served = start_server(tmp_path, args=("--tokens", str(path)), wait=False)
    assert served.proc.wait(30) == 2
    assert "shares its token" in served.logs() and ALICE not in served.logs()


def test_tokens_never_appear_in_logs_errors_or_events(serve: Any, tokens_file: Path,
                                                      tmp_path: Path) -> None:
    served = serve(args=("--tokens", str(tokens_file), "--log-level", "debug"))
    bodies: list[str] = []
    for token in (ALICE, BOB, "not-a-token-" + ALICE):
        for method, path, body in [
            ("POST", "/v1/runs", {"workflowId": "desk", "metadata": {"note": "hello"}}),
            ("POST", "/v1/runs", {"workflowId": "nope"}),
            ("GET", "/v1/runs/missing", None),
        ]:
            _, answer, _ = served.request(method, path, body, token=token)
            bodies.append(str(answer))
    run_ids = [b for b in bodies if "runId" in b]
    assert run_ids
    _, created, _ = served.request("POST", "/v1/runs", {"workflowId": "desk"}, token=ALICE)
    served.token = ALICE
    served.wait_status(created["runId"], "waiting-input")
    for token in (BOB, ALICE):
        _, answer, _ = served.request(
            "POST", f"/v1/runs/{created['runId']}/interrupts/room:chat", TURN, token=token)
        bodies.append(str(answer))
    served.wait_status(created["runId"], "completed")
    served.stop()
    events = served.request  # noqa: F841 - the host is stopped; read the store directly.
    with sqlite3.connect(served.store) as db:
        stored = "\n".join(str(row) for row in db.execute("SELECT * FROM events"))
    assert "visitor" in stored
    for secret in (ALICE, BOB):
        assert secret not in served.logs()
        assert all(secret not in body for body in bodies)
        assert secret not in stored
        for file in tmp_path.rglob("*"):
            if file.is_file() and file != tokens_file:
                assert secret.encode() not in file.read_bytes(), file
