"""Fork a run at a sequence, and re-execute it in replay mode (RFC 0005 §G).

A fork is a new run whose log is the source's up to ``SEQ`` (ids rewritten for the new run),
then continues. In ``branch`` mode it simply goes on. In ``replay`` mode members re-execute
and every turn is compared with the source's turn at the same dispatch position; a
difference appends ``replay.diverged {sourceRunId, atSequence, divergenceKind}``. Human turns
are never re-asked: the source's human input is applied again from its log.
``replay.diverged.atSequence`` always names a sequence of the *source* run: the source turn
that differs or is missing, or for an ``extra`` turn the source's last event (the source
ended without it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from wopdsl._ids import IDENT_RULE, SystemClock, event_id, is_ident, iso_ms, new_run_id
from wopdsl.compile.graph import CouncilGraph
from wopdsl.engine.core import Engine, HumanInput
from wopdsl.errors import RunNotFound, ValidationError
from wopdsl.protocol.codemap import ERA_V2
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.protocol.payloads import MEMBER_TYPE_ID
from wopdsl.state import Inflight
from wopdsl.store.base import EventStore

__all__ = ["ForkMode", "ReplayEngine", "engine_for", "fork"]

ForkMode = Literal["branch", "replay"]


def fork(
    store: EventStore,
    source_run_id: str,
    at_sequence: int,
    *,
    mode: ForkMode = "branch",
    run_id: str | None = None,
    base_url: str | None = None,
    principal: str | None = None,
    forked_by: str | None = None,
) -> str:
    """Create a run whose log is ``source_run_id``'s up to ``at_sequence``; return its id.

    A cut inside a batch settlement is moved back before that turn's completion, so the
    turn runs again in the fork rather than losing its posts. The fork's ``llm`` members
    call the server their source run recorded (its ``$OPENAI_BASE_URL`` at start), not
    whatever the environment says now; ``base_url`` points every model profile without a
    ``base_url`` of its own at another server (recorded in the fork's log).
    ``principal`` replaces the source's ``run.started`` ``metadata.principal`` (its owner);
    ``forked_by`` (who forked, e.g. an HTTP host's caller) is kept as ``forkedFrom.by``.

    Raises:
        RunNotFound: no such source run.
        ValidationError: ``at_sequence`` is out of range or before the rooms opened.
    """
    if mode not in ("branch", "replay"):
        raise ValidationError(f"unknown fork mode '{mode}'", hint="use 'replay' or 'branch'")
    events = store.read(source_run_id)
    if not events:
        raise RunNotFound.of(source_run_id)
    last = events[-1]["sequence"]
    opened = max((e["sequence"] for e in events if e["type"] == "conversation.opened"),
                 default=0)
    if not opened <= at_sequence <= last:
        raise ValidationError(
            f"--from {at_sequence} is outside the run's forkable range {opened}..{last}",
            hint="fork at or after the last conversation.opened event",
        )
    cut = _consistent_cut(events, at_sequence)
    new_id = run_id or new_run_id(events[0]["payload"]["workflowId"])
    if not is_ident(new_id):
        raise ValidationError(f"run id '{new_id}' is not {IDENT_RULE}")
    if store.exists(new_id):
        raise ValidationError(f"run {new_id} already exists", hint="choose another run id")
    copied = [_rewrite(e, source_run_id, new_id) for e in events[: cut + 1]]
    metadata = copied[0]["payload"].setdefault("metadata", {})
    # The copied events keep their times; the fork itself begins now (what `wop runs` shows).
    metadata["forkedFrom"] = {"runId": source_run_id, "atSequence": cut, "mode": mode,
                              "forkedAt": iso_ms(SystemClock().now_ms())}
    if base_url is not None:
        _point_models(metadata, base_url)
    if forked_by is not None:
        metadata["forkedFrom"]["by"] = forked_by
    if principal is not None:
        metadata["principal"] = principal
    # A new run is of the current era, whatever its source's: the store writes the copied
    # events in its vocabulary (v2 persistence.md §The era key).
    copied[0]["payload"]["eventLogSchemaVersion"] = ERA_V2
    store.append(new_id, copied, 0)
    return new_id


def _point_models(metadata: dict[str, Any], base_url: str) -> None:
    from wopdsl.agents.llm.endpoint import shown

    if not re.fullmatch(r"https?://\S+", base_url) or shown(base_url) != base_url:
        raise ValidationError("--base-url must be an http(s) URL without user info, query "
                              "or fragment (it is recorded in the fork's log)",
                              hint="e.g. http://127.0.0.1:8089/v1")
    models = (metadata.get("council") or {}).get("models") or {}
    metadata["models"] = {name: {"baseUrl": base_url} for name, profile in models.items()
                          if isinstance(profile, dict) and not profile.get("base_url")}


def _consistent_cut(events: list[RunEventDoc], at: int) -> int:
    """Move ``at`` back so no member completion is kept without all of its posts."""
    for index in range(at, -1, -1):
        event = events[index]
        if event["type"] in ("node.completed", "node.failed") and "nodeId" in event and not \
                event["nodeId"].startswith("room:"):
            posts = len((event["payload"].get("outputs") or {}).get("posts", []))
            following = events[index + 1 : index + 1 + posts]
            kept = sum(1 for e in following if e["sequence"] <= at
                       and e["type"] == "conversation.exchanged")
            return at if kept == posts else index - 1
        if event["type"] == "node.started" and event["payload"].get("typeId") == MEMBER_TYPE_ID:
            return at
    return at


def _rewrite(event: RunEventDoc, old: str, new: str) -> RunEventDoc:
    """Copy an event into the forked run: run id, event ids and conversation ids rewritten."""
    text = json.dumps(event, ensure_ascii=False)
    # Conversation ids and interrupt keys embed the run id as "<run>:room:<room>".
    text = text.replace(json.dumps(f"{old}:room:")[:-1], json.dumps(f"{new}:room:")[:-1])
    copy: RunEventDoc = json.loads(text)
    copy["runId"] = new
    copy["eventId"] = event_id(new, event["sequence"])
    if "causationId" in event:
        copy["causationId"] = event_id(new, _sequence_of(event["causationId"]))
    return copy


def _sequence_of(evt_id: str) -> int:
    return int(evt_id.rsplit(".", 1)[-1])


@dataclass(frozen=True, slots=True)
class _SourceTurn:
    sequence: int
    event_id: str
    type: str
    outputs: Any


class ReplayEngine(Engine):
    """An engine that compares every re-executed turn with the source run's."""

    def __init__(self, graph: CouncilGraph, store: EventStore, run_id: str,
                 **options: Any) -> None:
        super().__init__(graph, store, run_id, **options)
        origin = self.state.metadata.get("forkedFrom", {})
        self.source_run_id: str = origin.get("runId", "")
        source = store.read(self.source_run_id)
        self._turns: dict[int, _SourceTurn] = {}
        self._human: list[tuple[_SourceTurn, HumanInput]] = []
        self._source_end = source[-1]["sequence"] if source else 0
        started: dict[str, int] = {}
        for event in source:
            payload = event["payload"]
            if event["type"] == "node.started" and payload.get("typeId") == MEMBER_TYPE_ID:
                started[payload["nodeId"]] = payload["position"]
            elif event["type"] in ("node.completed", "node.failed") and \
                    payload.get("nodeId") in started:
                position = started.pop(payload["nodeId"])
                turn = self._turns[position] = _SourceTurn(
                    event["sequence"], event["eventId"], event["type"], payload.get("outputs"))
                member = self.graph.members.get(payload["nodeId"])
                if member is not None and member.awaited and position >= self.state.next_position:
                    self._human.append((turn, _human_input(payload)))
        self._seen = {p for p in self._turns if p < self.state.next_position}
        self.replay_source = self.source_run_id  # tools: the source's results, no calls

    def after_settle(self, batch: list[Inflight]) -> None:
        """Compare each settled turn with the source's turn at the same position."""
        for inflight in batch:
            if inflight.member in self.state.inflight:
                continue  # waiting for an approval: compared once it settles
            self._seen.add(inflight.position)
            mine = self.state.members[inflight.member]
            source = self._turns.get(inflight.position)
            if source is None:  # the source run ended (at its last sequence) without it
                self._diverged(self._source_end, "extra", None)
            elif (source.type == "node.failed") != mine.failed:
                self._diverged(source.sequence, "type-mismatch", source.event_id)
            elif not mine.failed and source.outputs != mine.result:
                self._diverged(source.sequence, "output", source.event_id)

    def supply_input(self) -> bool:
        """Re-apply the source's next human input instead of asking again."""
        while self._human:
            source, entry = self._human.pop(0)
            try:
                self.apply_human(entry)
            except ValidationError:
                self._diverged(source.sequence, "missing", source.event_id)
                continue
            self._seen.add(self.state.next_position - 1)
            return True
        return False

    def before_complete(self) -> None:
        """Report source turns the replay never reached."""
        missing = sorted(p for p in self._turns if p not in self._seen)
        if missing:
            source = self._turns[missing[0]]
            self._diverged(source.sequence, "missing", source.event_id)

    def _diverged(self, at: int, kind: str, original: str | None) -> None:
        payload: dict[str, Any] = {"sourceRunId": self.source_run_id, "atSequence": at,
                                   "divergenceKind": kind}
        if original:
            payload["originalEventId"] = original
        self._emit("replay.diverged", payload)


def _human_input(payload: dict[str, Any]) -> HumanInput:
    post = ((payload.get("outputs") or {}).get("posts") or [{}])[0]
    return HumanInput(member=payload["nodeId"], room=post.get("roomId", ""),
                      text=post.get("text", ""), mentions=tuple(post.get("mentions", [])))


def engine_for(graph: CouncilGraph, store: EventStore, run_id: str, **options: Any) -> Engine:
    """Return the engine a stored run needs: a :class:`ReplayEngine` for replay forks."""
    engine = Engine(graph, store, run_id, **options)
    origin = engine.state.metadata.get("forkedFrom") or {}
    if origin.get("mode") == "replay":
        return ReplayEngine(graph, store, run_id, **options)
    return engine
