"""Private: the :class:`~wopdsl.agents.tools.journal.ToolJournal` the engine gives a turn.

It reads what earlier attempts of the same turn (same member, same dispatch position) did —
the model's requests and results kept privately, ``agent.toolCalled`` / ``agent.toolReturned``
and approval decisions in the log — and commits the turn's events on demand, so a call is
made only once its ``agent.toolCalled`` is durable, and the model is called again only once
its result is. In a replay-mode fork it serves the source run's results instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from wopdsl.agents.tools.events import REPEAT
from wopdsl.agents.tools.journal import Decision, RecordedCall, read_records
from wopdsl.errors import TurnError
from wopdsl.protocol.payloads import ASK_PREFIX
from wopdsl.state import Inflight
from wopdsl.store.base import EventStore

__all__ = ["Journal"]

_APPROVAL = "approval/"
_ASK = ASK_PREFIX


class Journal:
    """One turn's tool journal (see the module docstring)."""

    def __init__(self, store: EventStore, run_id: str, inflight: Inflight,
                 replay_source: str | None, commit: Callable[[], Awaitable[bool]]) -> None:
        self.store = store
        self.run_id = run_id
        self.position = inflight.position
        self.replay_source = replay_source
        self._commit = commit
        self._prefix = f"call/{inflight.member}/{inflight.position}/"
        self._first = inflight.attempt == 0 and replay_source is None
        self.replaying = replay_source is not None
        self._source: dict[str, str] | None = None

    async def recorded(self) -> list[RecordedCall]:
        """The turn's calls so far, from the private records and the log, in call order."""
        if self._first:
            return []  # a turn's first attempt has made no call yet
        return await self.store.call(self._recorded)

    def _recorded(self) -> list[RecordedCall]:
        store = self.store
        records = store.read_private(self.run_id, self._prefix)
        logged: dict[str, dict[str, Any]] = {}
        for event in store.read(self.run_id):
            kind, payload = event["type"], event["payload"]
            if kind in ("agent.toolCalled", "agent.toolReturned"):
                call_id = str(payload.get("callId", ""))
                if call_id.startswith(self._prefix):
                    logged.setdefault(call_id, {})[kind] = payload
            elif kind in ("interrupt.requested", "interrupt.resolved"):
                key = str(payload.get("key" if kind == "interrupt.requested"
                                      else "interruptId", ""))
                what = "requested" if kind == "interrupt.requested" else "resolved"
                if key.startswith(_APPROVAL + self._prefix):
                    call_id, repeat, _ = key[len(_APPROVAL):].partition(REPEAT)
                    logged.setdefault(call_id, {})[what + repeat] = payload
                elif key.startswith(_ASK + self._prefix):  # an a2a agent's question
                    logged.setdefault(key[len(_ASK):], {})["asked" + what] = payload
        if self.replay_source is not None:  # a replay fork cut inside this turn: the
            # source's records of the calls its log kept (a cut before the turn keeps none)
            source = store.read_private(self.replay_source, self._prefix)
            records = {**{k: v for k, v in source.items() if k.partition("#")[0] in logged},
                       **records}
        ids = {*logged, *(key.partition("#")[0] for key in records)}
        calls = []
        for call_id in sorted(ids, key=_index):
            call = read_records(call_id, _index(call_id), records)
            seen = logged.get(call_id, {})
            if call is None:
                # Its request was not kept here (a fork's copy of the source's turn): a new
                # call takes a number after it, so call ids stay unique in the log.
                calls.append(RecordedCall(call_id, _index(call_id), -1, "", "", ""))
                continue
            call.started = "agent.toolCalled" in seen
            call.returned = "agent.toolReturned" in seen
            call.requested = "requested" in seen
            call.repeat_requested = "requested" + REPEAT in seen
            call.decision = _decision(seen.get("resolved"))
            call.requested = call.requested or "askedrequested" in seen
            answered = seen.get("askedresolved")
            call.reply = dict(answered.get("resumeValue") or {}) if answered else None
            call.repeat_decision = _decision(seen.get("resolved" + REPEAT))
            calls.append(call)
        return calls

    async def save(self, entries: dict[str, str]) -> None:
        """Keep private records durably (a replay keeps them too, for forks of it)."""
        await self.store.call(self.store.save_private, self.run_id, entries)

    async def commit(self) -> None:
        """Make the events recorded so far durable now.

        Raises:
            TurnError: ``STORE_CONFLICT`` when they could not be committed (another process
                took the run over); nothing further may happen in this turn.
        """
        if not await self._commit():
            raise TurnError("STORE_CONFLICT", "a tool call could not be recorded (another "
                            "process wrote to the run meanwhile); it was not made")

    async def source(self, call_id: str) -> RecordedCall | None:
        """The replayed run's call ``call_id`` with its kept result (``None``: no such call)."""
        source = self.replay_source
        if source is None:
            return None
        if self._source is None:
            self._source = await self.store.call(self.store.read_private, source, self._prefix)
        return read_records(call_id, _index(call_id), self._source)


def _decision(resolved: dict[str, Any] | None) -> Decision | None:
    if resolved is None:
        return None
    value = resolved.get("resumeValue") or {}
    return Decision(value.get("action") == "accept", str(value.get("decidedBy", "")),
                    str(value.get("comment", "")))


def _index(call_id: str) -> int:
    try:
        return int(call_id.rpartition("/")[2])
    except ValueError:
        return 0
