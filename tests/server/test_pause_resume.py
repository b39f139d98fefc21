"""Pause and resume over HTTP, v1 (``/v1/runs/{id}:pause``) and v2 (``/runs/{id}:pause``).

A real `wop serve --conformance` on loopback; the rules of the official scenarios
``pause-resume.test.ts`` (v1) and ``v2-run-pause-resume.test.ts`` (v2), each with its
positive and negative case: 202 on a running run, 409 ``run_state_conflict`` with
``details.runStatus`` on a second pause or a resume of a running run, 409 ``run_terminal``
on an ended run, the cached 202 for a repeated ``Idempotency-Key``, ``node.completed``
before ``run.paused`` under ``drain-current-node``, a paused run stays paused across a
restart, a waiting fixture cut off by a pause or a ``kill -9`` waits only the rest of its
delay, and ``runs.pauseResume`` in v1 discovery.
"""

from __future__ import annotations

import signal
import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

from tests.server.conftest import COUNCILS, Served, start_server

V2 = {"OpenWOP-Version": "2.0"}


def _serve(serve: Any) -> Served:
    served: Served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    return served


def _create(served: Served, workflow: str, *, v2: bool = False, **inputs: Any) -> str:
    status, body, _ = served.request("POST", "/runs" if v2 else "/v1/runs",
                                     {"workflowId": workflow, "inputs": inputs},
                                     headers=V2 if v2 else None)
    assert status == 201, body
    return str(body["runId"])


def _types(served: Served, run_id: str) -> list[str]:
    page = served.request("GET", f"/v1/runs/{run_id}/events/poll?timeout=1")[1]
    return [e["type"] for e in page["events"]]


def _post(served: Served, path: str, body: Any, **kwargs: Any) -> tuple[int, Any]:
    status, answer, _ = served.request("POST", path, body, **kwargs)
    return status, answer


def test_v1_pause_holds_the_run_and_resume_finishes_it(serve: Any) -> None:
    served = _serve(serve)
    doc = served.request("GET", "/.well-known/openwop", token=None)[1]
    assert doc["runs"]["pauseResume"] == {
        "supported": True, "drainPolicies": ["immediate", "drain-current-node"]}
    run_id = _create(served, "conformance-delay", delayMs=1500)
    served.wait_status(run_id, "running", timeout=5)

    status, body = _post(served, f"/v1/runs/{run_id}:pause",
                         {"reason": "operator", "drainPolicy": "immediate"})
    assert (status, body["runId"], body["status"]) == (202, run_id, "paused")
    time.sleep(2.0)  # Longer than the delay: nothing runs while paused.
    assert served.wait_status(run_id, "paused")["status"] == "paused"
    assert "node.completed" not in _types(served, run_id)

    status, body = _post(served, f"/v1/runs/{run_id}:resume", {"reason": "go on"})
    assert (status, body["status"]) == (202, "running")
    assert served.wait_status(run_id, "completed", timeout=10)["status"] == "completed"
    kinds = _types(served, run_id)
    assert kinds.index("run.paused") < kinds.index("run.resumed") < kinds.index("run.completed")


def test_v1_conflicts_carry_the_run_status(serve: Any) -> None:
    served = _serve(serve)
    run_id = _create(served, "conformance-delay", delayMs=30_000)
    served.wait_status(run_id, "running", timeout=5)

    status, body = _post(served, f"/v1/runs/{run_id}:resume", {})
    assert (status, body["error"], body["details"]["runStatus"]) == (
        409, "run_state_conflict", "running")  # Negative: resume of a running run.
    assert _post(served, f"/v1/runs/{run_id}:pause", {})[0] == 202
    status, body = _post(served, f"/v1/runs/{run_id}:pause", {})
    assert (status, body["error"], body["details"]["runStatus"]) == (
        409, "run_state_conflict", "paused")
    assert _types(served, run_id).count("run.paused") == 1
    status, body = _post(served, f"/v1/runs/{run_id}:pause", {"drainPolicy": "later"})
    assert (status, body["error"], body["details"]["field"]) == (
        400, "validation_error", "drainPolicy")
    assert _post(served, f"/v1/runs/{run_id}/cancel", {})[0] == 200  # A paused run cancels.
    assert served.wait_status(run_id, "cancelled")["status"] == "cancelled"

    done = _create(served, "conformance-noop")
    served.wait_status(done, "completed")
    for action in ("pause", "resume"):
        status, body = _post(served, f"/v1/runs/{done}:{action}", {})
        assert (status, body["error"], body["details"]["runStatus"]) == (
            409, "run_terminal", "completed")
    assert _post(served, "/v1/runs/no-such-run:pause", {})[0] == 404


def test_v1_a_repeated_idempotency_key_gets_the_first_202(serve: Any) -> None:
    served = _serve(serve)
    run_id = _create(served, "conformance-delay", delayMs=30_000)
    served.wait_status(run_id, "running", timeout=5)
    key = {"Idempotency-Key": f"pause-{run_id}"}
    first = _post(served, f"/v1/runs/{run_id}:pause", {"drainPolicy": "immediate"}, headers=key)
    again = _post(served, f"/v1/runs/{run_id}:pause", {"drainPolicy": "immediate"}, headers=key)
    assert first == again and first[0] == 202
    assert _post(served, f"/v1/runs/{run_id}:pause", {"drainPolicy": "immediate"})[0] == 409
    assert _types(served, run_id).count("run.paused") == 1
    _post(served, f"/v1/runs/{run_id}/cancel", {})


def test_v1_drain_lets_the_running_node_complete_first(serve: Any) -> None:
    served = _serve(serve)
    run_id = _create(served, "conformance-delay", delayMs=1500)
    served.wait_status(run_id, "running", timeout=5)

    status, body = _post(served, f"/v1/runs/{run_id}:pause",
                         {"drainPolicy": "drain-current-node"})
    assert (status, body["status"], body["drainPolicy"]) == (202, "running",
                                                             "drain-current-node")
    served.wait_status(run_id, "paused", timeout=10)
    kinds = _types(served, run_id)
    assert 0 <= kinds.index("node.completed") < kinds.index("run.paused")
    assert "run.completed" not in kinds  # Paused before the run could end.
    assert _post(served, f"/v1/runs/{run_id}:resume", {})[0] == 202
    assert served.wait_status(run_id, "completed", timeout=10)["status"] == "completed"


def _ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def _waits(events: list[dict[str, Any]]) -> tuple[list[int], list[str]]:
    """The delay turn's start times (epoch ms) and its completion summaries."""
    starts = [_ms(e["timestamp"]) for e in events
              if e["type"] == "node.started" and e["payload"]["nodeId"] == "delay"]
    done = [e["payload"]["outputs"]["summary"] for e in events
            if e["type"] == "node.completed" and e["payload"]["nodeId"] == "delay"]
    return starts, done


def _split(delay: int, ran: int) -> str:
    before = min(ran, delay)
    return f"waited {delay} ms: {before} before the turn started again, {delay - before} after"


def test_a_waiting_fixture_cut_by_an_immediate_pause_waits_only_the_rest(serve: Any) -> None:
    # conformance/fixtures.md: the fixture is `running` for delayMs; rest-endpoints.md: after
    # :resume "execution continues from the position recorded at pause". The turn an
    # immediate pause cut off runs again (a fresh attempt) and waits only what was left: the
    # time it ran before the pause counts, the time the run was paused does not.
    served = _serve(serve)
    for workflow in ("conformance-cancellable", "conformance-delay"):
        run_id = _create(served, workflow, delayMs=3000)
        served.wait_status(run_id, "running", timeout=5)
        time.sleep(0.5)
        assert _post(served, f"/v1/runs/{run_id}:pause", {"drainPolicy": "immediate"})[0] == 202
        time.sleep(1.0)
        assert _post(served, f"/v1/runs/{run_id}:resume", {})[0] == 202
        assert served.wait_status(run_id, "completed", timeout=10)["status"] == "completed"

        events = served.request("GET", f"/v1/runs/{run_id}/events/poll")[1]["events"]
        at = {e["type"]: _ms(e["timestamp"]) for e in events if e["type"] in (
            "run.paused", "run.resumed")}
        starts, done = _waits(events)
        ran = starts[1] - starts[0] - (at["run.resumed"] - at["run.paused"])
        assert 0 < ran < starts[1] - starts[0]  # The pause is left out.
        assert done == [_split(3000, ran)], workflow

    # Negative: a run nobody paused waits the whole delay in one attempt.
    run_id = _create(served, "conformance-delay", delayMs=300)
    served.wait_status(run_id, "completed", timeout=10)
    events = served.request("GET", f"/v1/runs/{run_id}/events/poll")[1]["events"]
    assert _waits(events)[1] == ["waited 300 ms"]


def test_a_waiting_fixture_cut_by_kill_9_waits_only_the_rest_on_restart(serve: Any) -> None:
    # How long the turn has been going is read from the log, so a host killed mid-delay
    # (nothing written at the kill) and restarted waits only what was left; the run stayed
    # `running` while the host was down, so that time counts (as for the council deadline).
    served = _serve(serve)
    run_id = _create(served, "conformance-delay", delayMs=6000)
    served.wait_status(run_id, "running", timeout=5)
    time.sleep(0.5)
    assert served.stop(signal.SIGKILL) == -signal.SIGKILL

    again = serve(COUNCILS / "desk.toml", args=("--conformance",), store=served.store)
    assert again.wait_status(run_id, "completed", timeout=20)["status"] == "completed"
    events = again.request("GET", f"/v1/runs/{run_id}/events/poll")[1]["events"]
    assert [e["payload"]["reason"] for e in events if e["type"] == "run.resumed"] == [
        "crash-recovery"]
    starts, done = _waits(events)
    assert len(starts) == 2 and done == [_split(6000, starts[1] - starts[0])]


def test_a_paused_run_stays_paused_across_a_restart(serve: Any, tmp_path: Any) -> None:
    served = _serve(serve)
    run_id = _create(served, "conformance-delay", delayMs=1000)
    served.wait_status(run_id, "running", timeout=5)
    assert _post(served, f"/v1/runs/{run_id}:pause", {})[0] == 202
    served.stop()

    again = start_server(tmp_path, COUNCILS / "desk.toml", args=("--conformance",),
                         store=served.store)
    try:
        time.sleep(1.5)  # A restarted host takes up unfinished runs: not this one.
        assert again.wait_status(run_id, "paused")["status"] == "paused"
        assert "run.resumed" not in _types(again, run_id)
        assert _post(again, f"/v1/runs/{run_id}:resume", {})[0] == 202
        assert again.wait_status(run_id, "completed", timeout=10)["status"] == "completed"
        kinds = _types(again, run_id)
        assert kinds.count("node.retried") == 1  # The cut-off turn ran again, once.
    finally:
        again.stop()


def test_v2_pause_and_resume_with_tenant_bound_ids(serve: Any) -> None:
    served = _serve(serve)
    run_id = _create(served, "conformance-delay", v2=True, delayMs=15_000)
    path = f"/runs/{quote(run_id, safe='')}"
    store_id = run_id.rsplit("/", 1)[-1]
    served.wait_status(store_id, "running", timeout=5)

    status, body = _post(served, f"{path}:pause", {"reason": "c", "drainPolicy": "immediate"},
                         headers=V2)
    assert (status, body["runId"], body["status"]) == (202, run_id, "paused")
    status, body = _post(served, f"{path}:pause", {}, headers=V2)
    assert (status, body["error"], body["details"]["runId"], body["details"]["runStatus"]) == (
        409, "run_state_conflict", run_id, "paused")  # runId bound, as v2 names the run
    status, body = _post(served, f"{path}:resume", {"reason": "c"}, headers=V2)
    assert (status, body["runId"], body["status"]) == (202, run_id, "running")
    page = served.request("GET", f"{path}/events/poll?timeout=1", headers=V2)[1]
    kinds = [e["type"] for e in page["events"]]
    assert kinds.index("run.paused") < kinds.index("run.resumed")
    _post(served, f"{path}/cancel", {}, headers=V2)

    done = _create(served, "conformance-noop", v2=True)
    served.wait_status(done.rsplit("/", 1)[-1], "completed")
    for action in ("pause", "resume"):
        status, body = _post(served, f"/runs/{quote(done, safe='')}:{action}", {}, headers=V2)
        assert (status, body["error"]) == (409, "run_terminal")


def test_pause_refuses_cross_site_oversized_and_malformed_requests(serve: Any) -> None:
    # A small body cap: an oversized body that still fits the socket buffers, so the early
    # 413 never races the client's write (EPIPE).
    served: Served = serve(COUNCILS / "desk.toml", args=("--conformance",
                                                         "--max-body-bytes", "4096"))
    run_id = _create(served, "conformance-delay", delayMs=30_000)
    served.wait_status(run_id, "running", timeout=5)
    path = f"/v1/runs/{run_id}:pause"
    raw = b'{"reason": "x"}'
    # Cross-site: a text/plain "simple request" and a foreign Origin are refused.
    status, body, _ = served.request("POST", path, raw=raw,
                                     headers={"Content-Type": "text/plain"})
    assert (status, body["error"]) == (415, "unsupported_media_type")
    status, body, _ = served.request("POST", path, {"reason": "x"},
                                     headers={"Origin": "https://attacker.test"})
    assert (status, body["error"]) == (403, "origin_not_allowed")
    # Oversized, deeply nested, unknown keys, wrong types: 400 at the door.
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    for bad in ({"reason": "r" * 1001}, {"reason": deep}, {"drainPolicy": ["immediate"]},
                {"reason": "x", "extra": 1}):
        status, body, _ = served.request("POST", path, bad)
        assert (status, body["error"]) == (400, "validation_error"), bad
    status, body, _ = served.request("POST", path, raw=b"x" * 8192)
    assert (status, body["error"]) == (413, "payload_too_large")
    # None of it paused the run.
    assert served.wait_status(run_id, "running")["status"] == "running"
    assert "run.paused" not in _types(served, run_id)
    _post(served, f"/v1/runs/{run_id}/cancel", {})
