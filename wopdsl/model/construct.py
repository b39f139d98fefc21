"""Private: build trusted ``Message`` and ``Turn`` models on the hot path.

``model_construct`` (no validation) still walks every field's aliases and defaults on each
call; the engine builds a ``Message`` per saved post and a ``Turn`` per member turn from data
it already trusts, so it sets the instance attributes directly, exactly as
``model_construct`` would with every field given. A check compares the two on a sample and
falls back to ``model_construct`` if a pydantic release ever differs.

The models (and pydantic) load on the first message or turn built, not at import: reading a
log that holds no message (``wop runs``, ``wop events``) does not pay for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, cast

if TYPE_CHECKING:
    from wopdsl.model.turns import Message, Turn

__all__ = ["new_message", "new_turn"]

_set: Final = object.__setattr__
_new: Final = object.__new__
"""``Model.__new__`` without the lookup through pydantic's metaclass ``__getattr__`` hook."""

MessageMaker = Callable[[str, str, str, str, list[str], int], "Message"]
TurnMaker = Callable[[str, str, str, str, int, "dict[str, Any] | None", "list[Message]",
                      "list[Message]", "list[dict[str, Any]]", "dict[str, dict[str, Any]]",
                      "dict[str, dict[str, list[str]]]", int], "Turn"]


def _slot_setter(name: str) -> Callable[[Any, Any], None]:
    """Set BaseModel's slot ``name`` through its descriptor (no ``__setattr__`` lookup)."""
    from pydantic import BaseModel

    descriptor = vars(BaseModel).get(name)
    setter = getattr(descriptor, "__set__", None)
    if setter is None:  # pragma: no cover - a pydantic without these slots
        return lambda obj, value: _set(obj, name, value)
    return cast(Callable[[Any, Any], None], setter)


def _makers() -> tuple[MessageMaker, TurnMaker]:
    """The fastest safe builders of ``Message`` and ``Turn`` on this pydantic."""
    from wopdsl.model.turns import Message, Turn

    message_fields = frozenset(Message.model_fields)
    turn_fields = frozenset(Turn.model_fields)
    set_fields = _slot_setter("__pydantic_fields_set__")
    set_extra = _slot_setter("__pydantic_extra__")
    set_private = _slot_setter("__pydantic_private__")

    def direct_message(id: str, room: str, sender: str, text: str,
                       mentions: list[str], position: int) -> Message:
        message = _new(Message)
        _set(message, "__dict__", {"id": id, "room": room, "sender": sender, "text": text,
                                   "mentions": mentions, "position": position})
        set_fields(message, set(message_fields))
        set_extra(message, None)
        set_private(message, None)
        return message

    def constructed_message(id: str, room: str, sender: str, text: str,
                            mentions: list[str], position: int) -> Message:
        return Message.model_construct(id=id, room=room, sender=sender, text=text,
                                       mentions=mentions, position=position)

    def direct_turn(task: str, member: str, role: str, brief: str, turn: int,
                    result: dict[str, Any] | None, messages: list[Message],
                    triggers: list[Message], decisions: list[dict[str, Any]],
                    rounds: dict[str, dict[str, Any]],
                    peers: dict[str, dict[str, list[str]]], elapsed_ms: int) -> Turn:
        model = _new(Turn)
        _set(model, "__dict__", {"task": task, "member": member, "role": role, "brief": brief,
                                 "turn": turn, "result": result, "messages": messages,
                                 "triggers": triggers, "decisions": decisions,
                                 "rounds": rounds, "peers": peers, "elapsed_ms": elapsed_ms})
        set_fields(model, set(turn_fields))
        set_extra(model, None)
        set_private(model, None)
        return model

    def constructed_turn(task: str, member: str, role: str, brief: str, turn: int,
                         result: dict[str, Any] | None, messages: list[Message],
                         triggers: list[Message], decisions: list[dict[str, Any]],
                         rounds: dict[str, dict[str, Any]],
                         peers: dict[str, dict[str, list[str]]], elapsed_ms: int) -> Turn:
        return Turn.model_construct(task=task, member=member, role=role, brief=brief,
                                    turn=turn, result=result, messages=messages,
                                    triggers=triggers, decisions=decisions, rounds=rounds,
                                    peers=peers, elapsed_ms=elapsed_ms)

    def direct_is_safe() -> bool:
        for model in (Message, Turn):
            if (model.__pydantic_post_init__ is not None or model.__private_attributes__
                    or model.model_config.get("extra") == "allow"):
                return False
        message = ("team/a/1/0", "r", "a", "hi", ["b"], 1)
        try:
            sample = constructed_message(*message)
            turn: tuple[Any, ...] = ("t", "a", "r", "b", 1, {"summary": "s"}, [sample],
                                     [sample], [], {}, {}, 5)
            return (_same(direct_message(*message), sample)
                    and _same(direct_turn(*turn), constructed_turn(*turn)))
        except Exception:  # Any surprise means: use the supported path.
            return False

    if direct_is_safe():
        return direct_message, direct_turn
    return constructed_message, constructed_turn  # pragma: no cover - other pydantic internals


def _same(direct: Any, constructed: Any) -> bool:
    # Every slot a BaseModel instance has is compared (``__dict__`` and fields set here,
    # extra and private by ``==``), so anything derived from them (``model_dump`` ...) agrees
    # too. Nothing here needs the models' validators or serializers: they are built on first
    # use (``defer_build``), not by this check.
    return (
        type(direct) is type(constructed)
        and direct.__dict__ == constructed.__dict__
        and list(direct.__dict__) == list(constructed.__dict__)
        and direct.model_fields_set == constructed.model_fields_set
        and direct == constructed
        and repr(direct) == repr(constructed)
    )


def _load() -> None:
    global _message, _turn
    _message, _turn = _makers()


def _first_message(id: str, room: str, sender: str, text: str, mentions: list[str],
                   position: int) -> Message:
    _load()
    return _message(id, room, sender, text, mentions, position)


def _first_turn(task: str, member: str, role: str, brief: str, turn: int,
                result: dict[str, Any] | None, messages: list[Message],
                triggers: list[Message], decisions: list[dict[str, Any]],
                rounds: dict[str, dict[str, Any]],
                peers: dict[str, dict[str, list[str]]], elapsed_ms: int) -> Turn:
    _load()
    return _turn(task, member, role, brief, turn, result, messages, triggers, decisions,
                 rounds, peers, elapsed_ms)


_message: MessageMaker = _first_message
_turn: TurnMaker = _first_turn


def new_message(id: str, room: str, sender: str, text: str, mentions: list[str],
                position: int) -> Message:
    """A saved message built from trusted data (no validation)."""
    return _message(id, room, sender, text, mentions, position)


def new_turn(task: str, member: str, role: str, brief: str, turn: int,
             result: dict[str, Any] | None, messages: list[Message],
             triggers: list[Message], decisions: list[dict[str, Any]] | None = None,
             rounds: dict[str, dict[str, Any]] | None = None,
             peers: dict[str, dict[str, list[str]]] | None = None,
             elapsed_ms: int = 0) -> Turn:
    """A member turn's input built from trusted data (no validation)."""
    return _turn(task, member, role, brief, turn, result, messages, triggers,
                 [] if decisions is None else decisions, {} if rounds is None else rounds,
                 {} if peers is None else peers, elapsed_ms)
