"""The v2 ``RunSnapshot`` validates against the spec's closed ``run-snapshot.schema.json``.

Its ``owner`` is also the one ``run.started`` carries on the v2 wire (events.md §Payloads).

``v2-id-grammar`` and ``v2-owner-subject-required`` (v2 identity.md §1.1, §5): every snapshot
a v2 client reads — whatever the run's status, on a host with or without tokens — validates,
``owner.subject`` included (``subject.schema.json``: a closed record whose ``lane`` is one of
the spec's lanes). Schemas: ``tests/server/openwop_v2/SOURCES.md``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

from tests.server.conftest import ALICE, COUNCILS
from wopdsl.protocol.openwop import bundled_schemas

V2 = {"OpenWOP-Version": "2.0"}
HERE = Path(__file__).parent / "openwop_v2"


def _validator() -> jsonschema.Draft202012Validator:
    bundled = bundled_schemas().documents
    docs = [json.loads((HERE / f"{name}.schema.json").read_text())
            for name in ("run-snapshot", "agent-ref")]
    docs += [bundled["v2/ids.schema.json"], bundled["v2/subject.schema.json"]]
    registry = Registry().with_resources((d["$id"], Resource.from_contents(d)) for d in docs)
    return jsonschema.Draft202012Validator(docs[0], registry=registry)


SNAPSHOT = _validator()


def _errors(doc: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in SNAPSHOT.iter_errors(doc)]


def _settled(served: Any, url: str, want: str) -> dict[str, Any]:
    for _ in range(100):
        snap: dict[str, Any] = served.request("GET", url, headers=V2)[1]
        if snap["status"] == want:
            return snap
        time.sleep(0.1)
    raise AssertionError(f"{url} never reached {want}: {snap['status']}")


def _started_owner(served: Any, url: str) -> Any:
    """``run.started``'s ``owner`` as the v2 poll serves it."""
    page = served.request("GET", url + "/events/poll", headers=V2)[1]
    started = [e for e in page["events"] if e["type"] == "run.started"]
    assert len(started) == 1
    return started[0]["payload"]["owner"]


def test_every_status_of_a_tokenless_host_validates(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    urls = {wf: served.request("POST", "/runs", {"workflowId": wf, "inputs": inputs},
                               headers=V2)[1]["statusUrl"]
            for wf, inputs in (("conformance-noop", {}), ("conformance-failure", {}),
                               ("conformance-multi-party-council", {}),
                               ("conformance-cancellable", {"delayMs": 30000}))}
    served.request("POST", urls["conformance-cancellable"] + "/cancel", {}, headers=V2)
    for wf, want in (("conformance-noop", "completed"), ("conformance-failure", "failed"),
                     ("conformance-multi-party-council", "waiting-input"),
                     ("conformance-cancellable", "cancelled")):
        snap = _settled(served, urls[wf], want)
        assert _errors(snap) == [], (wf, snap)
        assert snap["owner"]["subject"]["lane"] == "session"  # The local user: no key.
        assert _started_owner(served, urls[wf]) == snap["owner"]  # events.md §Payloads.


def test_a_token_hosts_snapshot_validates_and_what_it_refuses(serve: Any,
                                                             tokens_file: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    created = served.request("POST", "/runs", {"workflowId": "desk", "tags": ["q4"],
                                               "metadata": {"ticket": "T-1"}},
                             headers=V2)[1]
    snap = served.request("GET", created["statusUrl"], headers=V2)[1]
    assert _errors(snap) == []
    assert snap["owner"]["subject"]["lane"] == "api-key"
    assert _started_owner(served, created["statusUrl"]) == snap["owner"]
    assert snap["owner"]["tenant"] == "alice"
    assert snap["extensions"]["wopdsl.council"]["digest"].startswith("sha256:")
    # Negative: the shapes the host served before, and a foreign lane, do not validate.
    subject = {**snap["owner"]["subject"], "lane": "interactive"}
    assert _errors({**snap, "owner": {**snap["owner"], "subject": subject}}) != []
    assert _errors({**snap, "x-wopdsl-councilDigest": "sha256:0"}) != []
    assert _errors({**snap, "extensions": {"wopdsl": {"digest": "sha256:0"}}}) != []
    anonymous = {**snap["owner"]["subject"], "lane": "anonymous"}  # Only with kind anonymous.
    assert _errors({**snap, "owner": {**snap["owner"], "subject": anonymous}}) != []
