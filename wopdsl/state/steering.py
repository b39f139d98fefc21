"""The steering part of the fold (DESIGN.md §24, docs/guides/steering.md).

A person's post whose content says ``steer: true`` stops the turns it names: folding it marks
each targeted turn in flight as *steered* (and adds the post to its triggers), moves the
targeted queued members to the front of the queue, and wakes a mentioned idle member first.
The engine reads the mark to stop the turn's task and to write ``node.retried``
(``STEERED``) when its batch settles; resume after a crash reads the same mark, so every
reader derives the same steer from the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final, TypeGuard

from wopdsl.state.deliberation import WAKE_ALL, DeliberationFold
from wopdsl.state.records import RoomState

__all__ = ["STEERED", "SteeringFold", "is_steer", "steer_targets"]

STEERED: Final = "STEERED"
"""``node.retried.lastError.code`` of an attempt a steering post stopped."""


def is_steer(turn: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a conversation turn is a steering post: a ``user`` turn with ``steer: true``."""
    if not isinstance(turn, dict) or turn.get("role") != "user":
        return False
    content = turn.get("content")
    return isinstance(content, dict) and content.get("steer") is True


def steer_targets(members: Sequence[str], sender: str, mentions: Iterable[str]) -> list[str]:
    """Whom a steering post in a room of ``members`` names, in room order.

    Its mentions (``@all``: everyone else), or every other member of the room without any.
    """
    named = set(mentions)
    everyone = not named or WAKE_ALL in named
    return [m for m in members if m != sender and (everyone or m in named)]


class SteeringFold(DeliberationFold):
    """Steering posts, folded (a mixin of ``CouncilState``, over the deliberation fold)."""

    __slots__ = ()

    steering: dict[str, tuple[str, ...]]
    """Steering post id → the members whose turns in flight it stopped."""

    def _steer(self, room: RoomState, sender: str, message_id: str,
               mentions: list[str]) -> None:
        """Apply a steering post (see the module docstring); it replaces ``_request``."""
        stopped: list[str] = []
        first: list[str] = []
        for target in steer_targets(room.members, sender, mentions):
            member = self.members.get(target)
            if member is None or member.awaited:
                continue  # People are never stopped.
            turn = self.inflight.get(target)
            if turn is not None and turn.suspended is None:
                turn.steered = message_id
                if message_id not in turn.triggers:
                    turn.triggers.append(message_id)
                stopped.append(target)
            elif turn is None and target in self.queue:
                triggers = self.queue[target]  # Its queued turn sees the post (rounds too).
                if not triggers or triggers[-1] != message_id:
                    triggers.append(message_id)
                first.append(target)
        self.steering[message_id] = tuple(stopped)
        if mentions:
            # The rest is as any mention: an idle member is woken (deferred in a round
            # room, kept for the chair's last turn); a steered one is not queued twice.
            handled = set(stopped) | set(first)
            woken = self._wakeable_named(room, sender, mentions, handled)
            before = set(self.queue)
            self._request(room, sender, message_id, woken)
            first += [m for m in self.queue if m not in before]
        if first:
            front = {m: self.queue[m] for m in dict.fromkeys(first) if m in self.queue}
            rest = {m: t for m, t in self.queue.items() if m not in front}
            self.queue.clear()
            self.queue.update(front)
            self.queue.update(rest)

    def _wakeable_named(self, room: RoomState, sender: str, mentions: list[str],
                        handled: set[str]) -> list[str]:
        """The mentioned members a steer wakes as a plain mention would (``@all`` expanded)."""
        named = [m for m in mentions if m != WAKE_ALL]
        if WAKE_ALL in mentions:
            named += self.wakeable(room, sender)
        return [m for m in dict.fromkeys(named) if m not in handled and (
            m not in self.inflight or self.inflight[m].suspended is not None)]
